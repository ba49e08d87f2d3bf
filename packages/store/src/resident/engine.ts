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
import { isCjkTerm, MAX_POSITIONS, RANK_TEXT_CHARS, scanTerms, type TermScan } from '../search/passage.ts'
import { bucket, exactLiterals, orderByValueHistory, scopeWeights, type RankedUnit } from '../search/rank.ts'
import { coverageTerms, stem } from '../search/ranking.ts'
import type { QueryTermReport, SearchOptions, SearchResult } from '../search/types.ts'
import { messageKey, type SearchUnit } from '../search/units.ts'
import { intersect } from './lists.ts'
import { ANCHORS_PARTIAL, ASKS, LOWER_SHIFT, ROLE_CODES, SHORT_REPLY, SINGLE_CALL, type SessionIndex } from './session-index.ts'
import { leading } from './select.ts'
import { COUNT_LIMIT, rowPredicate, ScopeView, type Holders } from './view.ts'

/** BM25 as rank.ts computes it (textbook parameters, not fitted). */
const BM25_K1 = 1.2
const BM25_B = 0.75
/** Leading units a value history looks at (rank.ts HISTORY_POOL), and the recency band (RECENCY_BAND). */
const HISTORY_POOL = 20
const RECENCY_BAND = 0.6
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

type RowTest = ((row: ShadowMessage) => boolean) | undefined

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
  const total = view.total
  const slot = new Int32Array(total).fill(-1)
  const docs: number[] = []
  const add = (gid: number): void => {
    if (slot[gid]! < 0) {
      slot[gid] = docs.length
      docs.push(gid)
    }
  }
  const takeList = (gids: readonly number[], length: number, test: RowTest): void => {
    if (test === undefined) {
      for (let at = length - 1, taken = 0; at >= 0 && taken < rankWindow; at -= 1, taken += 1) add(gids[at]!)
      return
    }
    for (let at = length - 1, taken = 0; at >= 0 && taken < rankWindow; at -= 1) {
      if (!test(view.row(gids[at]!))) continue
      taken += 1
      add(gids[at]!)
    }
  }
  const takeMarks = (marks: Uint8Array, test: RowTest): void => {
    for (let gid = total - 1, taken = 0; gid >= 0 && taken < rankWindow; gid -= 1) {
      if (marks[gid] !== 1 || (test !== undefined && !test(view.row(gid)))) continue
      taken += 1
      add(gid)
    }
  }
  for (const term of terms) {
    const list = holders(term)
    takeList(list.gids, list.length, isCandidate)
  }
  const words = analyzed.words.map(word => holders(keyOf(word)))
  // every word (stopwords too), as the all-words list asks; and any word when no topic word is in
  // scope, as the lists read their 'any' list when no word has a rare list (search.ts anyWord: a
  // query of absent topics and present stopwords found nothing here, the stopwords' messages there)
  if (words.length > 1) {
    const rarest = words.reduce((a, b) => (b.length < a.length ? b : a))
    let all = rarest.gids.slice(0, rarest.length)
    for (const list of words) if (list !== rarest) all = intersect(all, list.gids, list.length)
    takeList(all, all.length, isCandidate)
  }
  if (words.length > 0 && !analyzed.words.some((word, at) => scopeDf[at]! > 0 && coverageTerms([word]).length > 0)) {
    const marks = new Uint8Array(total)
    for (const list of words) for (let at = 0; at < list.length; at += 1) marks[list.gids[at]!] = 1
    takeMarks(marks, isCandidate)
  }
  // the docs with an anchor holding each substring term, worked out once (an exact literal is one too)
  const substrings = new Map<string, Uint8Array>()
  const substringMarks = (term: string): Uint8Array => {
    let marks = substrings.get(term)
    if (marks === undefined) {
      marks = new Uint8Array(total)
      view.markSubstrings([term], marks)
      substrings.set(term, marks)
    }
    return marks
  }
  if (analyzed.grams.length > 0) {
    const marks = new Uint8Array(total)
    for (const term of analyzed.grams) {
      const holding = substringMarks(term)
      for (let gid = 0; gid < total; gid += 1) marks[gid]! |= holding[gid]!
    }
    takeMarks(marks, isCandidate)
  }
  const days = windowDays(options.timeFrom, options.timeTo)
  if (days !== undefined && own.length > 0) {
    const referring = new Uint8Array(total)
    view.markDays(days, referring)
    const marks = new Uint8Array(total)
    for (const term of own) {
      const list = holders(term)
      for (let at = 0; at < list.length; at += 1) if (referring[list.gids[at]!] === 1) marks[list.gids[at]!] = 1
    }
    takeMarks(marks, rowPredicate(withoutTime(candidateFilter), request.shadowed))
  }

  // ---- units: every call folded into its result, every question into its short reply ----------
  const answers = options.roles === undefined && options.toolName === undefined && options.checkpointId === undefined
  const replyFilter = withoutRoles(filter)
  const units = foldUnits(view, docs.slice(), add, foldCalls, answers, onlySegments(replyFilter) ? undefined : rowPredicate(replyFilter, request.shadowed))
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
  const ranked = rankUnits(view, table, terms, weights, analyzed, limit, substringMarks)
  // the scans the policy reads (value statements, passages): of the leading units' messages, from stored tokens
  const scanned = docScans(view, ranked.flatMap(unit => [units.rep[unit]!, units.call[unit]!, units.question[unit]!]).filter(gid => gid >= 0), slot, counts, terms)
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

/** Units as columns: representative doc, its call or question (gids, -1: none), kept or dropped. */
class Units {
  readonly rep: Int32Array
  readonly call: Int32Array
  readonly question: Int32Array
  size = 0
  private order: number[] | undefined

  constructor(capacity: number) {
    this.rep = new Int32Array(capacity)
    this.call = new Int32Array(capacity)
    this.question = new Int32Array(capacity)
  }

  push(rep: number, call: number, question: number): void {
    this.rep[this.size] = rep
    this.call[this.size] = call
    this.question[this.size] = question
    this.size += 1
  }

  /** Keep only the units that pass (their numbers stay; `ids` lists the kept ones). */
  keep(test: (unit: number) => boolean): void {
    this.order = this.ids().filter(test)
  }

  ids(): number[] {
    if (this.order === undefined) {
      const all: number[] = []
      for (let unit = 0; unit < this.size; unit += 1) all.push(unit)
      this.order = all
    }
    return this.order
  }

  get count(): number {
    return this.ids().length
  }
}

/**
 * Units of every candidate (units.ts, for all of them): an assistant message making one call
 * becomes its result's unit; a result comes with its call; a question asked by the user or the
 * assistant takes the short reply after it (the next message of the other speaker within two
 * seqs) when no other unit holds that reply. Partners that are not candidates are slotted (`add`).
 */
function foldUnits(view: ScopeView, candidates: readonly number[], add: (gid: number) => void, foldCalls: boolean, answers: boolean, replyTest: RowTest): Units {
  const count = candidates.length
  const reps = new Int32Array(count)
  const calls = new Int32Array(count).fill(-1)
  const { flags, role, resultOf, callOf } = view
  for (let at = 0; at < count; at += 1) {
    const gid = candidates[at]!
    reps[at] = gid
    if ((flags[gid]! & SINGLE_CALL) === 0) continue
    if (foldCalls && role[gid] === ROLE_CODES.assistant) {
      const result = resultOf[gid]!
      if (result >= 0) {
        reps[at] = result
        calls[at] = gid
        continue
      }
    }
    if (role[gid] === ROLE_CODES.tool && callOf[gid]! >= 0) calls[at] = callOf[gid]!
  }
  // a reply another unit stands for is not folded into a question (units.ts `taken`)
  const taken = new Uint8Array(view.total)
  for (let at = 0; at < count; at += 1) taken[reps[at]!] = 1
  const units = new Units(count)
  const seen = new Uint8Array(view.total)
  for (let at = 0; at < count; at += 1) {
    const rep = reps[at]!
    if (seen[rep] === 1) continue
    seen[rep] = 1
    const call = calls[at]!
    const reply = call < 0 && answers && (flags[rep]! & ASKS) !== 0 ? replyTo(view, rep, replyTest) : -1
    if (reply >= 0 && taken[reply] !== 1 && (flags[reply]! & SHORT_REPLY) !== 0) {
      taken[reply] = 1
      seen[reply] = 1
      add(reply)
      add(rep)
      units.push(reply, -1, rep)
    } else {
      add(rep)
      if (call >= 0) add(call)
      units.push(rep, call, -1)
    }
  }
  return units
}

/** The next message of the other speaker within two seqs of a question that passes the filter (-1: none). */
function replyTo(view: ScopeView, asker: number, test: RowTest): number {
  if (test === undefined) return view.replyOf[asker]!
  const other = view.role[asker] === ROLE_CODES.user ? ROLE_CODES.assistant : ROLE_CODES.user
  // gids ascend with seqs across a fork point too (view.ts): a fork's first message may answer its ancestor's last
  for (let next = asker + 1; next < view.total && view.seq[next]! <= view.seq[asker]! + 2; next += 1) {
    if (view.role[next] === other && test(view.row(next))) return next
  }
  return -1
}

/**
 * Docs whose counts the lists cannot give for this query (resident/terms.ts): counted again from
 * their stored tokens when one of the query's terms is the whole of a camelCase piece there (the
 * piece's parts then count only where it does not match whole) or the scan may have stopped
 * recording (COUNT_LIMIT: the stored tokens give the scan's own positions, cap included, at a
 * fraction of a scan of the text: 200 texts of 256 KB were scanned whole by every search that
 * matched them, a second apiece); scanned when a head is odd or the lowercase shifted with a CJK
 * term. Held without positions counts as 0.5: covered, no BM25.
 */
function scanWhereCountsFail(view: ScopeView, docs: readonly number[], counts: Float64Array, terms: readonly string[]): void {
  const width = terms.length
  if (width === 0) return
  const latin = new Set(terms.filter(term => !isCjkTerm(term)))
  const anyCjk = latin.size < terms.length
  // per segment: the query terms that are some camelCase piece's whole there
  const wholes = view.segments.map(segment => (latin.size < 2 ? [] : terms.flatMap((term, index) => (latin.has(term) && segment.index.camelWhole(term) ? [index] : []))))
  for (let position = 0; position < docs.length; position += 1) {
    const gid = docs[position]!
    const segment = view.segmentOf(gid)
    const base = position * width
    let sum = 0
    for (let index = 0; index < width; index += 1) sum += counts[base + index]!
    const odd = view.oddKeys(gid)
    const irregular = (anyCjk && (view.flags[gid]! & LOWER_SHIFT) !== 0) || (odd !== undefined && odd.some(key => latin.has(key)))
    const recount = !irregular && (sum >= COUNT_LIMIT || wholes[view.segments.indexOf(segment)]!.some(index => counts[base + index]! > 0))
    if (!irregular && !recount) continue
    const scan = irregular ? scanTerms(view.row(gid).text, terms) : segment.index.scans(terms, stored => stored(gid - segment.offset))
    for (let index = 0; index < width; index += 1) counts[base + index] = 0
    for (const found of scan.positions) counts[base + found.term]! += 1
    scan.covered.forEach((covered, index) => {
      if (covered && counts[base + index] === 0) counts[base + index] = 0.5
    })
  }
}

/** What ranking reads of each unit: its parts' counts added, its text length, its scores. */
class UnitTable {
  readonly units: Units
  private readonly width: number
  /** Per unit and term (unit × width + term): the scan's count in the unit's text (its parts added). */
  readonly counts: Float64Array
  readonly length: Float64Array
  readonly covered: Float64Array
  readonly bucket: Uint8Array
  readonly relevance: Float64Array
  /** Exact literals held; -1 until scored. */
  readonly literal: Int8Array

  constructor(units: Units, slot: Int32Array, docCounts: Float64Array, width: number) {
    this.units = units
    this.width = width
    const size = units.size
    const counts = new Float64Array(size * width)
    const { rep, call, question } = units
    for (let unit = 0; unit < size; unit += 1) {
      const base = unit * width
      const own = slot[rep[unit]!]! * width
      for (let index = 0; index < width; index += 1) counts[base + index] = docCounts[own + index]!
      // a unit has at most one partner: its call, or the question it answers
      const partner = call[unit]! >= 0 ? call[unit]! : question[unit]!
      if (partner >= 0) {
        const at = slot[partner]! * width
        for (let index = 0; index < width; index += 1) counts[base + index]! += docCounts[at + index]!
      }
    }
    this.counts = counts
    this.length = new Float64Array(size)
    this.covered = new Float64Array(size)
    this.bucket = new Uint8Array(size)
    this.relevance = new Float64Array(size)
    this.literal = new Int8Array(size).fill(-1)
  }

  /** The scan's count of term `index` in a unit's text (its parts added). */
  count(unit: number, index: number): number {
    return this.counts[unit * this.width + index]!
  }
}

/** The units in rankUnits' order (rank.ts); only as many as the result and a value history can reach. */
function rankUnits(view: ScopeView, table: UnitTable, terms: readonly string[], weights: ReadonlyMap<string, number>, analyzed: AnalyzedQuery, limit: number, substringMarks: (term: string) => Uint8Array): number[] {
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
/** A piece that holds one of these is an anchor's shape (ANCHOR_SHAPE) whatever run it sits in. */
const ANCHOR_MARK = /[\d_./\\:-]/
const CJK_LETTER = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

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
    return (gid: number) => marks[gid] === 1 || ((view.flags[gid]! & ANCHORS_PARTIAL) !== 0 && view.lowerText(gid).includes(literal))
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

/**
 * The scans of these docs (scanTerms of their texts), by message key: from their stored tokens,
 * or, for a doc the tokens cannot speak for (an odd key, a shifted lowercase with a CJK term),
 * from their text. All made before the search waits on anything: the key slots are the index's.
 */
function docScans(view: ScopeView, gids: readonly number[], slot: Int32Array, counts: Float64Array, terms: readonly string[]): Map<string, { readonly text: string; readonly scan: TermScan }> {
  const out = new Map<string, { readonly text: string; readonly scan: TermScan }>()
  const latin = new Set(terms.filter(term => !isCjkTerm(term)))
  const anyCjk = latin.size < terms.length
  const width = terms.length
  for (const segment of view.segments) {
    const mine = [...new Set(gids.filter(gid => gid >= segment.offset && gid < segment.offset + segment.below))]
    if (mine.length === 0) continue
    segment.index.scans(terms, stored => {
      for (const gid of mine) {
        const row = view.row(gid)
        const doc = gid - segment.offset
        const odd = segment.index.oddKeys(doc)
        const regular = !(anyCjk && (view.flags[gid]! & LOWER_SHIFT) !== 0) && !(odd !== undefined && odd.some(key => latin.has(key)))
        // a doc the counts already had to scan (scanWhereCountsFail) is irregular too
        const position = slot[gid]!
        let scannedBefore = false
        if (position >= 0) for (let index = 0; index < width; index += 1) if (counts[position * width + index] === 0.5) scannedBefore = true
        out.set(messageKey(row), { text: row.text, scan: regular && !scannedBefore ? stored(doc) : scanTerms(row.text, terms) })
      }
    })
  }
  return out
}

/** A ranked unit as the value history reads it: its scan and values, its parts' joined. */
function rankedUnit(view: ScopeView, units: Units, table: UnitTable, unit: number, terms: readonly string[], scanned: ReadonlyMap<string, { readonly text: string; readonly scan: TermScan }>): RankedUnit {
  const message = view.row(units.rep[unit]!)
  const call = units.call[unit]!
  const question = units.question[unit]!
  const partnerGid = call >= 0 ? call : question
  const partner = partnerGid >= 0 ? view.row(partnerGid) : undefined
  const text = partner === undefined ? message.text : `${partner.text}\n${message.text}`
  const searchUnit: SearchUnit = {
    message,
    ...(call >= 0 ? { call: partner! } : {}),
    ...(question >= 0 ? { question: partner! } : {}),
    text,
    score: table.covered[unit]!,
  }
  const own = scanned.get(messageKey(message))!.scan
  const ownValues = view.valuesOf(units.rep[unit]!)
  if (partner === undefined) return { unit: searchUnit, covered: table.covered[unit]!, scan: own, ...(ownValues === undefined ? { values: [] } : { values: ownValues }) }
  // joined by a line break, which no token, CJK match or value crosses (but a number the partner
  // ends with may take a unit the message begins with: then the values are found again)
  const first = scanned.get(messageKey(partner))!.scan
  // past the scan's cut or its position cap the joined scan is not the parts' (scanTerms decides)
  if (text.length > RANK_TEXT_CHARS || first.positions.length + own.positions.length >= MAX_POSITIONS) return { unit: searchUnit, covered: table.covered[unit]!, scan: scanTerms(text, terms) }
  const shift = partner.text.length + 1
  const positions = [...first.positions, ...own.positions.map(position => ({ ...position, at: position.at + shift }))]
  const scan: TermScan = { covered: first.covered.map((covered, index) => covered || own.covered[index] === true), positions, scanned: text.length }
  const partnerValues = view.valuesOf(partnerGid)
  if (/[0-9]$/.test(partner.text)) return { unit: searchUnit, covered: table.covered[unit]!, scan }
  const values = [...partnerValues ?? [], ...(ownValues ?? []).map(value => ({ ...value, at: value.at + shift }))]
  return { unit: searchUnit, covered: table.covered[unit]!, scan, values }
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
