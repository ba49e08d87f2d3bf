/**
 * Ranking policy over index candidates: plain functions, no SQL. The backend scores candidates
 * within one index (BM25 for FTS5); this module fuses the word and substring lists, breaks ties,
 * and cuts snippets.
 */

export interface RankedCandidate<T> {
  readonly key: string
  readonly item: T
  /** Position in each list it appeared in (0 = best), by list name. */
  readonly ranks: Readonly<Record<string, number>>
  readonly score: number
}

export interface FusionInput<T> {
  readonly name: string
  readonly weight: number
  readonly items: readonly T[]
}

/**
 * Reciprocal-rank fusion: robust to the two indexes' scores living on different scales.
 * `k` damps the head; ties fall to `tieBreak` (e.g. newer first).
 */
export function fuseRankings<T>(
  lists: readonly FusionInput<T>[],
  keyOf: (item: T) => string,
  tieBreak: (a: T, b: T) => number,
  k = 60,
): RankedCandidate<T>[] {
  const merged = new Map<string, { item: T; ranks: Record<string, number>; score: number }>()
  for (const list of lists) {
    list.items.forEach((item, rank) => {
      const key = keyOf(item)
      const entry = merged.get(key) ?? { item, ranks: {}, score: 0 }
      entry.ranks[list.name] = rank
      entry.score += list.weight / (k + rank + 1)
      merged.set(key, entry)
    })
  }
  return [...merged.entries()]
    .map(([key, entry]) => ({ key, item: entry.item, ranks: entry.ranks, score: entry.score }))
    .toSorted((a, b) => b.score - a.score || tieBreak(a.item, b.item))
}

/** Words that carry no topic in a question; they do not count toward coverage. */
const STOPWORDS = new Set([
  'a', 'an', 'the', 'and', 'or', 'but', 'of', 'to', 'in', 'on', 'at', 'for', 'from', 'by', 'with', 'about', 'as', 'into',
  'is', 'are', 'was', 'were', 'be', 'been', 'being', 'do', 'does', 'did', 'done', 'have', 'has', 'had', 'will', 'would',
  'can', 'could', 'should', 'shall', 'may', 'might', 'must', 'we', 'i', 'you', 'he', 'she', 'it', 'they', 'our', 'my',
  'your', 'their', 'its', 'us', 'me', 'them', 'this', 'that', 'these', 'those', 'there', 'here', 'what', 'which', 'who',
  'whom', 'whose', 'when', 'where', 'why', 'how', 'not', 'no', 'yes', 'so', 'if', 'then', 'than', 'too', 'very', 'just',
  'also', 'again', 'any', 'all', 'some', 'one', 'get', 'got', 'let', 'please', 'tell', 'show', 'find', 'look', 'know',
])

/** A deliberately crude stemmer: enough to let "databases" meet "database" and "decided" meet "decide". */
export function stem(word: string): string {
  const lower = word.toLowerCase()
  if (lower.length <= 3 || !/^[a-z]+$/.test(lower)) return lower
  for (const [suffix, replacement] of [['ies', 'y'], ['ing', ''], ['ed', ''], ['es', ''], ['s', '']] as const) {
    if (lower.endsWith(suffix) && lower.length - suffix.length >= 3) return lower.slice(0, lower.length - suffix.length) + replacement
  }
  return lower
}

/** Query terms that count toward coverage: no stopwords, no single Latin letters. */
export function coverageTerms(words: readonly string[]): string[] {
  return [...new Set(words.filter(word => !STOPWORDS.has(word) && !(/^[a-z0-9]$/.test(word))).map(stem))]
}

const TOKEN = /[\p{L}\p{N}]+/gu
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

/** Which of the coverage terms a text contains (as stemmed tokens, camelCase parts, or CJK substrings). */
export function coveredTerms(text: string, terms: readonly string[]): boolean[] {
  if (terms.length === 0) return []
  const sample = text.length > 200_000 ? text.slice(0, 200_000) : text
  const lower = sample.toLowerCase()
  // Lowercasing that changes lengths (rare scripts) breaks the offset mapping: tokenize everything.
  if (lower.length !== sample.length) return coveredTermsByTokens(sample, lower, terms)
  return terms.map(term => {
    if (CJK.test(term) && lower.includes(term)) return true
    // A token whose stem is `term` contains `term` lowercased (stems only cut suffixes), except
    // "-ies" -> "-y", which keeps all but the final y. Look only around those occurrences.
    const probe = term.length > 1 && term.endsWith('y') ? term.slice(0, -1) : term
    if (probe.length === 0 || !ONLY_TOKEN.test(probe)) return false
    for (let at = lower.indexOf(probe); at !== -1; at = lower.indexOf(probe, at + 1)) {
      let start = at
      for (let step = tokenCharBefore(sample, start); step > 0; step = tokenCharBefore(sample, start)) start -= step
      let end = at + probe.length
      for (let step = tokenCharAt(sample, end); step > 0; step = tokenCharAt(sample, end)) end += step
      const token = sample.slice(start, end)
      if (stem(token) === term) return true
      for (const part of token.split(/(?<=[a-z0-9])(?=[A-Z])/)) if (stem(part) === term) return true
    }
    return false
  })
}

const ONLY_TOKEN = /^[\p{L}\p{N}]+$/u
const TOKEN_CHAR = /^[\p{L}\p{N}]$/u

/** Length in code units of the token character starting at `index`, 0 when there is none. */
function tokenCharAt(text: string, index: number): number {
  if (index >= text.length) return 0
  const point = text.codePointAt(index)!
  const size = point > 0xffff ? 2 : 1
  return TOKEN_CHAR.test(text.slice(index, index + size)) ? size : 0
}

/** Length in code units of the token character ending just before `index`, 0 when there is none. */
function tokenCharBefore(text: string, index: number): number {
  if (index <= 0) return 0
  const low = text.charCodeAt(index - 1)
  const size = low >= 0xdc00 && low <= 0xdfff && index >= 2 && text.charCodeAt(index - 2) >= 0xd800 && text.charCodeAt(index - 2) <= 0xdbff ? 2 : 1
  return TOKEN_CHAR.test(text.slice(index - size, index)) ? size : 0
}

/** The reference definition: every token, stemmed, with its camelCase parts. */
export function coveredTermsByTokens(sample: string, lower: string, terms: readonly string[]): boolean[] {
  const tokens = new Set<string>()
  for (const match of sample.matchAll(TOKEN)) {
    const token = match[0]
    tokens.add(stem(token))
    for (const part of token.split(/(?<=[a-z0-9])(?=[A-Z])/)) tokens.add(stem(part))
  }
  return terms.map(term => tokens.has(term) || (CJK.test(term) && lower.includes(term)))
}

/** Share of the coverage terms a text contains. */
export function coverage(text: string, terms: readonly string[]): number {
  if (terms.length === 0) return 0
  return coveredTerms(text, terms).filter(Boolean).length / terms.length
}

/**
 * Share of the query's weight a text covers, each term weighted (e.g. by inverse document
 * frequency). Terms without a weight count 1; with no weights this is plain coverage.
 */
export function weightedCoverage(text: string, terms: readonly string[], weights: ReadonlyMap<string, number>): number {
  if (terms.length === 0) return 0
  const hits = coveredTerms(text, terms)
  let total = 0
  let covered = 0
  terms.forEach((term, index) => {
    const weight = weights.get(term) ?? 1
    total += weight
    if (hits[index]) covered += weight
  })
  return total === 0 ? 0 : covered / total
}

export interface Snippet {
  readonly text: string
  /** Literal pieces of the query found in the message (lowercased). */
  readonly matched: readonly string[]
}

/**
 * A window of the text around the densest cluster of query literals, with each occurrence
 * wrapped in `**…**`. Falls back to the head of the text when no literal occurs.
 */
export function snippet(text: string, literals: readonly string[], width = 240): Snippet {
  const lower = text.toLowerCase()
  const needles = literals.filter(literal => literal.length > 0)
  const positions: Array<{ at: number; length: number; literal: string }> = []
  for (const needle of needles) {
    let from = 0
    for (let count = 0; count < 50; count += 1) {
      const at = lower.indexOf(needle, from)
      if (at === -1) break
      positions.push({ at, length: needle.length, literal: needle })
      from = at + needle.length
    }
  }
  if (positions.length === 0) {
    const head = text.slice(0, width).replace(/\s+/g, ' ').trim()
    return { text: text.length > width ? `${head}…` : head, matched: [] }
  }
  positions.sort((a, b) => a.at - b.at)
  // Pick the window start that covers the most distinct literals.
  let best = positions[0]!.at
  let bestCount = -1
  for (const anchor of positions) {
    const inside = new Set(positions.filter(p => p.at >= anchor.at && p.at + p.length <= anchor.at + width).map(p => p.literal))
    if (inside.size > bestCount) {
      bestCount = inside.size
      best = anchor.at
    }
  }
  const start = Math.max(0, best - Math.floor(width / 4))
  const end = Math.min(text.length, start + width)
  const inWindow = positions.filter(p => p.at >= start && p.at + p.length <= end)
  let out = ''
  let cursor = start
  const used: Array<{ at: number; length: number }> = []
  for (const p of inWindow) {
    if (used.some(u => p.at < u.at + u.length)) continue
    out += text.slice(cursor, p.at) + '**' + text.slice(p.at, p.at + p.length) + '**'
    cursor = p.at + p.length
    used.push(p)
  }
  out += text.slice(cursor, end)
  const flat = out.replace(/\s+/g, ' ').trim()
  return {
    text: `${start > 0 ? '…' : ''}${flat}${end < text.length ? '…' : ''}`,
    matched: [...new Set(positions.map(p => p.literal))],
  }
}
