/**
 * Search orchestration, the same for every backend: check and analyze the query, resolve the
 * scope, gather candidates from the backend's index lists, fuse, pair calls with results, rank,
 * and read the winners in full. A backend only answers the index queries.
 */
import { analyzeQuery, MAX_QUERY_CHARS } from '../analyzer.ts'
import type { Awaitable, IndexHit, IndexResult, MessageFilter, ShadowBackend } from '../backend.ts'
import { invalid } from '../errors.ts'
import { messageFilter, scopeSegments } from '../scope.ts'
import { bucket, rankUnits, termWeights } from './rank.ts'
import { coverageTerms, fuseRankings, snippet, weightedCoverage } from './ranking.ts'
import type { SearchHit, SearchOptions, SearchResult } from './types.ts'
import { callUnits, messageKey } from './units.ts'

/** Leading candidates whose tool call or result is looked up (at least; more for a larger limit). */
const PAIRING_POOL = 30
/** Candidates each index list contributes (at least; more for a larger limit). */
const CANDIDATE_POOL = 50
/** Document frequencies are counted up to this many matches. */
const DF_CAP = 2_000

/**
 * Ranked full-text search over the scope's history. Query text is data, never FTS syntax.
 *
 * Candidates come from three index queries: all words (AND), any word (OR, BM25) and substrings
 * (trigram over literal anchors). They are ordered by how much of the query a message covers,
 * then by reciprocal-rank fusion of the three lists, then by recency.
 */
export async function search(backend: ShadowBackend, query: string, options: SearchOptions): Promise<SearchResult> {
  if (typeof query !== 'string') throw invalid('query must be a string')
  if (query.trim().length === 0) throw invalid('query is empty')
  if (query.length > MAX_QUERY_CHARS) throw invalid(`query is longer than ${MAX_QUERY_CHARS} characters`)
  const limit = options.limit ?? 10
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw invalid('limit must be an integer from 1 to 200')
  const analyzed = analyzeQuery(query)
  if (analyzed.words.length === 0 && analyzed.grams.length === 0) throw invalid('query has no searchable words')
  const segments = await scopeSegments(backend, options)
  const filter: MessageFilter = {
    ...messageFilter(segments, {
      ...(options.timeFrom === undefined ? {} : { timeFrom: options.timeFrom }),
      ...(options.timeTo === undefined ? {} : { timeTo: options.timeTo }),
      ...(options.roles === undefined ? {} : { roles: options.roles }),
      ...(options.toolName === undefined ? {} : { toolName: options.toolName }),
      ...(options.checkpointId === undefined ? {} : { elidedBy: options.checkpointId }),
    }),
    ...(options.excludeSourceKinds === undefined ? {} : { excludeSourceKinds: options.excludeSourceKinds }),
    ...(options.excludeToolNames === undefined ? {} : { excludeToolNames: options.excludeToolNames }),
  }
  const rankWindow = options.rankWindow ?? 1_000
  const pool = Math.max(CANDIDATE_POOL, limit * 5)
  const none = { hits: [] as IndexHit[], windowed: false }
  const list = (index: 'words' | 'grams', terms: readonly string[], operator: 'and' | 'or', order: 'rank' | 'newest'): Awaitable<IndexResult> =>
    backend.searchIndex({ ...filter, index, terms, operator, limit: pool, rankWindow, order, light: true })
  // bm25 walks the whole doclist of every phrase in the MATCH (its idf pass), whatever the scope or
  // window: rank only with words that are rare store-wide; list the rest newest first.
  const global = analyzed.words.length > 0 ? await backend.documentFrequencies({ segments, index: 'words', terms: analyzed.words, cap: DF_CAP, global: true }) : []
  const rare = analyzed.words.filter((_, index) => (global[index] ?? 0) < DF_CAP)
  // the three lists are independent: a network backend answers them at once
  const [all, any, grams] = await Promise.all([
    analyzed.words.length > 1 ? list('words', analyzed.words, 'and', 'newest') : none,
    rare.length > 0 ? list('words', rare, 'or', 'rank') : analyzed.words.length > 0 ? list('words', analyzed.words, 'or', 'newest') : none,
    analyzed.grams.length > 0 ? list('grams', analyzed.grams, 'or', 'newest') : none,
  ])
  const fused = fuseRankings(
    [{ name: 'all', weight: 1, items: all.hits }, { name: 'any', weight: 1, items: any.hits }, { name: 'grams', weight: 1, items: grams.hits }],
    hit => messageKey(hit.message),
    (a, b) => b.message.time - a.message.time || b.message.seq - a.message.seq,
  )
  const terms = coverageTerms(analyzed.words)
  const weights = await termWeights(backend, terms, analyzed.words, global)
  // Pair calls with results for the leading candidates only: pairing reads a partner row each,
  // and a candidate far down on its own coverage does not reach the top by its partner.
  const single = new Map(fused.map(entry => [entry.key, weightedCoverage(entry.item.message.text, terms, weights)]))
  const pairable = new Set(fused
    .map(entry => ({ key: entry.key, covered: bucket(single.get(entry.key)!), score: entry.score }))
    .toSorted((a, b) => b.covered - a.covered || b.score - a.score)
    .slice(0, Math.max(PAIRING_POOL, limit * 3))
    .map(entry => entry.key))
  // A call stands for its result only when the result itself passes every filter asked for.
  const foldCalls = (options.roles === undefined || options.roles.includes('tool'))
    && options.timeFrom === undefined && options.timeTo === undefined && options.checkpointId === undefined
  const units = await callUnits(backend, fused, segments, foldCalls, pairable)
  const ranked = rankUnits(units, single, terms, weights, analyzed.literals, analyzed.recency)
  // candidates were read without their event JSON: read the winners in full (at once, in rank order)
  const [hits, searched] = await Promise.all([
    Promise.all(ranked.slice(0, limit).map(async (unit): Promise<SearchHit> => {
      const cut = snippet(unit.call === undefined ? unit.message.text : unit.text, analyzed.literals)
      const message = (await backend.getMessage(unit.message.sessionId, unit.message.seq)) ?? unit.message
      const call = unit.call === undefined ? undefined : (await backend.getMessage(unit.call.sessionId, unit.call.seq)) ?? unit.call
      return { message, ...(call === undefined ? {} : { call }), score: unit.score, snippet: cut.text, matched: cut.matched }
    })),
    backend.countMessages(filter),
  ])
  return { hits, coverage: { searched, matched: units.length, returned: hits.length }, literals: analyzed.literals }
}
