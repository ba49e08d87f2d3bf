/** What a session index notes of each doc (session-index.ts `flags`, `role`) besides its keys. */
import type { ShadowMessage, ShadowRole } from '../types.ts'
import { SHORT_REPLY_CHARS } from '../search/values.ts'

/** A user or assistant message that asks (a short reply may answer it: search/units.ts). */
export const ASKS = 1
/** A short message without a call: a reply that may answer a question. */
export const SHORT_REPLY = 2
/** Lowercasing changed its text's length: the scan places no CJK match in it. */
export const LOWER_SHIFT = 4
/** Not in the index lists (its text was dropped by retention). */
export const UNLISTED = 8
/** Holds one call id (no space): a call or result that folds with its partner. */
export const SINGLE_CALL = 16
/** Its anchors may not hold every run of anchor characters of its text (analyzer.ts anchorView). */
export const ANCHORS_PARTIAL = 32

export const ROLE_CODES: Readonly<Record<ShadowRole, number>> = { user: 1, assistant: 2, tool: 3, system: 4 }

/** A question a short reply may answer (units.ts). */
const QUESTION = /[?？]|吗|呢/u

/** A row's ASKS, SHORT_REPLY and SINGLE_CALL flags (the others come from its analysis). */
export function rowFlags(row: ShadowMessage): number {
  let flags = 0
  if ((row.role === 'user' || row.role === 'assistant') && QUESTION.test(row.text)) flags |= ASKS
  if (row.callId === null && row.text.length <= SHORT_REPLY_CHARS && row.text.trim().length > 0) flags |= SHORT_REPLY
  if (row.callId !== null && !row.callId.includes(' ')) flags |= SINGLE_CALL
  return flags
}
