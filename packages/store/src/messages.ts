/** One message row: validated, redacted and analyzed for the indexes, ready for a backend. */
import { createHash } from 'node:crypto'
import { indexViews } from './analyzer.ts'
import { MAX_TIME, referredDays } from './days.ts'
import type { IndexViews, PreparedMessage } from './backend.ts'
import { invalid } from './errors.ts'
import { shadowId } from './ids.ts'
import { joinedText } from './events.ts'
import type { Redactor } from './redact.ts'
import type { ShadowMessageInput } from './types.ts'
import { assertOptionalInt, assertSeq, assertString, EVENT_TYPES, MAX_CALL_ID_CHARS, optionalColumnText, ROLES } from './validate.ts'

/** What the indexes hold of a stored text: the two analyzer views and the days it refers to. */
export function messageViews(text: string, time: number): IndexViews & { readonly days: readonly number[] } {
  return { ...indexViews(text), days: referredDays(text, time) }
}

/**
 * A log event's JSON as a redacting store keeps it: every string redacted, and what the text the
 * event renders to gives away taken out too (a secret's name and its value in two content blocks
 * are one secret in the row's text, where blocks are joined by a newline).
 */
export function redactEventJson(eventJson: string, redactor: Redactor): string {
  return redactor.json(eventJson, parsed => {
    const text = joinedText(parsed)
    return text === undefined ? [] : redactor.removed(text)
  })
}

export function hashEventJson(eventJson: string): string {
  return createHash('sha1').update(eventJson).digest('hex')
}

/**
 * The hash a row keeps of its log event: of the event as stored, so redacted when the store
 * redacts. A hash of the original next to its redacted JSON would let a dictionary recover a
 * short secret; this one says nothing the stored row does not. Verification redacts the log
 * event the same way and compares (redaction is deterministic). Without redaction: sha1 of the event.
 */
export function rowHash(eventJson: string, redactor: Redactor | undefined): string {
  return hashEventJson(redactor === undefined ? eventJson : redactEventJson(eventJson, redactor))
}

/** The checked fields of one row: what `prepareMessage` refuses, without analysis (a batch checks every row before it writes). */
export function checkMessage(input: ShadowMessageInput): { sessionId: string; seq: number; turn: number | null; step: number | null; toolName: string | null; callId: string | null } {
  if (typeof input !== 'object' || input === null) throw invalid('message must be an object')
  const sessionId = assertString(input.sessionId, 'sessionId')
  const seq = assertSeq(input.seq, 'seq')
  if (!EVENT_TYPES.has(input.eventType)) throw invalid(`eventType must be one of ${[...EVENT_TYPES].join(', ')}`)
  if (!ROLES.has(input.role)) throw invalid(`role must be one of ${[...ROLES].join(', ')}`)
  assertString(input.sourceKind, 'sourceKind', 200)
  if (typeof input.time !== 'number' || !Number.isFinite(input.time) || input.time < 0 || input.time > MAX_TIME) throw invalid('time must be epoch milliseconds')
  if (typeof input.eventJson !== 'string' || input.eventJson.length === 0) throw invalid('eventJson must be a non-empty string')
  if (typeof input.text !== 'string') throw invalid('text must be a string')
  if (typeof input.tokens !== 'number' || !Number.isSafeInteger(input.tokens) || input.tokens < 0) throw invalid('tokens must be a non-negative integer')
  const callId = optionalColumnText(input.callId, 'callId')
  // each call id is a btree key on PostgreSQL (a tool result's whole, an assistant message's calls one by one)
  if (callId !== null && (input.role === 'tool' ? [callId] : callId.split(' ')).some(id => id.length > MAX_CALL_ID_CHARS)) {
    throw invalid(`callId: a call id is longer than ${MAX_CALL_ID_CHARS} characters`)
  }
  return { sessionId, seq, turn: assertOptionalInt(input.turn, 'turn'), step: assertOptionalInt(input.step, 'step'), toolName: optionalColumnText(input.toolName, 'toolName'), callId }
}

/** Derive one row without writing it, from its fields as `checkMessage` returned them (a batch checks every row first). */
export function prepareMessage(input: ShadowMessageInput, checked: ReturnType<typeof checkMessage>, tag: string, redactor: Redactor | undefined): PreparedMessage {
  const { sessionId, seq, turn, step, toolName, callId } = checked
  const eventJson = redactor === undefined ? input.eventJson : redactEventJson(input.eventJson, redactor)
  const hash = hashEventJson(eventJson)
  const text = redactor === undefined ? input.text : redactor.text(input.text)
  const views = messageViews(text, Math.floor(input.time))
  return {
    sessionId,
    seq,
    eventType: input.eventType,
    role: input.role,
    sourceKind: input.sourceKind,
    turn,
    step,
    toolName,
    callId,
    time: Math.floor(input.time),
    eventJson,
    text,
    tokens: input.tokens,
    tag,
    shadowId: shadowId(tag, seq),
    hash,
    words: views.words,
    grams: views.grams,
    days: views.days,
  }
}
