/**
 * ResidentSearchEngine: the search of a lineage scope (a session and its fork ancestors) over its
 * resident indexes. The ranking policy is the store's (search/rank.ts): weighted coverage of the
 * query in buckets, exact literals, BM25, recency, value histories. What differs from the index
 * lists of a wide scope is only which messages are ranked: here every match in scope is (within
 * `rankWindow` newest matches per list), each scored from the counts its scan would make
 * (resident/terms.ts), so no candidate list cuts an older, better answer, and no text is scanned
 * but the few the policy reads (value statements, passages). Tool calls fold into their results,
 * and questions into their short replies, for every match, not only the leading ones.
 */
import type { AnalyzedQuery } from '../analyzer.ts'
import type { MessageFilter, ShadowBackend } from '../backend.ts'
import { windowDays, withoutTime } from '../days.ts'
import { onlySegments } from '../filter.ts'
import type { ResolvedScope } from '../scope.ts'
import type { ShadowMessage } from '../types.ts'
import { bridgeTerms, bridgeWeights, type BridgeTerm } from '../search/glossary.ts'
import { hitsFrom } from '../search/hits.ts'
import { isCjkTerm, scanTerms, type TermScan } from '../search/passage.ts'
import { orderByValueHistory, scopeWeights } from '../search/rank.ts'
import { coverageTerms, stem } from '../search/ranking.ts'
import type { QueryTermReport, SearchOptions, SearchResult } from '../search/types.ts'
import { messageKey } from '../search/units.ts'
import { CandidateSet, SubstringDocs, unionOf, type RowTest } from './candidates.ts'
import { intersect } from './lists.ts'
import { rankUnits } from './rank-units.ts'
import { ROLE_CODES } from './doc-flags.ts'
import type { SessionIndex } from './session-index.ts'
import { foldUnits, UnitTable } from './unit-table.ts'
import { docScans, rankedUnit, scanWhereCountsFail } from './unit-scans.ts'
import { rowPredicate, ScopeView, type Holders } from './view.ts'

/** A filtered scope larger than this is not counted row by row (search.ts COUNTED_SCOPE). */
const COUNTED_SCOPE = 20_000
/** A word in under this share of the scope, or in at most this many messages, is distinctive (search.ts). */
const DISTINCTIVE_SHARE = 0.05
const DISTINCTIVE_FLOOR = 3
const NONE: Holders = { gids: [], counts: [], length: 0 }

export interface ResidentQuery {
  readonly query: string
  readonly analyzed: AnalyzedQuery
  readonly options: SearchOptions
  readonly limit: number
  readonly rankWindow: number
  readonly scope: ResolvedScope
  /** The row filter as search.ts builds it (segments narrowed to a checkpoint's history, if asked). */
  readonly filter: MessageFilter
  /** The resident index of each session of `filter.segments` (same order). */
  readonly indexes: readonly SessionIndex[]
  /** The shadowed seqs of the checkpoint `filter.elidedBy` names. */
  readonly shadowed?: ReadonlySet<number>
}

export async function residentSearch(backend: ShadowBackend, request: ResidentQuery): Promise<SearchResult> {
  const { analyzed, options, limit, rankWindow, filter } = request
  const view = new ScopeView(request.indexes.map((index, at) => ({ index, belowSeq: filter.segments[at]!.belowSeq })))
  const foldCalls = (options.roles === undefined || options.roles.includes('tool'))
    && options.timeFrom === undefined && options.timeTo === undefined && options.checkpointId === undefined
  // asked for tool rows, the calls are candidates too (a result found by its call's arguments), then dropped without one
  const callsToo = foldCalls && options.roles !== undefined && options.roles.length > 0 && !options.roles.includes('assistant')
  const candidateFilter: MessageFilter = callsToo ? { ...filter, roles: [...filter.roles ?? [], 'assistant'] } : filter
  const isCandidate: RowTest = onlySegments(candidateFilter) ? undefined : rowPredicate(candidateFilter, request.shadowed)

  const asked = new Map<string, Holders>()
  const holders = (term: string): Holders => {
    let found = asked.get(term)
    if (found === undefined) asked.set(term, found = term.length === 0 ? NONE : view.holders(term))
    return found
  }
  const keyOf = (word: string): string => coverageTerms([word])[0] ?? stem(word)
  const own = coverageTerms(analyzed.words)
  const bridges = bridgeTerms(analyzed.words, analyzed.literals)
  const searched = scopeCount(view, filter, request.shadowed)
  const scopeDf = analyzed.words.map(word => holders(keyOf(word)).length)
  const present = bridges.map(bridge => ({ bridge, df: holders(bridge.scan).length })).filter(entry => entry.df > 0)
  const weights = scopeWeights(own, analyzed.words, scopeDf, Math.max(1, searched), word => coverageTerms([word])[0])
  const bridgeWeight = bridgeWeights(present.map(entry => entry.bridge), own, weights)
  const terms = [...own, ...[...bridgeWeight.keys()].filter(term => !own.includes(term))]
  for (const [term, weight] of bridgeWeight) if (!own.includes(term)) weights.set(term, weight)

  // ---- candidates: the newest rankWindow matches of each list that pass the filter --------------
  const candidates = new CandidateSet(view)
  for (const term of terms) candidates.takeNewest(holders(term), rankWindow, isCandidate)
  const words = analyzed.words.map(word => holders(keyOf(word)))
  // every word (stopwords too), as the all-words list asks; and any word when no topic word is in
  // scope, as the lists read their 'any' list when no word has a rare list (search.ts anyWord: a
  // query of absent topics and present stopwords found nothing here, the stopwords' messages there)
  if (words.length > 1) {
    const rarest = words.reduce((a, b) => (b.length < a.length ? b : a))
    let all = rarest.gids.slice(0, rarest.length)
    for (const list of words) if (list !== rarest) all = intersect(all, list.gids, list.length)
    candidates.takeNewest({ gids: all, length: all.length }, rankWindow, isCandidate)
  }
  if (words.length > 0 && !analyzed.words.some((word, at) => scopeDf[at]! > 0 && coverageTerms([word]).length > 0)) {
    candidates.takeNewest(unionOf(words), rankWindow, isCandidate)
  }
  // the docs with an anchor holding each substring term, worked out once (an exact literal is one too)
  const substrings = new SubstringDocs(view)
  // shortest first: a term holding one that no anchor holds is not looked for (SubstringDocs)
  if (analyzed.grams.length > 0) candidates.takeNewest(unionOf(analyzed.grams.toSorted((a, b) => a.length - b.length).map(term => substrings.of(term))), rankWindow, isCandidate)
  const days = windowDays(options.timeFrom, options.timeTo)
  if (days !== undefined && own.length > 0) {
    const referring = new Uint8Array(view.total)
    view.markDays(days, referring)
    const lists = own.map(term => {
      const list = holders(term)
      const gids: number[] = []
      for (let at = 0; at < list.length; at += 1) if (referring[list.gids[at]!] === 1) gids.push(list.gids[at]!)
      return { gids, length: gids.length }
    })
    candidates.takeNewest(unionOf(lists), rankWindow, rowPredicate(withoutTime(candidateFilter), request.shadowed))
  }
  const { slot, docs } = candidates

  // ---- units: every call folded into its result, every question into its short reply ----------
  const answers = options.roles === undefined && options.toolName === undefined && options.checkpointId === undefined
  const replyFilter = withoutRoles(filter)
  const units = foldUnits(view, docs.slice(), gid => candidates.add(gid), foldCalls, answers, onlySegments(replyFilter) ? undefined : rowPredicate(replyFilter, request.shadowed))
  if (callsToo) {
    const allowed = new Set(options.roles!.map(role => ROLE_CODES[role]))
    units.keep(unit => allowed.has(view.role[units.rep[unit]!]!))
  }

  // ---- what the scan of each slotted doc counts, from the term lists -------------------------------
  const width = terms.length
  const counts = new Float64Array(docs.length * width)
  terms.forEach((term, index) => {
    const list = holders(term)
    for (let at = 0; at < list.length; at += 1) {
      const position = slot[list.gids[at]!]!
      if (position >= 0) counts[position * width + index] = list.counts[at]!
    }
  })
  scanWhereCountsFail(view, docs, counts, terms)

  const table = new UnitTable(units, slot, counts, width)
  const ranked = rankUnits(view, table, terms, weights, analyzed, limit, term => substrings.of(term).marks)
  // the scans the policy reads (value statements, passages): of the leading units' messages, from stored tokens
  const scanned = docScans(view, ranked.flatMap(unit => [units.rep[unit]!, units.call[unit]!, units.question[unit]!]).filter(gid => gid >= 0), terms)
  // a winner read again is scanned from its tokens while its text is the one ranked
  const scanOf = (row: ShadowMessage): TermScan => {
    const known = scanned.get(messageKey(row))
    if (known !== undefined && known.text === row.text) return known.scan
    return scanTerms(row.text, terms)
  }
  const label = (keyTerms: readonly string[]): string[] => {
    const named = keyTerms.map(term => analyzed.words.find(word => stem(word) === term) ?? term)
    const literal = analyzed.literals.find(piece => named.every(word => piece.includes(word)))
    return literal === undefined ? named : [literal.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')]
  }
  const top = ranked.map(unit => rankedUnit(view, units, table, unit, terms, scanned))
  const gidOf = new Map<ShadowMessage, number>()
  ranked.forEach((unit, at) => {
    const made = top[at]!.unit
    gidOf.set(made.message, units.rep[unit]!)
    if (made.call !== undefined) gidOf.set(made.call, units.call[unit]!)
  })
  const ordered = orderByValueHistory(top, terms, weights, request.query, analyzed.literals, label)
  // the winners' rows as the index holds them (current as of the registry's sync at the search's start)
  const winners = ordered.units.slice(0, limit).map(entry => entry.unit).map(unit => ({
    unit,
    message: view.fullRow(gidOf.get(unit.message)!),
    call: unit.call === undefined ? undefined : view.fullRow(gidOf.get(unit.call)!),
    question: unit.question,
  }))
  // the report's counts are taken before the winners are read (an append meanwhile grows the lists)
  const report = termCounts(view, analyzed, terms, present.map(entry => entry.bridge).filter(bridge => bridgeWeight.has(bridge.scan)), holders, onlySegments(exclusionsOf(filter)) ? undefined : rowPredicate(exclusionsOf(filter), undefined), searched)
  const byMessage = new Map(ranked.map(unit => [messageKey(view.row(units.rep[unit]!)), unit]))
  const hits = await hitsFrom(backend, winners, request.scope.lineage, terms, weights, analyzed.literals, scanOf)
  const hitUnits = hits.map(hit => byMessage.get(messageKey(hit.message)))
  return {
    hits,
    coverage: { searched, matched: units.count, returned: hits.length },
    literals: analyzed.literals,
    terms: report.map(({ indexes, ...entry }) => ({ ...entry, inHits: hitUnits.filter(unit => unit !== undefined && indexes.some(index => table.count(unit, index) > 0)).length })),
    ...(ordered.history === undefined ? {} : { history: ordered.history }),
  }
}

/** Messages in scope after the filter, as search.ts counts them (a large filtered scope: its size). */
function scopeCount(view: ScopeView, filter: MessageFilter, shadowed: ReadonlySet<number> | undefined): number {
  if (onlySegments(filter)) return view.total
  if (view.total > COUNTED_SCOPE && filter.elidedBy === undefined) return view.total
  const passes = rowPredicate(filter, shadowed)
  let count = 0
  for (let gid = 0; gid < view.total; gid += 1) if (passes(view.row(gid))) count += 1
  return count
}

function withoutRoles(filter: MessageFilter): MessageFilter {
  const { roles: _roles, ...rest } = filter
  return rest
}

function exclusionsOf(filter: MessageFilter): MessageFilter {
  return {
    segments: filter.segments,
    ...(filter.excludeSourceKinds === undefined ? {} : { excludeSourceKinds: filter.excludeSourceKinds }),
    ...(filter.excludeToolNames === undefined ? {} : { excludeToolNames: filter.excludeToolNames }),
  }
}

/**
 * Per query word (search.ts termReport): messages of the scope holding it (exclusions applied,
 * no time or role filter; exact, not capped), and which scanned terms stand for it in the hits
 * (the word, its translations).
 */
function termCounts(view: ScopeView, analyzed: AnalyzedQuery, terms: readonly string[], bridges: readonly BridgeTerm[], holders: (term: string) => Holders, allowed: RowTest, searched: number): Array<Omit<QueryTermReport, 'inHits'> & { readonly indexes: number[] }> {
  const inScope = (term: string): number => {
    const list = holders(term)
    if (allowed === undefined) return list.length
    let count = 0
    for (let at = 0; at < list.length; at += 1) if (allowed(view.row(list.gids[at]!))) count += 1
    return count
  }
  const scopeTotal = Math.max(1, searched)
  const translationsOf = (word: string): BridgeTerm[] => bridges.filter(bridge => (isCjkTerm(word) ? word.includes(bridge.source) || bridge.source.includes(word) : bridge.source === word) && inScope(bridge.scan) > 0)
  return analyzed.topics.filter(topic => coverageTerms([topic]).length > 0).map(word => {
    const own = coverageTerms([word])[0]!
    const count = inScope(own)
    const translations = translationsOf(word)
    return {
      term: word, inScope: count, distinctive: count === 0 || count <= DISTINCTIVE_FLOOR || count < scopeTotal * DISTINCTIVE_SHARE,
      ...(translations.length === 0 ? {} : { translations: [...new Set(translations.map(bridge => bridge.translation))] }),
      indexes: [own, ...translations.map(bridge => bridge.scan)].map(term => terms.indexOf(term)).filter(index => index >= 0),
    }
  })
}
