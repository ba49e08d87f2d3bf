/**
 * Position tracking over a dsh session log: which turn and step each event falls in, and which
 * tool produced each tool result. A pure fold, usable live (event by event) or over a whole log.
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { CAPTURED_EVENT_TYPES, type CapturedEvent } from '@dsh-shadow/store'

export interface CaptureCursor {
  turn: number | null
  step: number | null
  /** Tool name by call id, for calls whose result has not arrived yet. */
  readonly toolNames: Map<string, string>
}

export function newCursor(): CaptureCursor {
  return { turn: null, step: null, toolNames: new Map() }
}

/** Advance the cursor past one event. Returns the tool name for a tool result, when known. */
export function advance(cursor: CaptureCursor, event: SessionEvent): string | null {
  switch (event.type) {
    case 'turn/start':
      cursor.turn = event.data.turn
      cursor.step = null
      return null
    case 'turn/end':
      cursor.turn = null
      cursor.step = null
      return null
    case 'step/start':
      cursor.turn = event.data.turn
      cursor.step = event.data.step
      return null
    case 'assistant/message':
      for (const block of event.data.message.content) {
        if (block.type === 'tool-call') cursor.toolNames.set(block.id, block.name)
      }
      return null
    case 'tool/result': {
      const callId = event.data.message.source.callId
      const name = cursor.toolNames.get(callId) ?? null
      cursor.toolNames.delete(callId)
      return name
    }
    default:
      return null
  }
}

/** Whether the store keeps this event (a model-visible message or a request header). */
export function isCapturable(event: SessionEvent): boolean {
  return CAPTURED_EVENT_TYPES.has(event.type)
}

/** Serialize one capturable event with its position. */
export function captureEvent(sessionId: string, event: SessionEvent, cursor: Pick<CaptureCursor, 'turn' | 'step'>, toolName: string | null): CapturedEvent {
  return {
    sessionId,
    seq: event.seq,
    type: event.type as CapturedEvent['type'],
    time: event.time,
    turn: cursor.turn,
    step: cursor.step,
    toolName,
    eventJson: JSON.stringify(event),
  }
}

/**
 * Fold a whole log: every capturable event with its position, and the cursor at the end. With
 * `only`, just those seqs are captured (serialized): the fold is cheap, each event's JSON is not.
 */
export function captureLog(sessionId: string, events: readonly SessionEvent[], only?: ReadonlySet<number>): { captured: CapturedEvent[]; cursor: CaptureCursor } {
  const cursor = newCursor()
  const captured: CapturedEvent[] = []
  for (const event of events) {
    const toolName = advance(cursor, event)
    if (isCapturable(event) && (only === undefined || only.has(event.seq))) captured.push(captureEvent(sessionId, event, cursor, toolName))
  }
  return { captured, cursor }
}
