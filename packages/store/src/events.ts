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

/** Convert one captured event to a store row. */
export function rowFromCaptured(captured: CapturedEvent): ShadowMessageInput {
  const event = JSON.parse(captured.eventJson) as { data?: Record<string, unknown> }
  const data = event.data ?? {}
  let role: ShadowRole
  let sourceKind: string
  let text: string
  let toolName: string | null = null
  let callId: string | null = null
  switch (captured.type) {
    case 'user/message': {
      const message = data as MessageLike
      role = 'user'
      sourceKind = sourceKindOf(message.source, 'user')
      text = renderBlocks(message.content)
      break
    }
    case 'assistant/message': {
      const message = (data['message'] ?? {}) as MessageLike
      role = 'assistant'
      sourceKind = message.source?.kind ?? 'model'
      text = renderBlocks(message.content)
      const calls = (message.content ?? []).filter(block => block.type === 'tool-call')
      if (calls.length > 0) {
        toolName = calls.map(block => block.name ?? '?').join(' ')
        callId = calls.map(block => block.id ?? '?').join(' ')
      }
      break
    }
    case 'tool/result': {
      const message = (data['message'] ?? {}) as MessageLike
      role = 'tool'
      sourceKind = message.source?.kind ?? 'tool'
      text = renderBlocks(message.content)
      const result = (message.content ?? []).find(block => block.type === 'tool-result')
      callId = result?.toolCallId ?? null
      toolName = captured.toolName
      break
    }
    case 'request/header': {
      const header = (data['header'] ?? {}) as { system?: string; tools?: Array<{ name?: string; description?: string }> }
      role = 'system'
      sourceKind = 'request/header'
      const tools = (header.tools ?? []).map(tool => `- ${tool.name ?? '?'}: ${tool.description ?? ''}`)
      text = [header.system ?? '', tools.length === 0 ? '' : `Tools:\n${tools.join('\n')}`].filter(part => part.length > 0).join('\n\n')
      break
    }
  }
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
