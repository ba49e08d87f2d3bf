/**
 * Superseded values: when several hits state a value for the thing a question names ("the request
 * timeout is 30s", later "make it 45"), they are one history, not rivals. A statement is a value
 * (a number with an optional unit) near query terms; the terms it sits near are its key. A short
 * reply with a value and no key of its own inherits the key of the question it answers. No names
 * are special: the key is whatever identifiers or words the query and the text share.
 * Plain functions over candidates; backend-neutral.
 */
import type { TermScan } from './passage.ts'
import { firstAtOrAbove } from '../sorted.ts'

/** A value and a key term count as one statement within this many characters. */
export const KEY_DISTANCE = 80
/** A reply this short answers the message before it (and inherits its key). */
export const SHORT_REPLY_CHARS = 280

export const ZH_DIGITS = '零〇一二两三四五六七八九十百千'
const UNITS = 'ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|kb|mb|gb|tb|k|%|x|px|rps|qps|connections?|workers?|threads?|retries|times|毫秒|秒钟?|分钟|小时|天|个|条|次|倍|兆|台'
const VALUE = new RegExp(
  `(?<![\\p{L}\\p{N}_.\\-/])(\\d+(?:\\.\\d+)?|[${ZH_DIGITS}]{1,6}(?=(?:${UNITS})))\\s?(${UNITS})?(?![\\p{L}\\p{N}_])`,
  'giu',
)

/** Words that ask about an earlier state, not the current one. */
const PAST_CUE = /\b(?:first|originally|original|initially|initial|before|previous|previously|old|older|earlier|used\s+to|at\s+first|changed?\s+from)\b|一开始|最初|最早|之前|原来|原先|以前|起初|旧的/iu

export function asksForEarlierValue(query: string): boolean {
  return PAST_CUE.test(query)
}

export interface ValueStatement {
  /** The value as written, normalized (lowercase, no inner space). */
  readonly value: string
  /** Offset of the value in the text. */
  readonly at: number
  /** Query terms (indexes) within KEY_DISTANCE of the value. */
  readonly key: ReadonlySet<number>
}

/** Units spelled out, by their short form (made once: a resident build normalizes every value of a session). */
const CANONICAL_UNITS: Readonly<Record<string, string>> = {
  sec: 's', secs: 's', second: 's', seconds: 's', 秒: 's', 秒钟: 's',
  min: 'm', mins: 'm', minute: 'm', minutes: 'm', 分钟: 'm',
  hr: 'h', hrs: 'h', hour: 'h', hours: 'h', 小时: 'h',
  millisecond: 'ms', milliseconds: 'ms', 毫秒: 'ms', day: 'd', days: 'd', 天: 'd',
}

function normalizeValue(number: string, unit: string | undefined): string {
  const u = (unit ?? '').toLowerCase()
  return `${number}${CANONICAL_UNITS[u] ?? u}`
}

/** A value of a text: where it starts, and its normalized form. */
export interface ValueMatch {
  readonly at: number
  readonly value: string
}

/**
 * Every value of a text, as VALUE reads the whole text (a value inside an identifier, a path or
 * a version is none): what a resident index keeps per message, so a statement is found without
 * running the pattern again.
 */
export function valueMatches(text: string): ValueMatch[] {
  const found: ValueMatch[] = []
  for (const match of text.matchAll(VALUE)) found.push({ at: match.index, value: normalizeValue(match[1]!, match[2]) })
  return found
}

/** VALUE tried at one position only. */
const VALUE_AT = new RegExp(VALUE.source, 'iuy')

/**
 * `valueMatches(text)`, the pattern tried only where a value can start: `starts` (ascending, the
 * first `count`) must hold every digit of the text (ASCII or ZH_DIGITS) that does not follow
 * another (a value starts a run of them: VALUE looks behind for letters and digits). The pattern
 * then runs a few times per text, not at each of its characters.
 */
export function valueMatchesAt(text: string, starts: ArrayLike<number>, count: number): ValueMatch[] {
  const found: ValueMatch[] = []
  let end = 0
  for (let index = 0; index < count; index += 1) {
    const at = starts[index]!
    // the whole-text scan resumes after a match: a start inside one is not tried
    if (at < end) continue
    VALUE_AT.lastIndex = at
    const match = VALUE_AT.exec(text)
    if (match === null) continue
    found.push({ at, value: normalizeValue(match[1]!, match[2]) })
    end = VALUE_AT.lastIndex
  }
  return found
}

/**
 * The values of the text near the scan's matches: those `valueMatches` finds that start within
 * KEY_DISTANCE (and a token's reach) of a match. Without the list the pattern runs on those
 * stretches only (work bounded by the matches, not the text), on the whole text, so each value
 * reads what stands before and after it as `valueMatches` does.
 */
function valuesNear(text: string, positions: TermScan['positions'], values: readonly ValueMatch[] | undefined): ValueMatch[] {
  const windows: Array<{ from: number; to: number }> = []
  for (const position of positions) {
    let from = Math.max(0, position.at - KEY_DISTANCE - 12)
    const to = Math.min(text.length, position.at + position.length + KEY_DISTANCE + 12)
    const last = windows.at(-1)
    // within the last window already: it grows (its start stays; walking back to a boundary changes nothing)
    if (last !== undefined && from <= last.to) {
      last.to = Math.max(last.to, to)
      continue
    }
    // a window starts on a token boundary, so a number before it is not left out
    const floor = from - 64
    while (from > 0 && from > floor && tokenChar(text, from - 1)) from -= 1
    if (last !== undefined && from <= last.to) last.to = Math.max(last.to, to)
    else windows.push({ from, to })
  }
  const near: ValueMatch[] = []
  if (values !== undefined) {
    let window = 0
    for (const value of values) {
      while (window < windows.length && windows[window]!.to <= value.at) window += 1
      if (window === windows.length) break
      if (value.at >= windows[window]!.from) near.push(value)
    }
    return near
  }
  const pattern = new RegExp(VALUE.source, VALUE.flags)
  for (const { from, to } of windows) {
    pattern.lastIndex = from
    for (let match = pattern.exec(text); match !== null && match.index < to; match = pattern.exec(text)) near.push({ at: match.index, value: normalizeValue(match[1]!, match[2]) })
  }
  return near
}

const TOKEN_CHAR = /[\p{L}\p{N}_.]/u

/** Whether text[at] is a letter, digit, `_` or `.` (ASCII by its code: the pattern for the rest). */
function tokenChar(text: string, at: number): boolean {
  const code = text.charCodeAt(at)
  if (code < 128) return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 46
  return TOKEN_CHAR.test(text[at]!)
}

/**
 * The statement of a text whose key weighs most: a value with query terms close by, in the same
 * line. Values inside identifiers, paths and versions are not values. `values`: the text's
 * `valueMatches`, when already known.
 */
export function bestStatement(text: string, scan: TermScan, weightOf: (term: number) => number, values?: readonly ValueMatch[]): ValueStatement | undefined {
  if (scan.positions.length === 0) return undefined
  const positions = scan.positions
  let best: { statement: ValueStatement; weight: number; distance: number } | undefined
  let low = 0
  let breaks: number[] | undefined
  for (const match of valuesNear(text, positions, values)) {
    const at = match.at
    while (low < positions.length && positions[low]!.at < at - KEY_DISTANCE) low += 1
    const key = new Set<number>()
    let distance = Number.POSITIVE_INFINITY
    for (let index = low; index < positions.length && positions[index]!.at <= at + KEY_DISTANCE; index += 1) {
      const position = positions[index]!
      breaks ??= lineBreaks(text)
      if (lineBreakBetween(breaks, Math.min(position.at, at), Math.max(position.at, at))) continue
      key.add(position.term)
      distance = Math.min(distance, Math.abs(position.at - at))
    }
    if (key.size === 0) continue
    let weight = 0
    for (const term of key) weight += weightOf(term)
    // the heaviest key wins; among equal keys the closest, then the later statement
    if (best === undefined || weight > best.weight + 1e-9 || (Math.abs(weight - best.weight) <= 1e-9 && distance <= best.distance)) {
      best = { statement: { value: match.value, at, key }, weight, distance }
    }
  }
  return best?.statement
}

/** Where the text's line breaks stand, ascending (found once a text: a value and a term were ~60 characters walked apiece). */
function lineBreaks(text: string): number[] {
  const found: number[] = []
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) found.push(at)
  return found
}

/** Whether a line break stands in [from, to). */
function lineBreakBetween(breaks: readonly number[], from: number, to: number): boolean {
  const first = firstAtOrAbove(breaks, from)
  return first < breaks.length && breaks[first]! < to
}

/** The value of a short reply that names no key ("make it 45", "改成九十秒吧"). */
export function bareValue(text: string): string | undefined {
  if (text.length > SHORT_REPLY_CHARS) return undefined
  const values = [...text.matchAll(VALUE)]
  if (values.length !== 1) return undefined
  return normalizeValue(values[0]![1]!, values[0]![2])
}

export interface ValueCandidate<T> {
  readonly item: T
  readonly time: number
  readonly statement: ValueStatement | undefined
}

export interface ValueHistory<T> {
  /** Query terms (indexes) the statements share. */
  readonly key: readonly number[]
  /** Oldest first. */
  readonly statements: ReadonlyArray<{ readonly item: T; readonly time: number; readonly value: string }>
}

/**
 * Statements about the same thing with more than one value, oldest first: the key is the
 * heaviest set of terms at least two statements share. Undefined when there is no such history.
 */
export function valueHistory<T>(candidates: ReadonlyArray<ValueCandidate<T>>, weightOf: (term: number) => number): ValueHistory<T> | undefined {
  const stated = candidates.filter(candidate => candidate.statement !== undefined)
  if (stated.length < 2) return undefined
  // the key: the heaviest single term, then every term the chosen statements share
  const termWeight = new Map<number, number>()
  for (const candidate of stated) for (const term of candidate.statement!.key) termWeight.set(term, (termWeight.get(term) ?? 0) + 1)
  const shared = [...termWeight.entries()].filter(([, count]) => count >= 2).map(([term]) => term)
  if (shared.length === 0) return undefined
  const anchor = shared.toSorted((a, b) => weightOf(b) - weightOf(a))[0]!
  const members = stated.filter(candidate => candidate.statement!.key.has(anchor))
  if (new Set(members.map(member => member.statement!.value)).size < 2) return undefined
  const key = shared.filter(term => members.every(member => member.statement!.key.has(term)))
  return {
    key,
    statements: members
      .map(member => ({ item: member.item, time: member.time, value: member.statement!.value }))
      .toSorted((a, b) => a.time - b.time),
  }
}
