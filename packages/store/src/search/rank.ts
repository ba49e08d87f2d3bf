/**
 * Final order of search units: weighted coverage of the query, exact literal matches, BM25 over
 * the scope, recency; then a value history puts the newest statement first for a current-value
 * question. Statistics come from the search's own scope. Plain functions over candidates.
 */
import { scanTerms, type TermScan } from './passage.ts'
import { coveredWeight } from './passage.ts'
import { scanCaps } from './budget.ts'
import type { ValueHistoryReport } from './types.ts'
import { messageKey, type SearchUnit } from './units.ts'
import { asksForEarlierValue, bareValue, bestStatement, valueHistory, type ValueCandidate, type ValueMatch } from './values.ts'

/** With a recency cue, candidates within this share of the best coverage are ordered newest first. */
const RECENCY_BAND = 0.6
/** Textbook BM25 parameters (Robertson & Zaragoza), not fitted to any set. */
const BM25_K1 = 1.2
const BM25_B = 0.75
/** Leading units looked at for a value history. */
const HISTORY_POOL = 20
/** Statements of a history cover about as much of the query as the best unit (share of its coverage). */
const HISTORY_BAND = 0.8

/** Query pieces with inner punctuation (paths, identifiers, versions) are meant literally. */
export function exactLiterals(literals: readonly string[]): string[] {
  return literals.filter(literal => literal.length >= 3 && /[\p{L}\p{N}][^\p{L}\p{N}\s]+[\p{L}\p{N}]/u.test(literal))
}

export function bucket(covered: number): number {
  return Math.round(covered * 20)
}

/**
 * Inverse document frequency of each coverage term in the search's scope, so covering a rare
 * identifier counts for more than covering a common word. `frequencies` are per query word (same
 * order as `words`), counted in scope up to a cap.
 */
export function scopeWeights(terms: readonly string[], words: readonly string[], frequencies: readonly number[], total: number, stemOf: (word: string) => string | undefined = word => word): Map<string, number> {
  const weights = new Map<string, number>()
  const df = new Map<string, number>()
  words.forEach((word, index) => {
    const term = stemOf(word)
    if (term !== undefined) df.set(term, Math.max(df.get(term) ?? 0, frequencies[index] ?? 0))
  })
  for (const term of terms) {
    const count = Math.min(df.get(term) ?? 0, total)
    weights.set(term, Math.log(1 + (total - count + 0.5) / (count + 0.5)))
  }
  return weights
}

export interface RankedUnit {
  readonly unit: SearchUnit
  readonly covered: number
  readonly scan: TermScan
  /** The unit text's values (values.ts valueMatches), when already known. */
  readonly values?: readonly ValueMatch[]
}

function bm25(scan: TermScan, terms: readonly string[], weights: ReadonlyMap<string, number>, length: number, average: number): number {
  const tf = terms.map(() => 0)
  for (const position of scan.positions) tf[position.term]! += 1
  const norm = BM25_K1 * (1 - BM25_B + BM25_B * (length / Math.max(1, average)))
  let score = 0
  tf.forEach((count, index) => {
    if (count > 0) score += (weights.get(terms[index]!) ?? 1) * (count * (BM25_K1 + 1)) / (count + norm)
  })
  return score
}

/**
 * Order units by coverage of the query terms (`single` holds the scans of lone messages), in
 * buckets of 5% so near-equal coverage falls through to exact literal matches, BM25, then recency.
 */
export function rankUnits(units: readonly SearchUnit[], single: ReadonlyMap<string, TermScan>, terms: readonly string[], weights: ReadonlyMap<string, number>, literals: readonly string[], recency: boolean): RankedUnit[] {
  const exact = exactLiterals(literals)
  const average = units.length === 0 ? 1 : units.reduce((sum, unit) => sum + unit.text.length, 0) / units.length
  const lone = units.map(unit => (unit.call === undefined && unit.question === undefined ? single.get(messageKey(unit.message)) : undefined))
  // the pairs' texts scanned here, and the texts a literal is looked for in, each within one budget (budget.ts)
  const pairCaps = scanCaps(units.map((unit, at) => (lone[at] === undefined ? unit.text.length : 0)))
  const literalCaps = exact.length === 0 ? [] : scanCaps(units.map(unit => unit.text.length), undefined, Number.POSITIVE_INFINITY)
  const scored = units.map((unit, at) => {
    const scan = lone[at] ?? scanTerms(unit.text, terms, pairCaps[at])
    const lower = exact.length === 0 ? '' : unit.text.slice(0, literalCaps[at]).toLowerCase()
    return {
      unit,
      scan,
      covered: coveredWeight(scan, terms, weights),
      literal: exact.filter(literal => lower.includes(literal)).length,
      relevance: bm25(scan, terms, weights, unit.text.length, average),
    }
  })
  let ranked = scored.toSorted((a, b) => bucket(b.covered) - bucket(a.covered) || b.literal - a.literal || b.relevance - a.relevance || b.unit.message.time - a.unit.message.time || b.unit.message.seq - a.unit.message.seq)
  if (recency && ranked.length > 0) {
    // "What is the current X": among the units that answer about as well as the best, newest first.
    const best = ranked[0]!.covered
    const close = (covered: number): boolean => covered >= best * RECENCY_BAND
    ranked = [
      ...ranked.filter(entry => close(entry.covered)).toSorted((a, b) => b.unit.message.time - a.unit.message.time || b.unit.message.seq - a.unit.message.seq),
      ...ranked.filter(entry => !close(entry.covered)),
    ]
  }
  return ranked.map(({ unit, covered, scan }) => ({ unit, covered, scan }))
}

/**
 * When the leading units state different values for the same thing, they are one history: it is
 * reported oldest first, and unless the question asks about an earlier state, its statements move
 * to where the first of them ranked, newest first.
 */
export function orderByValueHistory(ranked: readonly RankedUnit[], terms: readonly string[], weights: ReadonlyMap<string, number>, query: string, literals: readonly string[], labels: (keyTerms: readonly string[]) => string[] = keyTerms => [...keyTerms]): { units: RankedUnit[]; history?: ValueHistoryReport } {
  if (ranked.length < 2 || terms.length === 0) return { units: [...ranked] }
  const weightOf = (term: number): number => weights.get(terms[term]!) ?? 1
  const best = ranked[0]!.covered
  const pool = ranked.slice(0, HISTORY_POOL).filter(entry => entry.covered >= best * HISTORY_BAND && entry.covered > 0)
  const candidates: Array<ValueCandidate<RankedUnit>> = pool.map(entry => {
    const { unit } = entry
    // a short answer to a question states its value for the question's key
    const bare = unit.question === undefined ? undefined : bareValue(unit.message.text)
    if (bare !== undefined) {
      const key = new Set(entry.scan.covered.flatMap((covered, index) => (covered ? [index] : [])))
      return { item: entry, time: unit.message.time, statement: { value: bare, at: 0, key } }
    }
    return { item: entry, time: unit.message.time, statement: bestStatement(unit.text, entry.scan, weightOf, entry.values) }
  })
  const history = valueHistory(candidates, weightOf)
  if (history === undefined) return { units: [...ranked] }
  const members = new Set(history.statements.map(statement => statement.item))
  // the same value restated (asked, then confirmed) is one statement: the first
  const statements = history.statements.filter((statement, index) => index === 0 || history.statements[index - 1]!.value !== statement.value)
  const report: ValueHistoryReport = {
    key: labels(history.key.map(term => terms[term]!)),
    statements: statements.map(statement => ({ shadowId: statement.item.unit.message.shadowId, time: statement.time, value: statement.value })),
  }
  // an earlier state asked for, or an exact identifier or path: the order stays the ranking's
  if (asksForEarlierValue(query) || exactLiterals(literals).length > 0) return { units: [...ranked], history: report }
  const first = ranked.findIndex(entry => members.has(entry))
  const newestFirst = history.statements.toReversed().map(statement => statement.item)
  const rest = ranked.filter(entry => !members.has(entry))
  return { units: [...rest.slice(0, first), ...newestFirst, ...rest.slice(first)], history: report }
}
