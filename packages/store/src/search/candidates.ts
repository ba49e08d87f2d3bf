/**
 * Candidates of the words lists, chosen by what they are known to hold before any is read: each
 * words list (all words; each rare word; each translation) is taken wide, newest first, as ids
 * when the backend gives them (`listIds`), and every candidate is scored by the query weight of
 * the terms its lists prove it holds (a word's own list: that word; the all-words list: every
 * word). Only the best are read and ranked. Of a word with fewer matches than a list takes, every
 * match is seen; of a common one, the newest WIDE times more than a candidate list used to take.
 *
 * Backends without `listIds` read the same lists' rows instead: the same candidates, chosen the
 * same way (every tie is broken by list positions alone), so results do not depend on which path
 * a backend takes.
 */
import type { IndexHit, IndexQuery, IndexResult, ShadowBackend } from '../backend.ts'
import { messageKey } from './units.ts'

/** Reciprocal-rank constant of the fusion (ranking.ts fuseRankings' default). */
const FUSION_K = 60

export interface WordsList {
  readonly name: string
  readonly query: IndexQuery | undefined
  /** Coverage terms every message of this list holds. */
  readonly terms: readonly string[]
}

export interface ChosenList {
  readonly name: string
  readonly weight: number
  /** The list's candidates at their positions; one not chosen is `undefined`. */
  readonly items: ReadonlyArray<IndexHit | undefined>
}

/**
 * The `count` candidates of these lists that are known to hold the most query weight; ties go to
 * the higher fused rank, then the earlier position. Every list comes back, each in its order.
 */
export async function memberCandidates(backend: ShadowBackend, lists: readonly WordsList[], weights: ReadonlyMap<string, number>, count: number): Promise<ChosenList[]> {
  const asked = lists.filter((list): list is WordsList & { query: IndexQuery } => list.query !== undefined)
  const queries = asked.map(list => list.query)
  let keys: string[][]
  let chosen: Set<string>
  const rows = new Map<string, IndexHit>()
  if (backend.listIds !== undefined && backend.candidateRows !== undefined) {
    keys = queries.length === 0 ? [] : (await backend.listIds(queries)).map(ids => ids.map(String))
    chosen = choose(keys, asked, weights, count)
    const wanted = [...chosen]
    const read = wanted.length === 0 ? [] : await backend.candidateRows(wanted.map(Number))
    wanted.forEach((key, at) => {
      const message = read[at]
      // a row deleted since its list was read is left out
      if (message === undefined) chosen.delete(key)
      else rows.set(key, { message, score: 0 })
    })
  } else {
    const results = await indexLists(backend, queries)
    keys = results.map(result => result.hits.map(hit => messageKey(hit.message)))
    results.forEach((result, at) => result.hits.forEach((hit, rank) => rows.set(keys[at]![rank]!, hit)))
    chosen = choose(keys, asked, weights, count)
  }
  let next = 0
  return lists.map(list => {
    if (list.query === undefined) return { name: list.name, weight: 1, items: [] }
    const listKeys = keys[next++]!
    return { name: list.name, weight: 1, items: listKeys.map((key, rank) => (chosen.has(key) ? { message: rows.get(key)!.message, score: -rank } : undefined)) }
  })
}

function choose(keys: readonly string[][], lists: readonly WordsList[], weights: ReadonlyMap<string, number>, count: number): Set<string> {
  const known = new Map<string, { held: Set<string>; fused: number; first: number }>()
  keys.forEach((list, at) => list.forEach((key, rank) => {
    const entry = known.get(key) ?? { held: new Set<string>(), fused: 0, first: Number.POSITIVE_INFINITY }
    for (const term of lists[at]!.terms) entry.held.add(term)
    entry.fused += 1 / (FUSION_K + rank + 1)
    entry.first = Math.min(entry.first, rank * keys.length + at)
    known.set(key, entry)
  }))
  const weightOf = (held: ReadonlySet<string>): number => {
    let sum = 0
    for (const term of held) sum += weights.get(term) ?? 0
    return sum
  }
  return new Set([...known.entries()]
    .map(([key, entry]) => ({ key, weight: weightOf(entry.held), fused: entry.fused, first: entry.first }))
    .toSorted((a, b) => b.weight - a.weight || b.fused - a.fused || a.first - b.first)
    .slice(0, count)
    .map(entry => entry.key))
}

/**
 * Index lists (an absent one is empty), all in one call when the backend batches them (SQLite
 * reads their rows once); else one call each, at once (a network backend answers them together).
 */
export async function indexLists(backend: ShadowBackend, queries: ReadonlyArray<IndexQuery | undefined>): Promise<IndexResult[]> {
  const asked = queries.filter((query): query is IndexQuery => query !== undefined)
  const answers = backend.searchIndexes === undefined || asked.length < 2
    ? await Promise.all(asked.map(query => backend.searchIndex(query)))
    : await backend.searchIndexes(asked)
  let next = 0
  return queries.map(query => (query === undefined ? { hits: [], windowed: false } : answers[next++]!))
}
