/**
 * Identifiers a model can type. A session gets a short tag derived from its id, so every id below
 * is a pure function of dsh's own data: rebuilding the store from the log reproduces them.
 *
 * - shadow id:     `<tag>.<seq>`        e.g. `k7q2mz.41`   one stored message
 * - checkpoint id: `<tag>.c<ordinal>`   e.g. `k7q2mz.c3`   one compaction pass of that session
 */
import { createHash } from 'node:crypto'
import { invalid } from './errors.ts'

const BASE32 = 'abcdefghijkmnpqrstuvwxyz23456789' // no l, o, 0, 1: unambiguous when read back
export const TAG_LENGTH = 6

/** Six characters of base32 over sha256(sessionId). */
export function sessionTag(sessionId: string): string {
  const digest = createHash('sha256').update(sessionId).digest()
  let tag = ''
  for (let index = 0; index < TAG_LENGTH; index += 1) tag += BASE32[digest[index]! % 32]
  return tag
}

export function shadowId(tag: string, seq: number): string {
  return `${tag}.${seq}`
}

export function checkpointId(tag: string, ordinal: number): string {
  return `${tag}.c${ordinal}`
}

const SHADOW_ID = /^([a-z2-9]{6})\.(\d{1,12})$/
const CHECKPOINT_ID = /^([a-z2-9]{6})\.c(\d{1,9})$/

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
