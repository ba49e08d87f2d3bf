import { bestPassage, coveredWeight, indexTerm, passageSnippet, scanTerms } from './passage.ts'

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
  /** Best first; an `undefined` keeps its position (the list's item there was left out). */
  readonly items: ReadonlyArray<T | undefined>
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
      if (item === undefined) return
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
  // words about the conversation itself ("did we ever discuss …"), not its topic
  'ever', 'discuss', 'discussed', 'discussion', 'mention', 'mentioned', 'talk', 'talked', 'say', 'said',
])

/** The index's own stem of a token (Porter, as FTS5 `porter`): ranking and index agree on every word. */
export function stem(word: string): string {
  return indexTerm(word)
}

/** Query terms that count toward coverage: no stopwords, no single Latin letters. */
export function coverageTerms(words: readonly string[]): string[] {
  return [...new Set(words.filter(word => !STOPWORDS.has(word.toLowerCase()) && !(/^[a-z0-9]$/i.test(word))).map(stem))]
}

/** Which of the coverage terms a text contains (whole tokens, camelCase parts, CJK substrings); linear, capped. */
export function coveredTerms(text: string, terms: readonly string[]): boolean[] {
  return scanTerms(text, terms).covered
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
  return coveredWeight(scanTerms(text, terms), terms, weights)
}

export interface Snippet {
  readonly text: string
  /** Query pieces found in the message (lowercased, whole tokens). */
  readonly matched: readonly string[]
}

/**
 * A window of the text around the densest cluster of the query's words, each whole-token match
 * wrapped in `**…**` ("on" is not marked inside "section"). Falls back to the head of the text.
 */
export function snippet(text: string, literals: readonly string[], width = 240): Snippet {
  const terms = coverageTerms(literals.flatMap(literal => [...literal.matchAll(/[\p{L}\p{N}\p{M}]+/gu)].map(match => match[0])))
  const scan = scanTerms(text, terms)
  const passage = bestPassage(text, scan, terms, new Map(), width * 2)
  return passageSnippet(text, passage, scan, literals, width)
}
