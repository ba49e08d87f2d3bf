/**
 * From dsh session-log events to shadow rows. Structural: it reads the lossless JSON of dsh's
 * `user/message`, `assistant/message`, `tool/result` and `request/header` events without
 * importing dsh, so the store (and its worker) can convert and render on its own.
 */
import type { ShadowEventType, ShadowMessageInput, ShadowRole } from './types.ts'

/** One captured log event, as a writer hands it over: the serialized event plus its position. */
export interface CapturedEvent {
  readonly sessionId: string
  readonly seq: number
  readonly type: ShadowEventType
  readonly time: number
  readonly turn: number | null
  readonly step: number | null
  /** For a tool result: the name of the tool that produced it, when the writer knows it. */
  readonly toolName: string | null
  /** `JSON.stringify(event)` of the dsh log event. */
  readonly eventJson: string
}

export const CAPTURED_EVENT_TYPES: ReadonlySet<string> = new Set<ShadowEventType>(['user/message', 'assistant/message', 'tool/result', 'request/header'])

interface Block {
  readonly type: string
  readonly text?: string
  readonly name?: string
  readonly id?: string
  readonly arguments?: string
  readonly toolCallId?: string
  readonly content?: readonly Block[]
  readonly isError?: boolean
}

interface MessageLike {
  readonly content?: readonly Block[]
  readonly source?: { readonly kind?: string; readonly plugin?: string }
}

/** `user`, `model`, `tool`, `shadow-context`…; a plugin source names its plugin: `plugin:compact`. */
function sourceKindOf(source: MessageLike['source'], fallback: string): string {
  const kind = source?.kind ?? fallback
  return kind === 'plugin' && typeof source?.plugin === 'string' ? `plugin:${source.plugin}` : kind
}

/** Plain text of content blocks, the way a transcript shows them. */
export function renderBlocks(blocks: readonly Block[] | undefined): string {
  if (!Array.isArray(blocks)) return ''
  const parts: string[] = []
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        parts.push(block.text ?? '')
        break
      case 'tool-call':
        parts.push(`[tool call ${block.name ?? '?'}] ${block.arguments ?? ''}`)
        break
      case 'tool-result':
        parts.push(`${block.isError === true ? '[error] ' : ''}${renderBlocks(block.content)}`)
        break
      case 'image':
        parts.push('[image]')
        break
      // reasoning is private to the step; it is stored in the event JSON but not rendered
      default:
        break
    }
  }
  return parts.join('\n')
}

/** Heuristic token price: ceil(chars / 4) per text plus a small per-message overhead. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4
}

/** Role, source, text and call of one event's data, by its type. */
function eventRow(type: ShadowEventType, data: Record<string, unknown>, resultToolName: string | null): { role: ShadowRole; sourceKind: string; text: string; toolName: string | null; callId: string | null } {
  switch (type) {
    case 'user/message': {
      const message = data as MessageLike
      return { role: 'user', sourceKind: sourceKindOf(message.source, 'user'), text: renderBlocks(message.content), toolName: null, callId: null }
    }
    case 'assistant/message': {
      const message = (data['message'] ?? {}) as MessageLike
      const calls = (message.content ?? []).filter(block => block.type === 'tool-call')
      return {
        role: 'assistant', sourceKind: message.source?.kind ?? 'model', text: renderBlocks(message.content),
        toolName: calls.length === 0 ? null : calls.map(block => block.name ?? '?').join(' '),
        callId: calls.length === 0 ? null : calls.map(block => block.id ?? '?').join(' '),
      }
    }
    case 'tool/result': {
      const message = (data['message'] ?? {}) as MessageLike
      const result = (message.content ?? []).find(block => block.type === 'tool-result')
      return { role: 'tool', sourceKind: message.source?.kind ?? 'tool', text: renderBlocks(message.content), toolName: resultToolName, callId: result?.toolCallId ?? null }
    }
    case 'request/header': {
      const header = (data['header'] ?? {}) as { system?: string; tools?: Array<{ name?: string; description?: string }> }
      const tools = (header.tools ?? []).map(tool => `- ${tool.name ?? '?'}: ${tool.description ?? ''}`)
      const text = [header.system ?? '', tools.length === 0 ? '' : `Tools:\n${tools.join('\n')}`].filter(part => part.length > 0).join('\n\n')
      return { role: 'system', sourceKind: 'request/header', text, toolName: null, callId: null }
    }
  }
}

/** How many strings of its own a rendering of these blocks joins (a tool result's nested blocks count each). */
function pieces(blocks: readonly Block[] | undefined): number {
  if (!Array.isArray(blocks)) return 0
  let count = 0
  for (const block of blocks) count += block.type === 'tool-result' ? pieces(block.content) : 1
  return count
}

/**
 * The text a parsed log event renders to, as its row keeps it, when it joins two or more strings
 * of the event (blocks, or a header's prompt and tools); undefined for one of a single string
 * (its text is that string, which redaction sees whole anyway) and for a document that is no
 * captured event (a row appended with its own text).
 */
export function joinedText(event: unknown): string | undefined {
  if (typeof event !== 'object' || event === null) return undefined
  const { type, data } = event as { type?: unknown; data?: unknown }
  if (typeof type !== 'string' || !CAPTURED_EVENT_TYPES.has(type)) return undefined
  const fields = typeof data === 'object' && data !== null ? data as Record<string, unknown> : {}
  try {
    const message = (type === 'user/message' ? fields : fields['message'] ?? {}) as MessageLike
    if (type !== 'request/header' && pieces(message.content) < 2) return undefined
    return eventRow(type as ShadowEventType, fields, null).text
  } catch {
    // a document shaped unlike dsh's events (content not blocks) renders to nothing
    return undefined
  }
}

/** Convert one captured event to a store row. */
export function rowFromCaptured(captured: CapturedEvent): ShadowMessageInput {
  const event = JSON.parse(captured.eventJson) as { data?: Record<string, unknown> }
  const { role, sourceKind, text, toolName, callId } = eventRow(captured.type, event.data ?? {}, captured.toolName)
  return {
    sessionId: captured.sessionId,
    seq: captured.seq,
    eventType: captured.type,
    role,
    sourceKind,
    turn: captured.turn,
    step: captured.step,
    toolName,
    callId,
    time: captured.time,
    eventJson: captured.eventJson,
    text,
    tokens: estimateTokens(text),
  }
}
