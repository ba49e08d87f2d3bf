/**
 * The order of a resident search's units (resident/engine.ts): the store's ranking policy
 * (search/rank.ts: weighted coverage in buckets, exact literals, BM25, recency), worked out only
 * for as many units as the result and a value history can reach.
 */
import type { AnalyzedQuery } from '../analyzer.ts'
import { CANDIDATE_TEXT_CHARS } from '../backend.ts'
import { RUN_SCRIPTS } from '../scripts.ts'
import { bucket, exactLiterals } from '../search/rank.ts'
import { leading } from './select.ts'
import { ANCHORS_PARTIAL } from './doc-flags.ts'
import type { UnitTable, Units } from './unit-table.ts'
import type { ScopeView } from './view.ts'

/** BM25 as rank.ts computes it (textbook parameters, not fitted). */
const BM25_K1 = 1.2
const BM25_B = 0.75
/** Leading units a value history looks at (rank.ts HISTORY_POOL), and the recency band (RECENCY_BAND). */
const HISTORY_POOL = 20
const RECENCY_BAND = 0.6

/** The units in rankUnits' order (rank.ts); only as many as the result and a value history can reach. */
export function rankUnits(view: ScopeView, table: UnitTable, terms: readonly string[], weights: ReadonlyMap<string, number>, analyzed: AnalyzedQuery, limit: number, substringMarks: (term: string) => Uint8Array): number[] {
  const units = table.units
  const ids = units.ids()
  if (ids.length === 0) return []
  const width = terms.length
  const weightOf = terms.map(term => weights.get(term) ?? 1)
  const total = weightOf.reduce((sum, weight) => sum + weight, 0)
  const { length, covered, bucket: buckets, relevance, literal } = table
  let lengths = 0
  for (const unit of ids) {
    let size = view.length[units.rep[unit]!]!
    if (units.call[unit]! >= 0) size += view.length[units.call[unit]!]! + 1
    if (units.question[unit]! >= 0) size += view.length[units.question[unit]!]! + 1
    length[unit] = size
    lengths += size
    let sum = 0
    const base = unit * width
    for (let index = 0; index < width; index += 1) if (table.counts[base + index]! > 0) sum += weightOf[index]!
    covered[unit] = total === 0 ? 0 : sum / total
    buckets[unit] = bucket(covered[unit]!)
  }
  const average = lengths / ids.length
  const exact = literalTests(view, exactLiterals(analyzed.literals), substringMarks)
  const score = (unit: number): void => {
    if (literal[unit]! >= 0) return
    const norm = BM25_K1 * (1 - BM25_B + BM25_B * (length[unit]! / Math.max(1, average)))
    let sum = 0
    const base = unit * width
    for (let index = 0; index < width; index += 1) {
      // held without positions (a shifted lowercase, 0.5): covered, not counted (rank.ts counts positions)
      const count = Math.floor(table.counts[base + index]!)
      if (count > 0) sum += weightOf[index]! * (count * (BM25_K1 + 1)) / (count + norm)
    }
    relevance[unit] = sum
    literal[unit] = exact.length === 0 ? 0 : literalCount(units, unit, exact)
  }
  const newest = (a: number, b: number): number => {
    const x = units.rep[a]!
    const y = units.rep[b]!
    return view.time[y]! - view.time[x]! || view.seq[y]! - view.seq[x]!
  }
  const order = (a: number, b: number): number => buckets[b]! - buckets[a]! || literal[b]! - literal[a]! || relevance[b]! - relevance[a]! || newest(a, b)
  const need = limit + HISTORY_POOL
  if (!analyzed.recency) {
    // whole buckets from the top until enough units: the order within them needs their literals and BM25
    const chosen = topBuckets(ids, buckets, need)
    for (const unit of chosen) score(unit)
    return leading(chosen, need, unit => (buckets[unit]! * 64 + literal[unit]!) * RELEVANCE_SPAN + relevance[unit]!, order)
  }
  // "the current X": the units about as good as the best, newest first, then the rest in order
  const first = topBuckets(ids, buckets, 1)
  for (const unit of first) score(unit)
  const leader = first.reduce((a, b) => (order(a, b) <= 0 ? a : b))
  const band = covered[leader]! * RECENCY_BAND
  const close = leading(ids.filter(unit => covered[unit]! >= band), need, unit => view.time[units.rep[unit]!]!, newest)
  if (close.length >= need) return close
  const others = topBuckets(ids.filter(unit => covered[unit]! < band), buckets, need - close.length)
  for (const unit of others) score(unit)
  return [...close, ...others.toSorted(order).slice(0, need - close.length)]
}

/** Relevance stays below this (BM25 of at most 48 terms, each weight a log of the scope size): it packs below bucket and literals in one key. */
const RELEVANCE_SPAN = 2 ** 20

/** The units of the highest buckets, whole buckets, at least `count` of them (all when fewer). */
function topBuckets(ids: readonly number[], buckets: Uint8Array, count: number): number[] {
  const per = new Int32Array(21)
  for (const unit of ids) per[buckets[unit]!]! += 1
  let floor = 20
  let seen = per[20]!
  while (floor > 0 && seen < count) {
    floor -= 1
    seen += per[floor]!
  }
  return ids.filter(unit => buckets[unit]! >= floor)
}

/** Characters of a literal piece an anchor can hold (analyzer.ts ANCHOR); its ends are word characters. */
const ANCHORABLE = /^[\p{L}\p{N}_$](?:[\p{L}\p{N}_$./\\:-]*[\p{L}\p{N}_$])?$/u
/** A piece that holds one of these is an anchor's shape (analyzer.ts anchorShaped) whatever run it sits in. */
const ANCHOR_MARK = /[\d_./\\:-]/
const CJK_LETTER = new RegExp(`[${RUN_SCRIPTS}]`, 'v')

/**
 * Whether a doc's lowercased text holds an exact literal, per literal. A literal made of anchor
 * characters is inside an anchor of every text that holds it (analyzer.ts anchorView): the docs
 * with such an anchor are found at once, and only a doc whose anchors may be partial is looked
 * at; any other literal is looked for in the text.
 */
function literalTests(view: ScopeView, exact: readonly string[], substringMarks: (term: string) => Uint8Array): Array<(gid: number) => boolean> {
  return exact.map(literal => {
    if (!ANCHORABLE.test(literal) || !ANCHOR_MARK.test(literal) || CJK_LETTER.test(literal)) return (gid: number) => view.lowerText(gid).includes(literal)
    const marks = substringMarks(literal)
    // a cut text's anchors hold its tail's too (tail.ts textTail): its text, as ranked, is looked at
    return (gid: number) => (view.length[gid]! >= CANDIDATE_TEXT_CHARS ? view.lowerText(gid).includes(literal)
      : marks[gid] === 1 || ((view.flags[gid]! & ANCHORS_PARTIAL) !== 0 && view.lowerText(gid).includes(literal)))
  })
}

/** Exact literals the unit's texts hold (rank.ts: each literal once). */
function literalCount(units: Units, unit: number, tests: ReadonlyArray<(gid: number) => boolean>): number {
  let count = 0
  const rep = units.rep[unit]!
  const partner = units.call[unit]! >= 0 ? units.call[unit]! : units.question[unit]!
  for (const holds of tests) if (holds(rep) || (partner >= 0 && holds(partner))) count += 1
  return count
}
