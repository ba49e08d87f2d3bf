/**
 * Superseded values: when several hits state a value for the thing a question names ("the request
 * timeout is 30s", later "make it 45"), they are one history, not rivals. A statement is a value
 * (a number with an optional unit) near query terms; the terms it sits near are its key. A short
 * reply with a value and no key of its own inherits the key of the question it answers. No names
 * are special: the key is whatever identifiers or words the query and the text share.
 * Plain functions over candidates; backend-neutral.
 */
import type { TermScan } from './passage.ts'

/** A value and a key term count as one statement within this many characters. */
export const KEY_DISTANCE = 80
/** A reply this short answers the message before it (and inherits its key). */
export const SHORT_REPLY_CHARS = 280

const ZH_DIGITS = '零〇一二两三四五六七八九十百千'
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

function normalizeValue(number: string, unit: string | undefined): string {
  const u = (unit ?? '').toLowerCase()
  const canonical: Record<string, string> = {
    sec: 's', secs: 's', second: 's', seconds: 's', 秒: 's', 秒钟: 's',
    min: 'm', mins: 'm', minute: 'm', minutes: 'm', 分钟: 'm',
    hr: 'h', hrs: 'h', hour: 'h', hours: 'h', 小时: 'h',
    millisecond: 'ms', milliseconds: 'ms', 毫秒: 'ms', day: 'd', days: 'd', 天: 'd',
  }
  return `${number}${canonical[u] ?? u}`
}

/**
 * The statement of a text whose key weighs most: a value with query terms close by, in the same
 * line. Values inside identifiers, paths and versions are not values.
 */
export function bestStatement(text: string, scan: TermScan, weightOf: (term: number) => number): ValueStatement | undefined {
  if (scan.positions.length === 0) return undefined
  const positions = scan.positions
  let best: { statement: ValueStatement; weight: number; distance: number } | undefined
  let low = 0
  // values are looked for only within KEY_DISTANCE of a match: work bounded by the matches, not the text
  const windows: Array<{ from: number; to: number }> = []
  for (const position of positions) {
    const from = Math.max(0, position.at - KEY_DISTANCE - 12)
    const to = Math.min(text.length, position.at + position.length + KEY_DISTANCE + 12)
    const last = windows.at(-1)
    if (last !== undefined && from <= last.to) last.to = Math.max(last.to, to)
    else windows.push({ from, to })
  }
  const values: RegExpMatchArray[] = []
  for (const { from, to } of windows) {
    // a window starts on a token boundary, so a number is never cut in two
    let start = from
    while (start > 0 && /[\p{L}\p{N}_.]/u.test(text[start - 1]!) && from - start < 64) start -= 1
    for (const match of text.slice(start, to).matchAll(VALUE)) values.push(Object.assign(match, { index: match.index + start }))
  }
  for (const match of values) {
    const at = match.index!
    while (low < positions.length && positions[low]!.at < at - KEY_DISTANCE) low += 1
    const key = new Set<number>()
    let distance = Number.POSITIVE_INFINITY
    for (let index = low; index < positions.length && positions[index]!.at <= at + KEY_DISTANCE; index += 1) {
      const position = positions[index]!
      const from = Math.min(position.at, at)
      const to = Math.max(position.at, at)
      if (text.slice(from, to).includes('\n')) continue
      key.add(position.term)
      distance = Math.min(distance, Math.abs(position.at - at))
    }
    if (key.size === 0) continue
    let weight = 0
    for (const term of key) weight += weightOf(term)
    // the heaviest key wins; among equal keys the closest, then the later statement
    if (best === undefined || weight > best.weight + 1e-9 || (Math.abs(weight - best.weight) <= 1e-9 && distance <= best.distance)) {
      best = { statement: { value: normalizeValue(match[1]!, match[2]), at, key }, weight, distance }
    }
  }
  return best?.statement
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
