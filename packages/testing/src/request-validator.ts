/**
 * DeepSeekRequestValidator: what DeepSeek's chat-completions API rejects with HTTP 400, checked on
 * every request the scripted model receives, so a compaction cut that would break a real session
 * breaks the test that made it.
 *
 * The request is first laid out as dsh's DeepSeek adapter puts it on the wire: an assistant
 * message becomes one message with `tool_calls` (and `reasoning_content` when it has reasoning);
 * a user message becomes its text (when it has text, or no tool results) followed by one `tool`
 * message per tool result. Then, as the API does:
 *
 * - a `tool` message must answer a call of the assistant message right before the run of tool
 *   messages it is in (same request), and only once;
 * - every call of an assistant message is answered before the next non-tool message, and none is
 *   left open at the end (no orphans either way);
 * - call ids are unique in a request;
 * - thinking mode: an assistant message with tool calls in the current turn (after the last
 *   `user` wire message) must carry its `reasoning_content` back, as the model produced it;
 * - an assistant message carries content or tool calls, and reasoning never rides on a user or
 *   tool message (the wire has no place for it: it would be lost silently).
 */
import type { ContentBlock, Message } from '@deepseek-ai/dsh-llm'

/** One message as dsh's DeepSeek adapter serializes it. */
export type WireMessage =
  | { readonly role: 'system' | 'user'; readonly index: number; readonly text: string }
  | { readonly role: 'assistant'; readonly index: number; readonly text: string; readonly reasoning: string; readonly calls: readonly string[] }
  | { readonly role: 'tool'; readonly index: number; readonly callId: string }

function textOf(blocks: readonly ContentBlock[]): string {
  return blocks.filter(block => block.type === 'text').map(block => block.text).join('')
}

/** The wire layout of a request (message `index` is the position in `options.messages`). */
export function wireLayout(messages: readonly Message[]): WireMessage[] {
  const wire: WireMessage[] = []
  for (const [index, message] of messages.entries()) {
    if (message.role === 'system') {
      wire.push({ role: 'system', index, text: textOf(message.content) })
      continue
    }
    if (message.role === 'assistant') {
      wire.push({
        role: 'assistant',
        index,
        text: textOf(message.content),
        reasoning: message.content.filter(block => block.type === 'reasoning').map(block => block.text).join(''),
        calls: message.content.flatMap(block => (block.type === 'tool-call' ? [block.id] : [])),
      })
      continue
    }
    const results = message.content.flatMap(block => (block.type === 'tool-result' ? [block.toolCallId] : []))
    const text = textOf(message.content)
    if (text.length > 0 || results.length === 0) wire.push({ role: 'user', index, text })
    for (const callId of results) wire.push({ role: 'tool', index, callId })
  }
  return wire
}

/** What the model said alongside its calls, so the validator can check it comes back intact. */
export interface ReasoningLedger {
  /** Reasoning text the model streamed with the assistant message that made this call. */
  reasoningFor(callId: string): string | undefined
}

/** Every reason DeepSeek would refuse this request; empty when it would accept it. */
export function deepSeekRequestProblems(messages: readonly Message[], ledger?: ReasoningLedger): string[] {
  const problems: string[] = []
  for (const [index, message] of messages.entries()) {
    if (message.role !== 'assistant' && message.content.some(block => block.type === 'reasoning')) {
      problems.push(`message ${index} (${message.role}) carries reasoning, which the wire cannot represent`)
    }
  }
  const wire = wireLayout(messages)
  let lastUser = -1
  for (const [position, entry] of wire.entries()) if (entry.role === 'user') lastUser = position
  const seen = new Set<string>()
  let open = new Set<string>()
  let caller: number | undefined
  for (const [position, entry] of wire.entries()) {
    if (entry.role === 'tool') {
      if (!open.delete(entry.callId)) {
        problems.push(caller === undefined
          ? `message ${entry.index}: tool result ${entry.callId} follows no assistant message with tool calls`
          : `message ${entry.index}: tool result ${entry.callId} answers no open call of the preceding assistant message (message ${caller})`)
      }
      continue
    }
    if (open.size > 0) {
      problems.push(`message ${entry.index} (${entry.role}): ${open.size} tool call(s) of message ${caller} not answered before it (${[...open].join(', ')})`)
    }
    open = new Set()
    caller = undefined
    if (entry.role !== 'assistant') continue
    if (entry.text.length === 0 && entry.calls.length === 0 && entry.reasoning.length === 0) {
      problems.push(`message ${entry.index}: assistant message with neither content nor tool calls`)
    }
    for (const id of entry.calls) {
      if (seen.has(id)) problems.push(`message ${entry.index}: tool call id ${id} appears twice in the request`)
      seen.add(id)
      open.add(id)
    }
    if (entry.calls.length > 0) caller = entry.index
    if (position > lastUser && entry.calls.length > 0 && ledger !== undefined) {
      const produced = entry.calls.map(id => ledger.reasoningFor(id)).find(text => text !== undefined)
      if (produced !== undefined && entry.reasoning !== produced) {
        problems.push(`message ${entry.index}: assistant tool-call message of the current turn ${entry.reasoning.length === 0 ? 'lacks' : 'alters'} its reasoning_content`)
      }
    }
  }
  if (open.size > 0) problems.push(`request ends with ${open.size} unanswered tool call(s) of message ${caller} (${[...open].join(', ')})`)
  return problems
}

/** Counts for the whole process (a test run's setup file reads and resets them per test). */
export interface ValidationTally {
  /** Requests checked. */
  validated: number
  /** Requests refused, with their problems. */
  readonly refused: Array<{ readonly purpose: string; readonly problems: readonly string[] }>
}

export const requestValidation: ValidationTally = { validated: 0, refused: [] }

/** Check one request, count it, and remember a refusal. Returns its problems. */
export function validateRequest(purpose: string, messages: readonly Message[], ledger?: ReasoningLedger): string[] {
  const problems = deepSeekRequestProblems(messages, ledger)
  requestValidation.validated += 1
  if (problems.length > 0) requestValidation.refused.push({ purpose, problems })
  return problems
}
