/** Input checks shared by the store's entry points: a bad value gets a typed INVALID error. */
import { invalid } from './errors.ts'
import { idProblem } from './ids.ts'
import type { ShadowRole } from './types.ts'

export const EVENT_TYPES = new Set(['user/message', 'assistant/message', 'tool/result', 'request/header'])
export const ROLES = new Set<ShadowRole>(['system', 'user', 'assistant', 'tool'])
export const MAX_ID_CHARS = 512

export function assertString(value: unknown, label: string, max = MAX_ID_CHARS): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${label} must be a non-empty string`)
  if (value.length > max) throw invalid(`${label} is longer than ${max} characters`)
  const problem = idProblem(value)
  if (problem !== undefined) throw invalid(`${label} ${problem}`)
  return value
}

export function assertSeq(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(`${label} must be a non-negative integer`)
  return value
}

export function assertOptionalInt(value: unknown, label: string): number | null {
  if (value === null || value === undefined) return null
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(`${label} must be an integer or null`)
  return value
}

export function optionalText(value: unknown, label: string): string | null {
  if (value === null || value === undefined) return null
  if (typeof value !== 'string') throw invalid(`${label} must be a string or null`)
  return value
}
