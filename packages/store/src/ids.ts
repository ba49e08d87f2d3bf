/**
 * Identifiers a model can type. A session gets a short tag derived from its id, so every id below
 * is a function of dsh's own data: rebuilding the store from the log reproduces them.
 *
 * Tags are 6 base32 characters (30 bits): two of ~39k sessions likely share one. The store detects
 * that and gives the later session the next longer prefix of its own digest (7, 8, … characters),
 * so a collision costs a character, never a refused session. Which session keeps the short tag
 * follows registration order (a rebuild registers sessions oldest first).
 *
 * - shadow id:     `<tag>.<seq>`        e.g. `k7q2mz.41`   one stored message
 * - checkpoint id: `<tag>.c<ordinal>`   e.g. `k7q2mz.c3`   one compaction pass of that session
 */
import { createHash } from 'node:crypto'
import { invalid } from './errors.ts'

const BASE32 = 'abcdefghijkmnpqrstuvwxyz23456789' // no l, o, 0, 1: unambiguous when read back
export const TAG_LENGTH = 6
/** Longest tag a collision can extend to. */
export const MAX_TAG_LENGTH = 12

/** `length` characters of base32 over sha256(sessionId); six unless a collision asks for more. */
export function sessionTag(sessionId: string, length = TAG_LENGTH): string {
  const digest = createHash('sha256').update(sessionId).digest()
  let tag = ''
  for (let index = 0; index < length; index += 1) tag += BASE32[digest[index]! % 32]
  return tag
}

/** The tags a session may get, shortest first: the next one only when every shorter is taken. */
export function tagCandidates(sessionId: string): string[] {
  const full = sessionTag(sessionId, MAX_TAG_LENGTH)
  return Array.from({ length: MAX_TAG_LENGTH - TAG_LENGTH + 1 }, (_, index) => full.slice(0, TAG_LENGTH + index))
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Why a string cannot be an id in the store, or undefined when it can. SQLite stores text as UTF-8,
 * where a lone surrogate becomes U+FFFD: two ids differing only there would be one session. NUL
 * ends a C string. Both are refused rather than silently merged.
 */
export function idProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain NUL'
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (it has a lone surrogate, which the store cannot keep apart from U+FFFD)'
  return undefined
}

export function shadowId(tag: string, seq: number): string {
  return `${tag}.${seq}`
}

export function checkpointId(tag: string, ordinal: number): string {
  return `${tag}.c${ordinal}`
}

const SHADOW_ID = /^([a-z2-9]{6,12})\.(\d{1,12})$/
const CHECKPOINT_ID = /^([a-z2-9]{6,12})\.c(\d{1,9})$/

export function parseShadowId(value: unknown): { tag: string; seq: number } {
  if (typeof value !== 'string') throw invalid(`shadow id must be a string like "k7q2mz.41", got ${typeof value}`)
  const match = SHADOW_ID.exec(value.trim())
  if (match === null) throw invalid(`not a shadow id: ${JSON.stringify(value.slice(0, 80))} (expected "<tag>.<seq>", e.g. "k7q2mz.41")`)
  return { tag: match[1]!, seq: Number(match[2]) }
}

export function isShadowId(value: unknown): value is string {
  return typeof value === 'string' && SHADOW_ID.test(value)
}

export function isCheckpointId(value: unknown): value is string {
  return typeof value === 'string' && CHECKPOINT_ID.test(value)
}

export function parseCheckpointTag(value: string): string | undefined {
  return CHECKPOINT_ID.exec(value)?.[1]
}
