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

/** A time bound: epoch milliseconds, a finite non-negative number (NaN, strings and objects are refused). */
export function assertTime(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalid(`${label} must be epoch milliseconds (a finite non-negative number)`)
  return value
}

/** Longest list of names a filter accepts (source kinds, tool names). */
export const MAX_FILTER_NAMES = 64

/** A short list of short names, or a typed error. */
export function assertNames(value: unknown, label: string): readonly string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) throw invalid(`${label} must be an array of strings`)
  if (value.length > MAX_FILTER_NAMES) throw invalid(`${label} has more than ${MAX_FILTER_NAMES} entries`)
  for (const name of value) if (typeof name !== 'string' || name.length === 0 || name.length > 200) throw invalid(`${label} entries must be non-empty strings of at most 200 characters`)
  return value as string[]
}
