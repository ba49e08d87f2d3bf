/** Final order of search units: weighted coverage of the query, literal matches, fusion score, recency. */
import type { ShadowBackend } from '../backend.ts'
import { coverageTerms, weightedCoverage } from './ranking.ts'
import { messageKey, type SearchUnit } from './units.ts'

/** With a recency cue, candidates within this share of the best coverage are ordered newest first. */
const RECENCY_BAND = 0.6

export function bucket(covered: number): number {
  return Math.round(covered * 20)
}

/**
 * Inverse document frequency of each coverage term, so covering a rare identifier counts for
 * more than covering a common word. Frequencies are store-wide (what rarity means across the
 * history, and already counted for the index lists), up to a cap: past it a term is common
 * either way, and the count stays cheap on large stores.
 */
export async function termWeights(backend: ShadowBackend, terms: readonly string[], words: readonly string[], frequencies: readonly number[]): Promise<Map<string, number>> {
  const weights = new Map<string, number>()
  if (terms.length <= 1) return weights
  const total = Math.max(1, await backend.messageTotal())
  const df = new Map<string, number>()
  words.forEach((word, index) => {
    const [term] = coverageTerms([word])
    if (term !== undefined && !df.has(term)) df.set(term, frequencies[index] ?? 0)
  })
  for (const term of terms) {
    const count = Math.min(df.get(term) ?? 0, total)
    weights.set(term, Math.log(1 + (total - count + 0.5) / (count + 0.5)))
  }
  return weights
}

/**
 * Order units by coverage of the query terms (`single` holds what was already computed for a
 * lone message), in buckets of 5% so near-equal coverage falls through to exact literal matches,
 * fusion score, then recency.
 */
export function rankUnits(units: readonly SearchUnit[], single: ReadonlyMap<string, number>, terms: readonly string[], weights: ReadonlyMap<string, number>, literals: readonly string[], recency: boolean): SearchUnit[] {
  // Query pieces with inner punctuation (paths, identifiers, versions) are meant literally.
  const exact = literals.filter(literal => literal.length >= 3 && /[\p{L}\p{N}][^\p{L}\p{N}\s]+[\p{L}\p{N}]/u.test(literal))
  const scored = units.map(unit => {
    const lower = exact.length === 0 ? '' : unit.text.toLowerCase()
    const covered = unit.call === undefined ? single.get(messageKey(unit.message)) ?? weightedCoverage(unit.text, terms, weights) : weightedCoverage(unit.text, terms, weights)
    return { unit, covered, literal: exact.filter(literal => lower.includes(literal)).length }
  })
  let ranked = scored.toSorted((a, b) => bucket(b.covered) - bucket(a.covered) || b.literal - a.literal || b.unit.score - a.unit.score || b.unit.message.time - a.unit.message.time)
  if (recency && ranked.length > 0) {
    // "What is the current X": among the units that answer about as well as the best, newest first.
    const best = ranked[0]!.covered
    const close = (covered: number): boolean => covered >= best * RECENCY_BAND
    ranked = [
      ...ranked.filter(entry => close(entry.covered)).toSorted((a, b) => b.unit.message.time - a.unit.message.time || b.unit.message.seq - a.unit.message.seq),
      ...ranked.filter(entry => !close(entry.covered)),
    ]
  }
  return ranked.map(entry => entry.unit)
}
