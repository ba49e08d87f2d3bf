/** Input checks shared by the store's entry points: a bad value gets a typed INVALID error. */
import { MAX_TIME } from './days.ts'
import { invalid } from './errors.ts'
import { idProblem } from './ids.ts'
import type { ShadowRole } from './types.ts'

export const EVENT_TYPES = new Set(['user/message', 'assistant/message', 'tool/result', 'request/header'])
export const ROLES = new Set<ShadowRole>(['system', 'user', 'assistant', 'tool'])
export const MAX_ID_CHARS = 512
/** A call id is a btree key beside its session id on PostgreSQL (~2.7 kB a key): 256 characters at most. */
export const MAX_CALL_ID_CHARS = 256
/** A workspace is a directory: PATH_MAX characters at most (what a scope may name). */
export const MAX_WORKSPACE_CHARS = 4096

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

/**
 * A time: epoch milliseconds, a finite non-negative number a Date holds (NaN, strings, objects and
 * 1e300 are refused: PostgreSQL's bigint column cannot compare with them).
 */
export function assertTime(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_TIME) throw invalid(`${label} must be epoch milliseconds (a finite non-negative number, at most ${MAX_TIME})`)
  return value
}

/** A non-negative integer or null (a count, a seq). */
export function assertOptionalSeq(value: unknown, label: string): number | null {
  return value === null || value === undefined ? null : assertSeq(value, label)
}

/** An identity-like string (a workspace) or null: refused when the store could not keep it apart from another. */
export function optionalId(value: unknown, label: string, max = MAX_ID_CHARS): string | null {
  return value === null || value === undefined ? null : assertString(value, label, max)
}

export function assertArray(value: unknown, label: string): readonly unknown[] {
  if (!Array.isArray(value)) throw invalid(`${label} must be an array`)
  return value
}

/**
 * Free text as a text column keeps it, alike on both backends: a NUL becomes U+FFFD (SQLite reads
 * a NUL as the end of the text, PostgreSQL refuses it), as a lone surrogate already does in UTF-8.
 * For model-given metadata (a tool name, a call id, a recall query): the exact event keeps the original.
 */
export function columnText(value: string): string {
  return value.replaceAll('\u0000', '\uFFFD').toWellFormed()
}

export function optionalColumnText(value: unknown, label: string, max?: number): string | null {
  const text = optionalText(value, label)
  if (text !== null && max !== undefined && text.length > max) throw invalid(`${label} is longer than ${max} characters`)
  return text === null ? null : columnText(text)
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
