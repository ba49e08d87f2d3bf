/**
 * A search scope over resident indexes: the lineage's sessions (the oldest ancestor below its fork
 * point first, the reader last: gids ascend with seqs, so a list's newest matches are at its end)
 * as one run of doc numbers ("gids"), their columns, the row filter as a predicate, and the doc
 * lists a search takes its candidates and counts from. Of one session seen whole (the usual scope)
 * the columns are the index's own, not copies.
 */
import type { MessageFilter } from '../backend.ts'
import type { ShadowMessage } from '../types.ts'
import { isCjkTerm, MAX_POSITIONS } from '../search/passage.ts'
import type { ValueMatch } from '../search/values.ts'
import { firstAtOrAbove } from '../sorted.ts'
import { ROLE_CODES, SINGLE_CALL } from './doc-flags.ts'
import type { Postings } from './term-lists.ts'
import type { SessionIndex } from './session-index.ts'
import { termLookup } from './terms.ts'

/** One session of the scope: its index and the docs it sees (below its bound). */
export interface ViewSegment {
  readonly index: SessionIndex
  /** Docs 0..below-1 are in scope. */
  readonly below: number
  /** The first gid of this segment's docs. */
  readonly offset: number
}

/**
 * Docs of a scope holding a term (ascending gids, the first `length` entries) and how often the
 * scan counts it in each. Of a single session these are the index's own lists, not copies: a
 * reader stops at `length` (rows appended since are past it).
 */
export interface Holders {
  readonly gids: readonly number[]
  readonly counts: readonly number[]
  readonly length: number
}

export class ScopeView {
  readonly segments: readonly ViewSegment[]
  /** Docs in scope (rows below each bound, with or without text). */
  readonly total: number
  readonly seq: Float64Array
  readonly time: Float64Array
  readonly length: Int32Array
  readonly role: Uint8Array
  readonly flags: Uint8Array
  /** Partners as gids (-1: none, or out of scope). */
  readonly callOf: Int32Array
  readonly resultOf: Int32Array
  readonly replyOf: Int32Array
  private readonly single: SessionIndex | undefined

  /** `indexes` in lineage order (the reader first, then each ancestor), as search.ts resolves it. */
  constructor(indexes: ReadonlyArray<{ readonly index: SessionIndex; readonly belowSeq: number }>) {
    let offset = 0
    const segments: ViewSegment[] = []
    // oldest first: laid out in lineage order, the reader's rows came first and a list's "newest"
    // matches (its end) were the root's, so a fork's own rows were cut by rankWindow first
    for (const { index, belowSeq } of indexes.toReversed()) {
      const below = index.docsBelow(belowSeq)
      segments.push({ index, below, offset })
      offset += below
    }
    this.segments = segments
    this.total = offset
    if (segments.length === 1) {
      const { index, below } = segments[0]!
      this.single = index
      this.seq = index.seq.view(below)
      this.time = index.time.view(below)
      this.length = index.length.view(below)
      this.role = index.role.view(below)
      this.flags = index.flags.view(below)
      this.callOf = index.callOf.view(below)
      this.resultOf = index.resultOf.view(below)
      this.replyOf = index.replyOf.view(below)
      return
    }
    this.single = undefined
    this.seq = new Float64Array(offset)
    this.time = new Float64Array(offset)
    this.length = new Int32Array(offset)
    this.role = new Uint8Array(offset)
    this.flags = new Uint8Array(offset)
    this.callOf = new Int32Array(offset)
    this.resultOf = new Int32Array(offset)
    this.replyOf = new Int32Array(offset)
    for (const { index, below, offset: at } of segments) {
      this.seq.set(index.seq.view(below), at)
      this.time.set(index.time.view(below), at)
      this.length.set(index.length.view(below), at)
      this.role.set(index.role.view(below), at)
      this.flags.set(index.flags.view(below), at)
      const shift = (from: Int32Array, to: Int32Array): void => {
        for (let doc = 0; doc < below; doc += 1) {
          const partner = from[doc]!
          to[at + doc] = partner >= 0 && partner < below ? at + partner : -1
        }
      }
      shift(index.callOf.view(below), this.callOf)
      shift(index.resultOf.view(below), this.resultOf)
      shift(index.replyOf.view(below), this.replyOf)
    }
    this.linkAcross()
  }

  /**
   * Partners across a fork point, which no one index knows: a question its ancestor asked last and
   * the reply its fork gave first, a call the ancestor made and the result the fork got (as the
   * index lists pair them, by seq and call id along the lineage).
   */
  private linkAcross(): void {
    const { segments, role, flags, callOf, resultOf, replyOf, seq } = this
    for (let at = 1; at < segments.length; at += 1) {
      const { offset, below } = segments[at]!
      // a reply: the first message of the other speaker within two seqs (session-index.ts link)
      for (let gid = offset; gid < offset + Math.min(below, 2); gid += 1) {
        for (let before = gid - 1; before >= Math.max(0, gid - 2) && before < offset; before -= 1) {
          if (seq[before]! < seq[gid]! - 2) break
          const asker = role[before]
          if (replyOf[before]! >= 0 || (asker !== ROLE_CODES.user && asker !== ROLE_CODES.assistant)) continue
          if ((asker === ROLE_CODES.user && role[gid] === ROLE_CODES.assistant) || (asker === ROLE_CODES.assistant && role[gid] === ROLE_CODES.user)) replyOf[before] = gid
        }
      }
    }
    for (let gid = 0; gid < this.total; gid += 1) {
      if ((flags[gid]! & SINGLE_CALL) === 0) continue
      // a result whose call an ancestor made: the latest such call before it
      if (role[gid] === ROLE_CODES.tool && callOf[gid]! < 0) callOf[gid] = this.callHolder(this.row(gid).callId!, gid, -1)
      // a call whose result came in a fork: the first such result after it
      else if (role[gid] === ROLE_CODES.assistant && resultOf[gid]! < 0) resultOf[gid] = this.callHolder(this.row(gid).callId!, gid, 1)
    }
  }

  /** The nearest doc of another segment holding this call id, before `gid` (an assistant call) or after it (a tool result). */
  private callHolder(callId: string, gid: number, direction: -1 | 1): number {
    const own = this.segments.indexOf(this.segmentOf(gid))
    for (let at = own + direction; at >= 0 && at < this.segments.length; at += direction) {
      const { index, below, offset } = this.segments[at]!
      const docs = index.callDocs(callId)
      const wanted = direction < 0 ? ROLE_CODES.assistant : ROLE_CODES.tool
      for (let next = direction < 0 ? docs.length - 1 : 0; next >= 0 && next < docs.length; next += direction) {
        const doc = docs[next]!
        if (doc < below && index.role.get(doc) === wanted && index.rows[doc]!.callId === callId) return offset + doc
      }
    }
    return -1
  }

  row(gid: number): ShadowMessage {
    if (this.single !== undefined) return this.single.rows[gid]!
    const segment = this.segmentOf(gid)
    return segment.index.rows[gid - segment.offset]!
  }

  lowerText(gid: number): string {
    if (this.single !== undefined) return this.single.lowerText(gid)
    const segment = this.segmentOf(gid)
    return segment.index.lowerText(gid - segment.offset)
  }

  fullRow(gid: number): ShadowMessage {
    const segment = this.segmentOf(gid)
    return segment.index.fullRow(gid - segment.offset)
  }

  valuesOf(gid: number): readonly ValueMatch[] | undefined {
    if (this.single !== undefined) return this.single.valuesOf(gid)
    const segment = this.segmentOf(gid)
    return segment.index.valuesOf(gid - segment.offset)
  }

  segmentOf(gid: number): ViewSegment {
    const segments = this.segments
    if (segments.length === 1) return segments[0]!
    for (const segment of segments) if (gid < segment.offset + segment.below) return segment
    throw new Error(`resident scope: no doc ${gid}`)
  }

  /** Keys a scan may count differently in this doc (terms.ts); undefined for nearly every doc. */
  oddKeys(gid: number): readonly string[] | undefined {
    if (this.single !== undefined) return this.single.hasOdd ? this.single.oddKeys(gid) : undefined
    const segment = this.segmentOf(gid)
    return segment.index.oddKeys(gid - segment.offset)
  }

  /**
   * Every doc of the scope whose scan counts `term`, ascending, with the count (a long CJK term is
   * narrowed by its character pairs, then counted in each text).
   */
  holders(term: string): Holders {
    const lookup = termLookup(term, isCjkTerm(term))
    const listOf = (index: SessionIndex): Postings | undefined => (lookup.kind === 'cjk-long' ? index.longPostings(term, lookup.pairs) : index.postings(lookup.key))
    if (this.single !== undefined) {
      const list = listOf(this.single)
      if (list === undefined) return { gids: [], counts: [], length: 0 }
      return { gids: list.docs, counts: list.counts, length: firstAtOrAbove(list.docs, this.segments[0]!.below) }
    }
    const gids: number[] = []
    const counts: number[] = []
    for (const { index, below, offset } of this.segments) {
      const list = listOf(index)
      if (list === undefined) continue
      const end = firstAtOrAbove(list.docs, below)
      for (let at = 0; at < end; at += 1) {
        gids.push(offset + list.docs[at]!)
        counts.push(list.counts[at]!)
      }
    }
    return { gids, counts, length: gids.length }
  }

  /** Marks (1) the docs holding any of the substring terms in an anchor (lowercased terms of 3+ characters); `listed` takes the gids newly marked. */
  markSubstrings(terms: readonly string[], marks: Uint8Array, listed?: number[]): void {
    for (const { index, below, offset } of this.segments) {
      for (const term of terms) index.markSubstring(term, marks, offset, below, listed)
    }
  }

  /** Marks (1) the docs referring to any of these days. */
  markDays(days: readonly number[], marks: Uint8Array): void {
    for (const { index, below, offset } of this.segments) {
      for (const day of days) for (const doc of index.dayDocs(day)) if (doc < below) marks[offset + doc] = 1
    }
  }
}

/**
 * The row filter of a MessageFilter as a predicate on resident rows (what `filterSql` asks of a
 * stored row, its lineage part excepted: the view holds the lineage). `shadowed`: the seqs of the
 * checkpoint an `elidedBy` filter names (its shadowed seqs, as the backends read them).
 */
export function rowPredicate(filter: MessageFilter, shadowed: ReadonlySet<number> | undefined): (row: ShadowMessage) => boolean {
  const roles = filter.roles !== undefined && filter.roles.length > 0 ? new Set<string>(filter.roles) : undefined
  const kinds = filter.excludeSourceKinds !== undefined && filter.excludeSourceKinds.length > 0 ? new Set(filter.excludeSourceKinds) : undefined
  const tools = filter.excludeToolNames !== undefined && filter.excludeToolNames.length > 0 ? new Set(filter.excludeToolNames) : undefined
  const { fromSeq, toSeq, timeFrom, timeTo, toolName, elidedBy } = filter
  return row => {
    if (fromSeq !== undefined && row.seq < fromSeq) return false
    if (toSeq !== undefined && row.seq > toSeq) return false
    if (timeFrom !== undefined && row.time < timeFrom) return false
    if (timeTo !== undefined && row.time > timeTo) return false
    if (roles !== undefined && !roles.has(row.role)) return false
    if (toolName !== undefined && row.toolName !== toolName && !(row.toolName !== null && ` ${row.toolName} `.includes(` ${toolName} `))) return false
    if (elidedBy !== undefined && (shadowed === undefined || !shadowed.has(row.seq))) return false
    if (kinds !== undefined && kinds.has(row.sourceKind)) return false
    if (tools !== undefined && tools.has(row.toolName ?? '')) return false
    return true
  }
}

/**
 * Whether the scan of a doc whose terms the lists count so (`counts[base + term]`; `cjk[term]`: a
 * CJK term) may stop recording positions: more than MAX_POSITIONS in all, or a CJK term's at its
 * own cap (MAX_POSITIONS over the CJK terms: passage.ts scanTerms). Under both, the positions the
 * scan records are the counts (resident/terms.ts); past one, the doc is counted again.
 */
export function mayPassCap(counts: ArrayLike<number>, base: number, cjk: readonly boolean[]): boolean {
  // one pass (it runs for every candidate doc): the highest CJK count against the CJK terms' cap
  let sum = 0
  let cjkTerms = 0
  let cjkMost = 0
  for (let term = 0; term < cjk.length; term += 1) {
    const count = counts[base + term]!
    sum += count
    if (cjk[term]) {
      cjkTerms += 1
      if (count > cjkMost) cjkMost = count
    }
  }
  return sum > MAX_POSITIONS || (cjkTerms > 0 && cjkMost >= MAX_POSITIONS / cjkTerms)
}
