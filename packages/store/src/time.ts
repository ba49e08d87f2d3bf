/** Time bounds a model or a user can write: absolute ISO 8601, or relative like "2h ago". */
import { MAX_TIME } from './days.ts'
import { invalid } from './errors.ts'

const UNIT_MS: Record<string, number> = {
  s: 1_000, sec: 1_000, secs: 1_000, second: 1_000, seconds: 1_000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hr: 3_600_000, hrs: 3_600_000, hour: 3_600_000, hours: 3_600_000,
  d: 86_400_000, day: 86_400_000, days: 86_400_000,
  w: 604_800_000, week: 604_800_000, weeks: 604_800_000,
}

const RELATIVE = /^(\d{1,6}(?:\.\d{1,3})?)\s*([a-z]+)\s+ago$/i
const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/

/** Parse one time bound to epoch milliseconds. `now` anchors relative forms. */
export function parseTimeBound(value: unknown, now: number, label = 'time'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || value > MAX_TIME) throw invalid(`${label} must be a non-negative epoch millisecond number a Date holds (at most ${MAX_TIME})`)
    return Math.floor(value)
  }
  if (typeof value !== 'string') throw invalid(`${label} must be an ISO time ("2026-11-30T09:00:00Z") or relative ("2h ago")`)
  const text = value.trim()
  if (text === 'now') return now
  const relative = RELATIVE.exec(text)
  if (relative !== null) {
    const unit = UNIT_MS[relative[2]!.toLowerCase()]
    if (unit === undefined) throw invalid(`${label}: unknown unit "${relative[2]}" (use s, m, h, d or w)`)
    return Math.floor(now - Number(relative[1]) * unit)
  }
  if (ISO.test(text)) {
    const parsed = Date.parse(text)
    if (Number.isFinite(parsed)) return parsed
  }
  throw invalid(`${label}: cannot read ${JSON.stringify(text.slice(0, 60))} as a time (use ISO 8601 like "2026-11-30T09:00:00Z" or relative like "2h ago")`)
}

/** Validate an optional [from, to] pair; throws when inverted. */
export function parseTimeRange(from: unknown, to: unknown, now: number): { timeFrom?: number; timeTo?: number } {
  const timeFrom = from === undefined || from === null ? undefined : parseTimeBound(from, now, 'since')
  const timeTo = to === undefined || to === null ? undefined : parseTimeBound(to, now, 'until')
  if (timeFrom !== undefined && timeTo !== undefined && timeFrom > timeTo) {
    throw invalid(`time range is inverted: since ${new Date(timeFrom).toISOString()} is after until ${new Date(timeTo).toISOString()}`)
  }
  return { ...(timeFrom === undefined ? {} : { timeFrom }), ...(timeTo === undefined ? {} : { timeTo }) }
}

/**
 * A time as every Shadow Context surface writes it: `2026-11-30 09:12:05` (UTC, seconds). Checkpoint
 * footers embed it, so its shape is part of their frozen bytes.
 */
export function formatUtc(time: number): string {
  return new Date(time).toISOString().replace('T', ' ').slice(0, 19)
}
