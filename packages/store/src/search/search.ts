/**
 * Search orchestration, the same for every backend: check and analyze the query, resolve the
 * scope, gather candidates from the backend's index lists, pair calls with results and questions
 * with their short answers, rank, find each winner's passage, and report what the scope does not
 * have. A backend only answers the index queries; every statistic ranking uses comes from the
 * search's own scope, so one session's order never depends on another session's text.
 */
import { analyzeQuery, MAX_QUERY_CHARS } from '../analyzer.ts'
import type { IndexQuery, MessageFilter, ShadowBackend } from '../backend.ts'
import { invalid } from '../errors.ts'
import { checkpointScope, messageFilter, scopeAndLineage, type ResolvedScope, type ScopeRows } from '../scope.ts'
import type { ShadowMessage } from '../types.ts'
import { assertNames, assertSeq } from '../validate.ts'
import { indexLists, memberCandidates } from './candidates.ts'
import { RANK_TEXT_CHARS, scanTerms, type TermScan } from './passage.ts'
import { scanCaps } from './budget.ts'
import { hitsOf } from './hits.ts'
import { orderByValueHistory, rankUnits, scopeWeights } from './rank.ts'
import { coverageTerms, fuseRankings, stem } from './ranking.ts'
import type { QueryTermReport, SearchHit, SearchOptions, SearchResult } from './types.ts'
import { answerUnits, callUnits, messageKey } from './units.ts'
import { bridgeTerms, bridgeWeights, type BridgeTerm } from './glossary.ts'
import { MAX_TIME, windowDays, withoutTime } from '../days.ts'
import { deepLineage, onlySegments } from '../filter.ts'
import { residentSearch } from '../resident/engine.ts'
import type { SessionIndexRegistry } from '../resident/registry.ts'
import { RUN_SCRIPTS } from '../scripts.ts'

/**
 * Leading candidates whose tool call or result (or short answer) is looked up (at least; more for
 * a larger limit); the words lists' candidates ranked are CHOSEN_SHARE such pools.
 */
const PAIRING_POOL = 30
/** Candidates each substring or days list contributes (at least; more for a larger limit). */
const CANDIDATE_POOL = 50
/**
 * A words list is read this many times CANDIDATE_POOL wide (candidates.ts). Set by cost, not by
 * any quality set: an id costs ~1 µs where a candidate read and scanned costs ~15, but in a
 * session scope each id is still one row lookup (the session filter); at 2 every bench:search
 * class costs less than with lists of CANDIDATE_POOL rows all ranked (interleaved A/B, 1M store),
 * at 4 the session class costs 1.3x (and the many-match slice gains more: store README).
 */
const WIDE = 2
/**
 * Candidates of the words lists read and ranked, in pairing pools (candidates.ts). Chosen on the
 * dev sets: bench:agent's dev seeds lose needs at 1 (success 91.7 against 95.8 when every
 * candidate is ranked; a need's answer holding few of the query's words sat 31st-45th by its
 * lists), none at 2 (95.8); bench:quality's dev many-match slice 0.470 at 1, 0.478 at 2.
 */
const CHOSEN_SHARE = 2
/** Document frequencies are counted up to this many matches. */
const DF_CAP = 2_000
/** Newest matches ranked per index list by default (the README's `rankWindow`). */
export const RANK_WINDOW = 1_000
/** Rarest query words that get a candidate list of their own. */
const RARE_LISTS = 6
/** Translations (glossary.ts) that get a candidate list of their own, rarest first. */
const BRIDGE_LISTS = 3
/** A word in under this share of the scope's messages is distinctive (absent words always are)... */
const DISTINCTIVE_SHARE = 0.05
/** ...and so is one in at most this many (a small scope makes every present word look common). */
const DISTINCTIVE_FLOOR = 3
/** In a fork, a reported word's count is taken on its own rows up to this many (above, the index's count stands). */
const FORK_COUNT_LIMIT = 20
const CJK = new RegExp(`[${RUN_SCRIPTS}]`, 'v')

export function checkOptions(options: SearchOptions): { limit: number; rankWindow: number } {
  if (typeof options !== 'object' || options === null) throw invalid('search options must be an object')
  const limit = options.limit ?? 10
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw invalid('limit must be an integer from 1 to 200')
  const rankWindow = options.rankWindow ?? RANK_WINDOW
  if (rankWindow !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(rankWindow) || rankWindow < 1)) throw invalid('rankWindow must be a positive integer or Infinity')
  assertNames(options.excludeSourceKinds, 'excludeSourceKinds')
  assertNames(options.excludeToolNames, 'excludeToolNames')
  if (options.beforeSeq !== undefined) assertSeq(options.beforeSeq, 'beforeSeq')
  // a window's days are listed and spelled as dates (days.ts): only times a Date holds
  for (const name of ['timeFrom', 'timeTo'] as const) {
    const time = options[name]
    if (time !== undefined && (typeof time !== 'number' || !(Math.abs(time) <= MAX_TIME))) throw invalid(`${name} must be epoch milliseconds`)
  }
  return { limit, rankWindow }
}

/**
 * Ranked full-text search over the scope's history. Query text is data, never FTS syntax.
 *
 * Candidates come from index lists (all words, newest first; each of the scope's rarest words,
 * newest first; substrings over literal anchors). They are ordered by how much of the query's
 * weight a unit covers (idf from the scope), exact literal matches, BM25 over the scope, recency;
 * a history of values for the thing asked about puts the newest statement first.
 */
export async function search(backend: ShadowBackend, query: string, options: SearchOptions, resolved?: ResolvedScope, resident?: SessionIndexRegistry): Promise<SearchResult> {
  if (typeof query !== 'string') throw invalid('query must be a string')
  if (query.trim().length === 0) throw invalid('query is empty')
  if (query.length > MAX_QUERY_CHARS) throw invalid(`query is longer than ${MAX_QUERY_CHARS} characters`)
  const { limit, rankWindow } = checkOptions(options)
  const analyzed = analyzeQuery(query)
  if (analyzed.words.length === 0 && analyzed.grams.length === 0) throw invalid('query has no searchable words')
  // a workspace or allSessions scope of many sessions is its provenance, not a list of them (scope.ts)
  // `resolved`: the scope as the caller resolved it (a test's listed segments), else from the options
  const scope = resolved ?? await scopeAndLineage(backend, options)
  const { segments } = scope
  const rows: ScopeRows = { segments, ...(scope.wide === undefined ? {} : { wide: scope.wide }) }
  const exclusions = {
    ...(options.excludeSourceKinds === undefined ? {} : { excludeSourceKinds: options.excludeSourceKinds }),
    ...(options.excludeToolNames === undefined ? {} : { excludeToolNames: options.excludeToolNames }),
  }
  const filter: MessageFilter = {
    // a checkpoint's originals: rows of its own session's history only (scope.ts)
    ...messageFilter(await checkpointScope(backend, rows, options.checkpointId), {
      ...(options.timeFrom === undefined ? {} : { timeFrom: options.timeFrom }),
      ...(options.timeTo === undefined ? {} : { timeTo: options.timeTo }),
      ...(options.roles === undefined ? {} : { roles: options.roles }),
      ...(options.toolName === undefined ? {} : { toolName: options.toolName }),
      ...(options.checkpointId === undefined ? {} : { elidedBy: options.checkpointId }),
    }),
    ...exclusions,
  }
  // a lineage scope is searched in its resident indexes: every match ranked (resident/engine.ts)
  // (a workspace or allSessions scope is read through the index lists whatever its size: its
  // answers never depend on how many sessions it holds; so is a chain of forks deeper than DEEP_LINEAGE)
  const lineageOnly = options.workspace === undefined && options.allSessions !== true && filter.wide === undefined && !deepLineage(filter.segments)
  if (resident !== undefined && lineageOnly) {
    const shadowed = options.checkpointId === undefined ? undefined : new Set((await backend.getCheckpoint(options.checkpointId))?.shadowedSeqs ?? [])
    // answered from indexes the store still matches when the search ends; a write that lands
    // meanwhile makes it search again (a session written without pause: the index lists answer)
    for (let attempt = 0; attempt < RESIDENT_ATTEMPTS; attempt += 1) {
      const held = await resident.acquire(backend, filter.segments)
      if (held === undefined) break
      const result = await residentSearch(backend, { query, analyzed, options, limit, rankWindow, scope, filter, indexes: held.indexes, ...(shadowed === undefined ? {} : { shadowed }) })
      if (await resident.unchanged(backend, held)) return result
    }
  }
  // A call stands for its result only when the result itself passes every filter asked for.
  const foldCalls = (options.roles === undefined || options.roles.includes('tool'))
    && options.timeFrom === undefined && options.timeTo === undefined && options.checkpointId === undefined
  // asked for tool rows, the calls are read too: a result is found by its call's arguments ("5433"
  // in a psql command) as it is unfiltered, and a call left without its result is dropped below
  const callsToo = foldCalls && options.roles !== undefined && options.roles.length > 0 && !options.roles.includes('assistant')
  const candidates: MessageFilter = callsToo ? { ...filter, roles: [...filter.roles ?? [], 'assistant'] } : filter
  const pool = Math.max(CANDIDATE_POOL, limit * 5)
  const leading = Math.max(PAIRING_POOL, limit * 3)
  const list = (index: 'words' | 'grams', terms: readonly string[], operator: 'and' | 'or'): IndexQuery | undefined =>
    terms.length === 0 ? undefined : { ...candidates, index, terms, operator, limit: pool, rankWindow, order: 'newest', light: true }
  // how common each word is in this scope (not the store): picks the rare lists and weighs coverage
  // the query's words in the other language (glossary.ts), counted with the words in one call
  const bridges = bridgeTerms(analyzed.words, analyzed.literals)
  const counted = [...analyzed.words, ...bridges.map(bridge => bridge.index)]
  // the scope's size does not depend on the counts: both asked at once
  const [frequencies, searched] = await Promise.all([counted.length > 0 ? backend.documentFrequencies({ ...rows, index: 'words', terms: counted, cap: DF_CAP }) : [], scopeSize(backend, filter)])
  const scopeDf = frequencies.slice(0, analyzed.words.length)
  // a translation no message of the scope holds cannot cover anything
  const present = bridges.map((bridge, index) => ({ bridge, df: frequencies[analyzed.words.length + index] ?? 0 })).filter(entry => entry.df > 0)
  const bridged = present.toSorted((a, b) => a.df - b.df).slice(0, BRIDGE_LISTS).map(entry => entry.bridge)
  const rare = analyzed.words
    .map((word, index) => ({ word, df: scopeDf[index] ?? 0 }))
    .filter(entry => entry.df > 0 && coverageTerms([entry.word]).length > 0)
    .toSorted((a, b) => a.df - b.df)
    .slice(0, RARE_LISTS)
  // a time window also takes the messages that refer to one of its days, whenever said (days.ts)
  const days = windowDays(options.timeFrom, options.timeTo)
  const referring: IndexQuery | undefined = days === undefined || analyzed.words.length === 0 ? undefined
    : { ...withoutTime(filter), index: 'words', terms: analyzed.words.filter(word => coverageTerms([word]).length > 0), operator: 'or', limit: pool, rankWindow, order: 'newest', light: true, referredDays: days }
  const own = coverageTerms(analyzed.words)
  const weights = scopeWeights(own, analyzed.words, scopeDf, Math.max(1, searched), word => coverageTerms([word])[0])
  // translations cover part of their original's weight: extra terms, lighter than the words
  const bridgeWeight = bridgeWeights(present.map(entry => entry.bridge), own, weights)
  const terms = [...own, ...[...bridgeWeight.keys()].filter(term => !own.includes(term))]
  for (const [term, weight] of bridgeWeight) if (!own.includes(term)) weights.set(term, weight)
  // the words lists, read wide; only the candidates known to hold the most of the query are ranked
  // with what the counts say the scope holds (a list that will not fill is read the cheaper way)
  const dfOf = new Map<string, number>([...analyzed.words.map((word, index) => [word, scopeDf[index] ?? 0] as const), ...present.map(entry => [entry.bridge.index, entry.df] as const)])
  const wide = (asked: readonly string[], operator: 'and' | 'or'): IndexQuery | undefined => {
    if (asked.length === 0) return undefined
    const counts = asked.map(term => dfOf.get(term) ?? DF_CAP)
    const expected = operator === 'and' ? Math.min(...counts) : counts.reduce((sum, count) => sum + count, 0)
    return { ...candidates, index: 'words', terms: asked, operator, limit: pool * WIDE, rankWindow, order: 'newest', light: true, expected }
  }
  const anyWord = rare.length === 0 && analyzed.words.length > 0
  const [wordLists, [referred, grams]] = await Promise.all([
    memberCandidates(backend, [
      { name: 'all', query: analyzed.words.length > 1 ? wide(analyzed.words, 'and') : undefined, terms: own },
      ...rare.map(entry => ({ name: `rare:${entry.word}`, query: wide([entry.word], 'or'), terms: coverageTerms([entry.word]) })),
      ...bridged.map(bridge => ({ name: `bridge:${bridge.translation}`, query: wide([bridge.index], 'or'), terms: bridgeWeight.has(bridge.scan) ? [bridge.scan] : [] })),
      { name: 'any', query: anyWord ? wide(analyzed.words, 'or') : undefined, terms: [] },
    ], weights, leading * CHOSEN_SHARE),
    indexLists(backend, [referring, list('grams', analyzed.grams, 'or')]),
  ])
  const [all, ...byWord] = wordLists
  const lists = [
    all!,
    ...byWord.slice(0, rare.length + bridged.length),
    { name: 'grams', weight: 1, items: grams!.hits },
    ...(anyWord ? [byWord.at(-1)!] : []),
    { name: 'days', weight: 1, items: referred!.hits },
  ]
  const fused = fuseRankings(lists, hit => messageKey(hit.message), (a, b) => b.message.time - a.message.time || b.message.seq - a.message.seq)
  // every candidate scanned once, within one budget for all of them (budget.ts)
  const caps = scanCaps(fused.map(entry => entry.item.message.text.length))
  const single = new Map(fused.map((entry, at) => [entry.key, scanTerms(entry.item.message.text, terms, caps[at])]))
  // a winner's passage is found in the scan its ranking used (unless its full read is another text,
  // or the budget cut that scan: a passage must show where the words are, at most `limit` rescans)
  const texts = new Map(fused.map((entry, at) => [entry.key, caps[at]! < Math.min(entry.item.message.text.length, RANK_TEXT_CHARS) ? undefined : entry.item.message.text]))
  const scanOf = (row: ShadowMessage): TermScan => {
    const key = messageKey(row)
    return texts.get(key) === row.text ? single.get(key)! : scanTerms(row.text, terms)
  }
  // Pair for the leading candidates only: pairing reads a partner row each, and a candidate far
  // down on its own coverage does not reach the top by its partner.
  const pairable = new Set(fused
    .map(entry => ({ key: entry.key, covered: single.get(entry.key)!.covered.filter(Boolean).length, score: entry.score }))
    .toSorted((a, b) => b.covered - a.covered || b.score - a.score)
    .slice(0, leading)
    .map(entry => entry.key))
  const folded = await callUnits(backend, fused, segments, foldCalls, pairable)
  const called = callsToo ? folded.filter(unit => options.roles!.includes(unit.message.role)) : folded
  const units = options.roles === undefined && options.toolName === undefined && options.checkpointId === undefined
    ? await answerUnits(backend, called, segments, filter, pairable)
    : called
  // a history's key as the query wrote it: the literal holding all its words ("request_timeout"), else the words
  const label = (keyTerms: readonly string[]): string[] => {
    const words = keyTerms.map(term => analyzed.words.find(word => stem(word) === term) ?? term)
    const literal = analyzed.literals.find(piece => words.every(word => piece.includes(word)))
    return literal === undefined ? words : [literal.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')]
  }
  const ranked = orderByValueHistory(rankUnits(units, single, terms, weights, analyzed.literals, analyzed.recency), terms, weights, query, analyzed.literals, label)
  const winners = ranked.units.slice(0, limit).map(entry => entry.unit)
  const hits = await hitsOf(backend, winners, scope.lineage, terms, weights, analyzed.literals, scanOf)
  const known = new Map(analyzed.words.map((word, index) => [word, scopeDf[index] ?? 0]))
  const report = await termReport(backend, options.sessionId, analyzed.topics, hits, rows, exclusions, searched, known, present.map(entry => entry.bridge).filter(bridge => bridgeWeight.has(bridge.scan)))
  return {
    hits,
    coverage: { searched, matched: units.length, returned: hits.length },
    literals: analyzed.literals,
    terms: report,
    ...(ranked.history === undefined ? {} : { history: ranked.history }),
  }
}

/** Resident searches tried before the index lists answer, when writes keep landing during one. */
const RESIDENT_ATTEMPTS = 3

/** A filtered scope larger than this many messages is not counted row by row (coverage.searched is its size). */
const COUNTED_SCOPE = 20_000

/**
 * Messages in scope after the filters. The scope's own size is kept by every write (cheap); a
 * filter (roles, a tool, a time window, exclusions) is counted row by row, which on a large scope
 * reads every row (a store-wide role filter: 0.25 s at 1M on SQLite, 4 s at 10M on PostgreSQL,
 * every search): above COUNTED_SCOPE messages the scope's size stands for it. The count also
 * weighs the terms (idf), whose document counts are the scope's, unfiltered, either way.
 */
async function scopeSize(backend: ShadowBackend, filter: MessageFilter): Promise<number> {
  // a checkpoint's originals are counted by key (its shadowed seqs), never by reading the scope
  if (onlySegments(filter) || filter.elidedBy !== undefined) return backend.countMessages(filter)
  const total = await backend.countMessages({ segments: filter.segments })
  return total > COUNTED_SCOPE ? total : backend.countMessages(filter)
}

/**
 * Per query word: how many messages of the scope have it (no time or role filter: "never
 * discussed" is about the whole history the session can see) and how many hits.
 */
async function termReport(backend: ShadowBackend, asker: string, topics: readonly string[], hits: readonly SearchHit[], rows: ScopeRows, exclusions: Pick<MessageFilter, 'excludeSourceKinds' | 'excludeToolNames'>, searched: number, known: ReadonlyMap<string, number>, bridges: readonly BridgeTerm[]): Promise<QueryTermReport[]> {
  const words = topics.filter(topic => coverageTerms([topic]).length > 0)
  // CJK words of three or more characters are substrings of the indexed runs: count them in the grams index
  const long = (word: string): boolean => CJK.test(word) && [...word].length >= 3
  const count = async (index: 'words' | 'grams', list: readonly string[]): Promise<Map<string, number>> => {
    const numbers = list.length === 0 ? [] : await backend.documentFrequencies({ ...rows, index, terms: list, cap: DF_CAP })
    return new Map(list.map((word, at) => [word, numbers[at] ?? 0]))
  }
  // the words index counts were taken for the ranking already (same scope, same cap)
  const wordCounts = new Map([...known].filter(([word]) => words.includes(word) && !long(word)))
  const [fresh, gramCounts] = await Promise.all([count('words', words.filter(topic => !long(topic) && !known.has(topic))), count('grams', words.filter(long))])
  for (const [word, n] of fresh) wordCounts.set(word, n)
  const scopeTotal = Math.max(1, searched)
  // an ancestor's rows are seen below the fork point only; the index's counts take all of them
  const fork = rows.segments.some(segment => Number.isFinite(segment.belowSeq) && segment.sessionId !== asker)
  // each hit (with its call or question) scanned once for every reported word
  const stems = words.map(word => coverageTerms([word])[0] ?? stem(word))
  // a word's translations in scope (glossary.ts): a hit holding one answers the word too
  const translationsOf = (word: string): BridgeTerm[] => bridges.filter(bridge => (CJK.test(word) ? word.includes(bridge.source) || bridge.source.includes(word) : bridge.source === word))
  const held = new Map<string, Promise<boolean>>()
  const confirmed = async (found: readonly BridgeTerm[]): Promise<BridgeTerm[]> => {
    const checks = found.map(bridge => {
      if (!held.has(bridge.scan)) held.set(bridge.scan, Promise.resolve(backend.searchIndex({ ...rows, ...exclusions, index: 'words', terms: [bridge.index], operator: 'or', limit: 1, rankWindow: Number.POSITIVE_INFINITY, order: 'newest', light: true })).then(result => result.hits.length > 0))
      return held.get(bridge.scan)!
    })
    const kept = await Promise.all(checks)
    return found.filter((_, index) => kept[index])
  }
  const scanned = [...new Set([...stems, ...bridges.map(bridge => bridge.scan)])]
  // the hits' texts (with their calls and questions) within one scan budget (budget.ts)
  const hitTexts = hits.map(hit => [hit.message.text, hit.call?.text ?? '', hit.question?.text ?? ''])
  const hitCaps = scanCaps(hitTexts.flat().map(text => text.length))
  const hitScans = hitTexts.map((texts, at) => {
    const covered = new Set<string>()
    texts.forEach((text, which) => {
      if (text.length === 0) return
      scanTerms(text, scanned, hitCaps[at * 3 + which]).covered.forEach((found, index) => { if (found) covered.add(scanned[index]!) })
    })
    return covered
  })
  // the words' checks are independent: asked at once (one round trip in sequence on PostgreSQL, not one per word)
  return Promise.all(words.map(async (word, at): Promise<QueryTermReport> => {
    let inScope = (long(word) ? gramCounts : wordCounts).get(word) ?? 0
    // The count ignores exclusions and fork bounds: a small one is confirmed on the filtered rows,
    // and in a fork every one is (else a fork learns what its parent said after the fork point).
    // Fewer rows than asked for is the exact count; a fork's count above FORK_COUNT_LIMIT stays the index's.
    if (inScope > 0 && (fork || inScope <= 3)) {
      const limit = fork ? Math.min(inScope, FORK_COUNT_LIMIT) : 1
      const found = await backend.searchIndex({ ...rows, ...exclusions, index: long(word) ? 'grams' : 'words', terms: [word], operator: 'or', limit, rankWindow: Number.POSITIVE_INFINITY, order: 'newest', light: true })
      if (found.hits.length < limit) inScope = found.hits.length
    }
    // the scope's counts behind `bridges` ignore fork bounds too: a reported translation is one
    // the searcher's own rows hold (else a fork hears what its parent said after the fork)
    const translations = inScope > 0 ? translationsOf(word) : await confirmed(translationsOf(word))
    const own = stems[at]!
    const inHits = hitScans.filter(covered => covered.has(own) || translations.some(bridge => covered.has(bridge.scan))).length
    return {
      term: word, inScope, inHits, distinctive: inScope === 0 || inScope <= DISTINCTIVE_FLOOR || inScope < scopeTotal * DISTINCTIVE_SHARE,
      ...(translations.length === 0 ? {} : { translations: [...new Set(translations.map(bridge => bridge.translation))] }),
    }
  }))
}
