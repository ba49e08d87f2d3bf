/**
 * SessionIndex: one session's rows in memory with an inverted index over what a search scan
 * counts (resident/terms.ts), its substring anchors, call links and referred days. Rows are held
 * in seq order (a row's position is its doc number); the lists hold doc numbers ascending, so the
 * newest matches are at their ends and a fork bound is a binary search. What a search reads of
 * every match (seq, time, length, role, flags, its call, result and reply) is kept in columns.
 * A row that lost its text (retention) stays as a row without index entries: it is still a call
 * partner and a seq.
 *
 * A row is added in one pass over its text (resident/text-scan.ts); its postings, like its anchors'
 * docs and trigrams (resident/anchors.ts), are filed in batches, settled before a list is read
 * (tests/resident-build.test.ts holds the result equal to the straightforward build's).
 *
 * It answers only what a search asks (resident/engine.ts); it never decides what is current:
 * the registry keeps it in step with the store (resident/registry.ts).
 */
import { CANDIDATE_TEXT_CHARS } from '../backend.ts'
import { MAX_INDEXED_CHARS } from '../analyzer.ts'
import { unpackEventJson } from '../event-json.ts'
import { DAY_SCAN_CHARS, referredDays } from '../days.ts'
import type { ShadowMessage, ShadowRole } from '../types.ts'
import { SHORT_REPLY_CHARS } from '../search/values.ts'
import { AnchorIndex } from './anchors.ts'
import { Column, float64, int32, uint8 } from './columns.ts'
import { firstAtOrAbove } from '../sorted.ts'
import { EXACT_ENTRIES, intersect, listAdd, sortedBy } from './lists.ts'
import { ENTRY_BYTES, INDEX_BYTES, KEY_BYTES, MAP_BYTES, MAP_ENTRY_BYTES, PIECE_BYTES, ROW_BYTES, stringBytes } from './memory.ts'
import { MAX_TRIPLE_BYTES, NO_TOKENS, packedCopy, packTriples, TokenReader } from './tokens.ts'
import { CJK_KEY, countOccurrences, scanPieces, scanSample, type Piece, type PieceCache } from './terms.ts'
import { CJK_COUNTED, classOf, IntScratch, PIECE_ODD, PIECE_PARTS, PieceTable, TextScan } from './text-scan.ts'
import { isCjkTerm, MAX_POSITIONS, RANK_TEXT_CHARS, type TermPosition, type TermScan } from '../search/passage.ts'
import { valueMatches, valueMatchesAt, type ValueMatch } from '../search/values.ts'


/** Event JSON in its stored form (event-json.ts `packEventJson`). */
export type StoredEvent = Uint8Array | string

/** Bytes per chunk of kept (packed) tokens, at most (the first ones are smaller: a short session holds few). */
const TOKEN_CHUNK = 1 << 18
/** Characters of a cut row's tail listed in one pass (below RANK_TEXT_CHARS, where the pass cuts its sample). */
const TAIL_PIECE = 128_000
/** A word the light read's cut split is listed whole from its start, up to this far back. */
const SPLIT_WORD_CHARS = 256
const FIRST_TOKEN_CHUNK = 1 << 12

/** Pending postings (entries × 3) past which `settle` sorts them by key first. */
const SETTLE_SORTED = 3 * 1024

/**
 * The one-pass build's buffers for the message being added, shared by every index: append runs
 * through synchronously, one message at a time, so no index keeps buffers of its own between two
 * (each held ~150 KB, a session of a few messages a hundred times its rows).
 */
const shared = { scan: new TextScan(), triples: new IntScratch() }

/** A short list of postings at its exact size (lists.ts EXACT_ENTRIES): most keys stand in a doc or two. */
function fit(list: Postings): void {
  if (list.docs.length > EXACT_ENTRIES) return
  list.docs = list.docs.slice()
  list.counts = list.counts.slice()
}

/** List entries copied between two yields of `fitLists` (~10 ms). */
const FIT_SLICE = 256 * 1024

/** Long CJK terms whose postings are kept (longPostings); past it the memo starts over. */
const LONG_TERMS = 512

/** A question a short reply may answer (units.ts). */
const QUESTION = /[?？]|吗|呢/u
const NON_ASCII = /[^\p{ASCII}]/u

/** Per-doc flags. */
export const ASKS = 1
export const SHORT_REPLY = 2
export const LOWER_SHIFT = 4
/** Not in the index lists (its text was dropped by retention). */
export const UNLISTED = 8
/** Holds one call id (no space): a call or result that folds with its partner. */
export const SINGLE_CALL = 16
/** Its anchors may not hold every run of anchor characters of its text (analyzer.ts anchorView). */
export const ANCHORS_PARTIAL = 32

export const ROLE_CODES: Readonly<Record<ShadowRole, number>> = { user: 1, assistant: 2, tool: 3, system: 4 }

export interface Postings {
  /** Doc numbers, ascending (a short list is replaced by a copy at its size as it grows: read it from here). */
  docs: number[]
  /** How many times the scan counts the key in each doc (same order). */
  counts: number[]
}

export class SessionIndex {
  readonly sessionId: string
  readonly tag: string
  /** The store's revision of this session that these rows reflect (registry). */
  revision: number
  /** Rows in seq order, light: text cut as a candidate's, no event JSON. */
  readonly rows: ShadowMessage[] = []
  readonly seq = new Column(float64)
  readonly time = new Column(float64)
  /** Text length (characters): BM25's length. */
  readonly length = new Column(int32)
  readonly role = new Column(uint8)
  readonly flags = new Column(uint8)
  /** A result's call: the latest assistant message holding its call id before it (-1: none). */
  readonly callOf = new Column(int32)
  /** A single call's result: the first tool row with its call id after it (-1: none yet). */
  readonly resultOf = new Column(int32)
  /** A question's next message of the other speaker within two seqs (-1: none). */
  readonly replyOf = new Column(int32)
  private readonly termIds = new Map<string, number>()
  private readonly lists: Postings[] = []
  private readonly odd = new Map<number, readonly string[]>()
  /** Its substring anchors. */
  private readonly anchors: AnchorIndex
  private readonly calls = new Map<string, number[]>()
  private readonly days = new Map<number, number[]>()
  /** Bytes held (an estimate, resident/memory.ts), the pieces, anchors and build tables aside: `bytes`. */
  private held = 0
  /** The straightforward build (tests check the one-pass build against it). */
  private readonly reference: boolean
  /** The reference build's pieces (the one-pass build's are in its piece table). */
  private readonly pieceCache: PieceCache = new Map()
  private readonly pieceTable = new PieceTable()
  private readonly textScan = shared.scan
  /** Key ids of CJK characters by code point, and of pairs by their two (countCjk). */
  private readonly cjkChars = new Map<number, number>()
  private readonly cjkPairs = new Map<number, Map<number, number>>()
  private cjkPairCount = 0
  /** Per pair id of the message being counted: where its next occurrence stops overlapping. */
  private readonly cjkFree = new Map<number, number>()
  /** Per doc: its event JSON as stored (the text spliced out: a few dozen bytes). */
  private readonly events: StoredEvent[] = []
  /** Per doc: its text lowercased (the same string when lowercasing changes nothing). */
  private readonly lowers: string[] = []
  /** Per doc: its Latin pieces and camelCase parts as (key id × 2 + part, at, length) triples. */
  private readonly tokens: Uint8Array[] = []
  /**
   * Per doc: its values (values.ts valueMatches) packed as "at value" lines, undefined when it
   * states none (a ValueMatch object took ~50 bytes: a log of numbers held 20 times its text).
   */
  private readonly values: Array<string | undefined> = []
  /** Key id → term index for the terms of the scan being made (-1 elsewhere): see `scans`. */
  private readonly slots = new Column(int32)
  /** The message being added's token triples. */
  private readonly triples = shared.triples
  /** Where kept triples go (keptTriples), and the values of chunks made that hold none (the estimate counts them). */
  private chunk = new Uint8Array(0)
  private chunkUsed = 0
  private chunkSlack = 0
  /** Key ids that are the whole of some camelCase piece: its parts count only when the whole is no query term. */
  private readonly camelWholes = new Set<number>()
  private readonly long = new Map<string, Postings & { upTo: number }>()
  /** Per doc with a tail (`append`): the tail's CJK runs, NFKC-folded, each ended by a NUL (a long CJK term is looked for there too). */
  private readonly tailCjk = new Map<number, string>()
  private readonly scratch = new Column(int32)
  private readonly touched: number[] = []
  /** Keys listed at a count of 0 for the doc being added (listFolded). */
  private readonly folded: number[] = []
  /** Postings not yet in their lists, as (key id, doc, count) in doc order: `settle` moves them. */
  private readonly pending = new IntScratch(64)

  /** `build`: 'reference' for the straightforward build (tests compare the two). */
  constructor(sessionId: string, tag: string, revision: number, build: 'fast' | 'reference' = 'fast') {
    this.sessionId = sessionId
    this.tag = tag
    this.revision = revision
    this.reference = build === 'reference'
    this.anchors = new AnchorIndex(this.reference)
  }

  get size(): number {
    return this.rows.length
  }

  /** Bytes this index is taken to hold (the registry's budget). */
  get bytes(): number {
    // what waits is filed first (the anchors file theirs: a new anchor's trigrams are counted as they
    // are filed), so its buffers go: the registry asks after every page a build reads
    this.settle()
    const cjk = (this.cjkChars.size + this.cjkPairCount) * MAP_ENTRY_BYTES + this.cjkPairs.size * MAP_BYTES
    return INDEX_BYTES + this.held + cjk + this.chunkSlack + this.anchors.bytes + this.ownBuildingBytes()
  }

  /**
   * Bytes of `bytes` that are the build's own tables (its pieces, what waits to be filed): they
   * go when it is over (`built`), so a build is not stopped for them; bounded (PIECES_HELD pieces).
   */
  get buildingBytes(): number {
    return this.ownBuildingBytes() + this.anchors.buildingBytes
  }

  /** The build's tables this index holds itself (the anchors count theirs): its pieces, its pending postings. */
  private ownBuildingBytes(): number {
    return (this.pieceCache.size + this.pieceTable.size) * PIECE_BYTES + this.pieceTable.bytes + this.pending.bytes
  }

  get lastSeq(): number {
    return this.rows.length === 0 ? -1 : this.seq.get(this.rows.length - 1)
  }

  /**
   * Add a row after every row held (its seq above the last): `row` as a light read gives it (text
   * cut at CANDIDATE_TEXT_CHARS, no event JSON), `event` its event JSON as stored (event-json.ts).
   * `tail`: of a row the light read cut, its text from the cut to what the index lists hold
   * (`textTail`): its keys listed at a count of 0 and its anchors held, so the message is found by
   * a word only its tail holds, as the index lists find it (the scan, and so the ranking, sees the cut text).
   */
  append(row: ShadowMessage, event: StoredEvent, tail?: string): void {
    if (row.seq <= this.lastSeq) throw new Error(`resident index: row ${row.seq} is not after ${this.lastSeq}`)
    const doc = this.rows.length
    this.rows.push(row)
    this.events.push(event)
    this.held += ROW_BYTES + (typeof event === 'string' ? stringBytes(event) : event.byteLength) + stringBytes(row.text)
    this.seq.push(row.seq)
    this.time.push(row.time)
    this.length.push(row.text.length)
    this.role.push(ROLE_CODES[row.role] ?? 0)
    this.callOf.push(-1)
    this.resultOf.push(-1)
    this.replyOf.push(-1)
    let flags = 0
    if ((row.role === 'user' || row.role === 'assistant') && QUESTION.test(row.text)) flags |= ASKS
    if (row.callId === null && row.text.length <= SHORT_REPLY_CHARS && row.text.trim().length > 0) flags |= SHORT_REPLY
    if (row.callId !== null && !row.callId.includes(' ')) flags |= SINGLE_CALL
    this.link(doc, row, flags)
    if (row.callId !== null) for (const id of row.callId.split(' ')) if (id.length > 0) this.held += listAdd(this.calls, id, doc, true)
    const lower = row.text.toLowerCase()
    this.lowers.push(lower === row.text ? row.text : lower)
    if (lower !== row.text) this.held += stringBytes(lower)
    if (row.expiredAt !== null) {
      this.flags.push(flags | UNLISTED)
      this.tokens.push(NO_TOKENS)
      this.values.push(undefined)
      return
    }
    if (this.reference) flags |= this.indexReference(doc, row)
    else flags |= this.indexText(doc, row, lower)
    if (tail !== undefined) this.listTail(doc, tail)
    this.fileListed(doc)
    this.flags.push(flags)
    for (const id of this.touched) {
      this.post(id, doc, this.scratch.get(id))
      this.scratch.set(id, 0)
    }
    this.touched.length = 0
  }

  /** A doc's entry in a key's list (the one-pass build files it later: `settle`). */
  private post(id: number, doc: number, count: number): void {
    if (this.reference) {
      const list = this.lists[id]!
      list.docs.push(doc)
      list.counts.push(count)
    } else this.pending.push3(id, doc, count)
    this.held += ENTRY_BYTES
  }

  /**
   * A text's tokens, counts, values and anchors from one pass over its chars (text-scan.ts);
   * returns its LOWER_SHIFT and ANCHORS_PARTIAL flags.
   */
  private indexText(doc: number, row: ShadowMessage, lower: string): number {
    const text = row.text
    const sample = scanSample(text)
    const scan = this.textScan
    scan.run(sample, this.pieceTable)
    const triples = this.triples
    triples.length = 0
    let odd: Set<string> | undefined
    const table = this.pieceTable
    const keyIds = table.keyIds
    const kinds = table.kinds
    const entries = scan.pieces.data
    const spans = scan.spans.data
    for (let index = 0; index < scan.pieces.length; index += 1) {
      const entry = entries[index]!
      const kind = entry >= 0 ? kinds[entry]! : table.kind(entry)
      const id = entry >= 0 ? keyIds[entry]! : -1
      // the usual piece: its key id known, no camelCase parts (the piece object is not read)
      if (id >= 0 && (kind & PIECE_PARTS) === 0) {
        this.count(id)
        triples.push3(id * 2, spans[index * 2]!, spans[index * 2 + 1]!)
      } else this.addPiece(this.resolved(entry), spans[index * 2]!, spans[index * 2 + 1]!)
      if ((kind & PIECE_ODD) !== 0) (odd ??= new Set()).add(table.piece(entry).whole)
    }
    let flags = 0
    if (scan.cjk) {
      // the text's own lowercase when the sample is the text (most are): not lowercased again
      const lowerSample = sample === text ? lower : sample.toLowerCase()
      if (lowerSample.length !== sample.length) flags |= LOWER_SHIFT
      this.countCjk(lowerSample, false)
    }
    const kept = this.keptTokens()
    this.tokens.push(kept)
    this.held += kept.length
    // VALUE tried only where a run of digits starts (the sample's are the text's unless it was cut)
    this.keepValues(sample.length === text.length ? valueMatchesAt(text, scan.numbers.data, scan.numbers.length) : valueMatches(text))
    if (odd !== undefined) this.odd.set(doc, [...odd])
    // a short ASCII text none of whose pieces can be part of a time word has none (days.ts timeCuePiece)
    if (scan.timeCue || scan.nonAscii || text.length > DAY_SCAN_CHARS) this.addDays(doc, row)
    const folded = scan.nonAscii ? sample.normalize('NFKC') : sample
    if (!this.anchors.addScanned(doc, text, sample, scan, folded !== sample)) flags |= ANCHORS_PARTIAL
    // last: the pass runs again, over the folded sample
    if (folded !== sample) this.listFolded(folded)
    return flags
  }

  /** The straightforward build `indexText` must equal (tests/resident-build.test.ts): the scan's own piece walk, analyzer.ts anchorView. */
  private indexReference(doc: number, row: ShadowMessage): number {
    const text = row.text
    this.triples.length = 0
    const found = scanPieces(text, this.pieceCache, (piece, at, length) => this.addPiece(piece, at, length), key => this.count(this.idOf(key)))
    const kept = packedCopy(this.triples.data, this.triples.length)
    this.tokens.push(kept)
    this.held += kept.length
    this.keepValues(valueMatches(text))
    if (NON_ASCII.test(text)) {
      const sample = scanSample(text)
      const folded = sample.normalize('NFKC')
      if (folded !== sample) this.listFolded(folded)
    }
    const complete = this.anchors.addView(doc, text)
    if (found.oddKeys.length > 0) this.odd.set(doc, found.oddKeys)
    this.addDays(doc, row)
    return (found.lowerShift ? LOWER_SHIFT : 0) | (complete ? 0 : ANCHORS_PARTIAL)
  }

  /** A doc's values, packed (`values`). */
  private keepValues(values: readonly ValueMatch[]): void {
    const packed = values.length === 0 ? undefined : values.map(value => `${value.at} ${value.value}`).join('\n')
    this.values.push(packed)
    if (packed !== undefined) this.held += stringBytes(packed)
  }

  /**
   * Keys the words index holds and the scan does not count (NFKC folds the text: fullwidth letters,
   * ligatures, halfwidth kana): listed with a count of 0, so the message is a candidate and counted
   * among a word's messages as the index lists find it ('ｐｏｏｌ' for pool), and ranks as they rank
   * it. `folded`: the scan's sample, NFKC-folded (where that changes it), or a piece of a cut row's
   * tail; `fileListed` files them. The one-pass build runs the pass over it (its findings for the
   * sample are read by then).
   */
  private listFolded(folded: string): void {
    if (this.reference) {
      scanPieces(folded, this.pieceCache, piece => {
        this.resolve(piece)
        this.listOnce(piece.id)
        for (const id of piece.partIds ?? []) this.listOnce(id)
      }, key => this.listOnce(this.idOf(key)))
    } else {
      const sample = scanSample(folded)
      const scan = this.textScan
      const table = this.pieceTable
      scan.run(sample, table)
      for (let index = 0; index < scan.pieces.length; index += 1) {
        const entry = scan.pieces.data[index]!
        const id = entry >= 0 ? table.keyIds[entry]! : -1
        if (id >= 0 && (table.kinds[entry]! & PIECE_PARTS) === 0) this.listOnce(id)
        else {
          const piece = this.resolved(entry)
          this.listOnce(piece.id)
          for (const part of piece.partIds ?? []) this.listOnce(part)
        }
      }
      if (scan.cjk) this.countCjk(sample.toLowerCase(), true)
    }
  }

  /**
   * A cut row's tail (`append`): its keys listed at a count of 0 (NFKC-folded, as the index lists
   * hold a text), its anchors held, its CJK runs kept; in pieces of at most TAIL_PIECE characters
   * (the pass cuts its sample at RANK_TEXT_CHARS), each ended at a space where it has one, else
   * overlapping the next by SPLIT_WORD_CHARS (a CJK pair or run across the end is whole in the next).
   */
  private listTail(doc: number, tail: string): void {
    for (const piece of tailPieces(tail, TAIL_PIECE)) {
      const folded = piece.normalize('NFKC')
      // NFKC may lengthen a piece past the sample's cut (㌀, ﷺ): then its folded form goes in pieces too
      for (const part of folded.length > RANK_TEXT_CHARS / 2 ? tailPieces(folded, TAIL_PIECE) : [folded]) this.listFolded(part)
      this.anchors.addView(doc, piece)
      const runs = folded.toLowerCase().replace(NOT_CJK, '\0')
      if (runs.length > 1) this.tailCjk.set(doc, (this.tailCjk.get(doc) ?? '') + runs + '\0')
    }
    const runs = this.tailCjk.get(doc)
    if (runs !== undefined) this.held += stringBytes(runs)
  }

  /** The keys listFolded listed for the doc being added, filed at a count of 0 (before `touched` is). */
  private fileListed(doc: number): void {
    for (const id of this.folded) {
      this.post(id, doc, 0)
      this.scratch.set(id, 0)
    }
    this.folded.length = 0
  }

  /** A key listed at a count of 0 for the doc being added (listFolded), unless the scan counts it there. */
  private listOnce(id: number): void {
    if (this.scratch.get(id) !== 0) return
    // marked (a count is never negative) until listFolded files it
    this.scratch.set(id, -1)
    this.folded.push(id)
  }

  /**
   * The tokens of the doc being added, packed (resident/tokens.ts) and kept: a view of a shared
   * chunk (a typed array of its own per message costs an allocation of its own, page faults included).
   */
  private keptTokens(): Uint8Array {
    const length = this.triples.length
    if (length === 0) return NO_TOKENS
    const most = (length / 3) * MAX_TRIPLE_BYTES
    if (most > TOKEN_CHUNK / 4) return packedCopy(this.triples.data, length)
    if (this.chunkUsed + most > this.chunk.length) {
      this.chunk = new Uint8Array(Math.min(TOKEN_CHUNK, Math.max(FIRST_TOKEN_CHUNK, this.chunk.length * 2, most)))
      this.chunkUsed = 0
      // the old chunk's tail is lost; the new chunk's is counted until it fills
      this.chunkSlack += this.chunk.length
    }
    const end = packTriples(this.triples.data, length, this.chunk, this.chunkUsed)
    const kept = this.chunk.subarray(this.chunkUsed, end)
    this.chunkSlack -= end - this.chunkUsed
    this.chunkUsed = end
    return kept
  }

  private addDays(doc: number, row: ShadowMessage): void {
    for (const day of referredDays(row.text, row.time)) this.held += listAdd(this.days, day, doc, true)
  }

  /** A piece's key ids in this index (its whole's, its camelCase parts'), worked out once per piece. */
  private resolve(piece: Piece): void {
    if (piece.id >= 0) return
    piece.id = this.idOf(piece.whole)
    if (piece.parts !== undefined) {
      piece.partIds = Int32Array.from(piece.parts, part => this.idOf(part.key))
      this.camelWholes.add(piece.id)
    }
  }

  /** The piece of a piece-table entry, its key ids given (and kept in the table for its next time). */
  private resolved(entry: number): Piece {
    const piece = this.pieceTable.piece(entry)
    this.resolve(piece)
    if (entry >= 0) this.pieceTable.keyIds[entry] = piece.id
    return piece
  }

  /** Count a piece (its camelCase parts where they differ from it) and keep where it is. */
  private addPiece(piece: Piece, at: number, length: number): void {
    this.resolve(piece)
    this.count(piece.id)
    const triples = this.triples
    triples.push3(piece.id * 2, at, length)
    const parts = piece.parts
    if (parts === undefined) return
    for (let index = 0; index < parts.length; index += 1) {
      const part = parts[index]!
      const id = piece.partIds![index]!
      if (id !== piece.id) this.count(id)
      triples.push3(id * 2 + 1, at + part.offset, part.length)
    }
  }

  /**
   * CJK characters and pairs of a lowercased sample as terms.ts countCjk counts them, by code
   * point (no key string made or hashed for one seen before); `listing`: listed (listOnce) instead.
   */
  private countCjk(lower: string, listing: boolean): void {
    const free = this.cjkFree
    free.clear()
    let previous = -1
    let previousAt = -1
    let previousWidth = 0
    for (let at = 0; at < lower.length;) {
      const code = lower.charCodeAt(at)
      if (code < 128) {
        previous = -1
        at += 1
        continue
      }
      const point = lower.codePointAt(at)!
      const width = point > 0xffff ? 2 : 1
      if ((classOf(point) & CJK_COUNTED) === 0) {
        previous = -1
        at += width
        continue
      }
      let id = this.cjkChars.get(point)
      if (id === undefined) {
        id = this.idOf(CJK_KEY + String.fromCodePoint(point))
        this.cjkChars.set(point, id)
      }
      if (listing) this.listOnce(id)
      else this.count(id)
      if (previous >= 0) {
        let pairs = this.cjkPairs.get(previous)
        if (pairs === undefined) this.cjkPairs.set(previous, pairs = new Map())
        let pair = pairs.get(point)
        if (pair === undefined) {
          pair = this.idOf(CJK_KEY + String.fromCodePoint(previous, point))
          pairs.set(point, pair)
          this.cjkPairCount += 1
        }
        if (listing) this.listOnce(pair)
        // a pair is counted as indexOf steps past each match: not where it overlaps the last one
        else if (previousAt >= (free.get(pair) ?? 0)) {
          this.count(pair)
          free.set(pair, previousAt + previousWidth + width)
        }
      }
      previous = point
      previousAt = at
      previousWidth = width
      at += width
    }
  }

  /** Call, result and reply links of a new doc (rows arrive in seq order: its partners before it are known). */
  private link(doc: number, row: ShadowMessage, flags: number): void {
    if ((flags & SINGLE_CALL) !== 0 && row.role === 'tool') {
      const holders = this.calls.get(row.callId!) ?? []
      for (let at = holders.length - 1; at >= 0; at -= 1) {
        if (this.role.get(holders[at]!) === ROLE_CODES.assistant) {
          this.callOf.set(doc, holders[at]!)
          break
        }
      }
      for (const other of holders) {
        if (this.role.get(other) === ROLE_CODES.assistant && this.resultOf.get(other) < 0 && this.rows[other]!.callId === row.callId) this.resultOf.set(other, doc)
      }
    }
    // the reply to a question within two seqs before: the first message of the other speaker after it
    const role = this.role.get(doc)
    for (let before = doc - 1; before >= 0 && before >= doc - 2; before -= 1) {
      if (this.seq.get(before) < row.seq - 2) break
      const asker = this.role.get(before)
      if (this.replyOf.get(before) >= 0 || (asker !== ROLE_CODES.user && asker !== ROLE_CODES.assistant)) continue
      if ((asker === ROLE_CODES.user && role === ROLE_CODES.assistant) || (asker === ROLE_CODES.assistant && role === ROLE_CODES.user)) this.replyOf.set(before, doc)
    }
  }

  private idOf(key: string): number {
    let id = this.termIds.get(key)
    if (id === undefined) {
      id = this.lists.length
      this.termIds.set(key, id)
      this.lists.push({ docs: [], counts: [] })
      this.scratch.push(0)
      this.slots.push(-1)
      this.held += KEY_BYTES + stringBytes(key)
    }
    return id
  }

  /**
   * Move the pending postings into their lists, grouped by key: a list is touched once per
   * settle, not once per doc it gains (appended as each doc came, between the rest of a build,
   * nearly every append was a cache miss). Before any list is read. A few postings (a delta's
   * rows) leave each short list they touch at its size; a build's pages do not (copying them at
   * every page took 12% of a cold build): its lists are copied at their size when it is over.
   */
  private settle(): void {
    const pending = this.pending
    if (pending.length === 0) return
    const data = pending.data
    const lists = this.lists
    if (pending.length < SETTLE_SORTED) {
      for (let at = 0; at < pending.length; at += 3) {
        const list = lists[data[at]!]!
        list.docs.push(data[at + 1]!)
        list.counts.push(data[at + 2]!)
        fit(list)
      }
    } else {
      const order = sortedBy(data, pending.length, 3, lists.length)
      for (let index = 0; index < order.length;) {
        const id = data[order[index]!]!
        const list = lists[id]!
        do {
          const at = order[index]!
          list.docs.push(data[at + 1]!)
          list.counts.push(data[at + 2]!)
          index += 1
        } while (index < order.length && data[order[index]!] === id)
      }
    }
    pending.clear()
  }

  private count(id: number): void {
    const now = this.scratch.get(id)
    if (now === 0) this.touched.push(id)
    this.scratch.set(id, now + 1)
  }

  /** A doc's text lowercased (an exact literal is looked for in it). */
  lowerText(doc: number): string {
    return this.lowers[doc]!
  }

  /**
   * A doc's row in full, as a read by key gives it: its event JSON put back together (a text the
   * light read cut stays cut, without event JSON, as a search shows such a winner).
   */
  fullRow(doc: number): ShadowMessage {
    const row = this.rows[doc]!
    if (row.text.length >= CANDIDATE_TEXT_CHARS || row.expiredAt !== null) return row
    return { ...row, eventJson: unpackEventJson(this.events[doc], row.text, row.time) }
  }

  /** A doc's values (values.ts valueMatches). */
  valuesOf(doc: number): readonly ValueMatch[] | undefined {
    return this.values[doc]?.split('\n').map(line => {
      const space = line.indexOf(' ')
      return { at: Number(line.slice(0, space)), value: line.slice(space + 1) }
    })
  }

  /**
   * `scanTerms(text, terms)` of each of these docs, from their stored tokens, as `make` asks: a
   * doc must be regular for these terms (no odd key among them: resident/unit-scans.ts scans the
   * others; a shifted lowercase places no CJK match, as the scan's does not); past the scan's position cap too, which it keeps
   * as the scan does (tests/resident-attack.test.ts). Synchronous: the key slots
   * are this index's, set for the terms and cleared before it returns.
   */
  scans<T>(terms: readonly string[], make: (scan: (doc: number) => TermScan) => T): T {
    return this.slotted(terms, cjk => {
      const slots = this.slots
      const reader = new TokenReader()
      return make(doc => {
        const covered = terms.map(() => false)
        const positions: TermPosition[] = []
        const tokens = reader
        tokens.start(this.tokens[doc]!)
        let wholeFound = false
        while (tokens.next()) {
          const code = tokens.code
          // a camelCase part is not counted where its whole matched (the scan's rule)
          const part = (code & 1) === 1
          if (part && wholeFound) continue
          const index = slots.get(code >> 1)
          if (!part) wholeFound = index >= 0
          if (index < 0) continue
          covered[index] = true
          if (positions.length < MAX_POSITIONS) positions.push({ at: tokens.at, length: tokens.length, term: index })
        }
        if (cjk.length > 0) {
          this.cjkMatches(doc, cjk, (index, at, length) => {
            covered[index] = true
            if (at >= 0 && positions.length < MAX_POSITIONS) positions.push({ at, length, term: index })
          })
          positions.sort((a, b) => a.at - b.at)
        }
        return { covered, positions, scanned: Math.min(this.rows[doc]!.text.length, RANK_TEXT_CHARS) }
      })
    })
  }

  /**
   * What `scans`' scan of a doc counts, its positions counted rather than made: `count(doc, out,
   * base)` writes at out[base + term] how many positions of the term the scan keeps (its cap
   * included), 0.5 for a term it covers with none kept. Same conditions as `scans`, but for a
   * doc whose lowercase shifted (LOWER_SHIFT): its CJK terms counted as the scan does then. A doc with
   * many matches (a log's repeated words) is recounted by every search: its thousands of position
   * objects took most of such a search's time, in the collector.
   */
  counts<T>(terms: readonly string[], make: (count: (doc: number, out: Float64Array, base: number) => void) => T): T {
    return this.slotted(terms, (cjk, slotted) => {
      const slots = this.slots
      const width = terms.length
      const covered = new Uint8Array(width)
      return make((doc, out, base) => {
        covered.fill(0)
        for (let index = 0; index < width; index += 1) out[base + index] = 0
        let kept = 0
        let coveredTokens = 0
        // the triples decoded here, the position and length skipped (tokens.ts TokenReader reads all three)
        const bytes = this.tokens[doc]!
        // no key of the terms is held here: no token can count
        const end = slotted === 0 ? 0 : bytes.length
        let offset = 0
        let wholeFound = false
        while (offset < end) {
          let byte = bytes[offset++]!
          let code = byte & 0x7f
          for (let scale = 128; (byte & 0x80) !== 0; scale *= 128) {
            byte = bytes[offset++]!
            code += (byte & 0x7f) * scale
          }
          while ((bytes[offset++]! & 0x80) !== 0);
          while ((bytes[offset++]! & 0x80) !== 0);
          // a camelCase part is not counted where its whole matched (the scan's rule)
          const part = (code & 1) === 1
          if (part && wholeFound) continue
          const index = slots.get(code >> 1)
          if (!part) wholeFound = index >= 0
          if (index < 0) continue
          if (covered[index] === 0) {
            covered[index] = 1
            coveredTokens += 1
          }
          if (kept < MAX_POSITIONS) {
            out[base + index]! += 1
            kept += 1
          } else if (coveredTokens === slotted) break // past the cap with every term covered: the rest changes nothing
        }
        if (cjk.length > 0) {
          this.cjkMatches(doc, cjk, (index, at) => {
            covered[index] = 1
            if (at >= 0 && kept < MAX_POSITIONS) {
              out[base + index]! += 1
              kept += 1
            }
          })
        }
        for (let index = 0; index < width; index += 1) if (covered[index] === 1 && out[base + index] === 0) out[base + index] = 0.5
      })
    })
  }

  /**
   * Run with the terms' key slots set (each key's slot its first term; `slotted` keys set), the CJK
   * terms apart (counted in the text): `scans` and `counts` read them, synchronously, and they are
   * cleared before this returns.
   */
  private slotted<T>(terms: readonly string[], run: (cjk: ReadonlyArray<{ term: string; index: number }>, slotted: number) => T): T {
    const slots = this.slots
    const set: number[] = []
    const cjk: Array<{ term: string; index: number }> = []
    terms.forEach((term, index) => {
      if (isCjkTerm(term)) {
        cjk.push({ term, index })
        return
      }
      const id = this.termIds.get(term)
      if (id !== undefined && slots.get(id) < 0) {
        slots.set(id, index)
        set.push(id)
      }
    })
    try {
      return run(cjk, set.length)
    } finally {
      for (const id of set) slots.set(id, -1)
    }
  }

  /**
   * The CJK terms' matches in a doc's scan sample, as passage.ts scanTerms finds them: `hit(term, at,
   * length)` per match, each term's own cap applied (the positions cap is the caller's); for a
   * lowercase of another length (LOWER_SHIFT) the scan places none: `hit(term, -1, 0)` once per
   * term held.
   */
  private cjkMatches(doc: number, cjk: ReadonlyArray<{ term: string; index: number }>, hit: (term: number, at: number, length: number) => void): void {
    const lower = this.sampleLower(doc)
    if ((this.flags.get(doc) & LOWER_SHIFT) !== 0) {
      for (const { term, index } of cjk) if (lower.includes(term)) hit(index, -1, 0)
      return
    }
    for (const { term, index } of cjk) {
      let found = 0
      for (let at = lower.indexOf(term); at !== -1 && found < MAX_POSITIONS / cjk.length; at = lower.indexOf(term, at + term.length)) {
        hit(index, at, term.length)
        found += 1
      }
    }
  }

  /** The scan's sample of a doc, lowercased: the held lowercase for most docs (no tool-call rendering, not cut). */
  private sampleLower(doc: number): string {
    const held = this.lowers[doc]!
    if (held.length <= RANK_TEXT_CHARS && !held.includes('[tool call ')) return held
    // the held lowercase cut as the sample is, unless lowercasing changed its length: then the sample's own
    return (this.flags.get(doc) & LOWER_SHIFT) === 0 ? scanSample(held) : scanSample(this.rows[doc]!.text).toLowerCase()
  }

  /** Metadata a write changed without changing the text (an elision mark). */
  mark(doc: number, row: ShadowMessage): void {
    this.rows[doc] = { ...this.rows[doc]!, elidedBy: row.elidedBy }
  }

  /** The doc of a seq, or -1. */
  docOf(seq: number): number {
    const at = this.docsBelow(seq)
    return at < this.rows.length && this.seq.get(at) === seq ? at : -1
  }

  /** Docs below this seq (a fork bound): the first doc at or above it. */
  docsBelow(seq: number): number {
    if (!Number.isFinite(seq)) return this.rows.length
    let low = 0
    let high = this.rows.length
    while (low < high) {
      const middle = (low + high) >> 1
      if (this.seq.get(middle) < seq) low = middle + 1
      else high = middle
    }
    return low
  }

  /**
   * The docs holding a CJK term of three or more characters and how often (counted in the text
   * among the docs holding all its character pairs), kept once asked and extended over rows
   * appended since: a common phrase is counted in its holders' texts once, not per search.
   */
  longPostings(term: string, pairs: readonly string[]): Postings {
    let memo = this.long.get(term)
    if (memo === undefined) {
      if (this.long.size >= LONG_TERMS) {
        for (const old of this.long.values()) this.held -= old.docs.length * ENTRY_BYTES
        this.long.clear()
      }
      memo = { docs: [], counts: [], upTo: 0 }
      this.long.set(term, memo)
    }
    if (memo.upTo < this.rows.length) {
      let docs: number[] | undefined
      for (const pair of pairs) {
        const list = this.postings(pair)?.docs ?? []
        const from = firstAtOrAbove(list, memo.upTo)
        docs = docs === undefined ? list.slice(from) : intersect(docs, list.slice(from))
        if (docs.length === 0) break
      }
      for (const doc of docs ?? []) {
        const sample = scanSample(this.rows[doc]!.text)
        const count = countOccurrences(sample, term)
        // held only once NFKC folds the text (halfwidth kana): a candidate at 0, as the pairs are (append)
        // or only a cut text's tail holds it (listTail): a candidate at 0 too
        if (count > 0 || (NON_ASCII.test(sample) && sample.normalize('NFKC').includes(term)) || this.tailCjk.get(doc)?.includes(term) === true) {
          memo.docs.push(doc)
          memo.counts.push(count)
          this.held += ENTRY_BYTES
        }
      }
      memo.upTo = this.rows.length
    }
    return memo
  }

  /**
   * A build or a delta is over: what waits is filed, and the build's tables go (its piece table, a
   * page's worth of pending postings): what is appended later is analysed with tables started small.
   */
  built(): void {
    this.settle()
    this.anchors.release()
    this.pending.release()
    this.pieceTable.release()
    this.pieceCache.clear()
  }

  /**
   * After a whole build (`built` first): every list copied at its size, once (V8 gives a pushed
   * list room for 17 values or half again its size: a third of the lists' heap; a delta's few rows
   * do not copy them again, `settle` fits the short ones they touch). A generator: it yields after
   * about `slice` entries (FIT_SLICE), so a background build lets other calls run (~65 ms for 10k messages).
   */
  *fitLists(slice = FIT_SLICE): Generator<void> {
    let copied = 0
    for (const list of this.lists) {
      list.docs = list.docs.slice()
      list.counts = list.counts.slice()
      copied += list.docs.length + 1
      if (copied >= slice) {
        copied = 0
        yield
      }
    }
    yield* this.anchors.fitLists(slice)
  }

  /** Forget the long CJK terms counted for searches (they are counted again when asked): room for the budget. */
  dropMemos(): void {
    for (const memo of this.long.values()) this.held -= memo.docs.length * ENTRY_BYTES
    this.long.clear()
  }

  /**
   * Whether a term is the whole key of some camelCase piece here: with another term of the same
   * query, a doc holding it may hold that term only as its part, which the scan does not count.
   */
  camelWhole(term: string): boolean {
    const id = this.termIds.get(term)
    return id !== undefined && this.camelWholes.has(id)
  }

  postings(key: string): Postings | undefined {
    this.settle()
    const id = this.termIds.get(key)
    return id === undefined ? undefined : this.lists[id]
  }

  /** Keys whose counts in this doc a scan may not reproduce; the map is empty in most sessions. */
  oddKeys(doc: number): readonly string[] | undefined {
    return this.odd.size === 0 ? undefined : this.odd.get(doc)
  }

  get hasOdd(): boolean {
    return this.odd.size > 0
  }

  /** Docs holding a call id (its result, and the assistant messages that made the call). */
  callDocs(callId: string): readonly number[] {
    return this.calls.get(callId) ?? []
  }

  /** Docs referring to this UTC day (days.ts). */
  dayDocs(day: number): readonly number[] {
    return this.days.get(day) ?? []
  }

  /** Mark (1) at `offset + doc` each doc below `below` with an anchor holding `term` (lowercased, at least 3 characters); `listed` takes the gids newly marked. */
  markSubstring(term: string, marks: Uint8Array, offset: number, below: number, listed?: number[]): void {
    this.anchors.markSubstring(term, marks, offset, below, listed)
  }
}

/**
 * The part of a row's full text a light read cut (`cutAt`: the light text's length) that the index
 * lists still hold (analyzer.ts MAX_INDEXED_CHARS), from the start of the word the cut split;
 * undefined when the light read did not cut it.
 */
export function textTail(full: string, cutAt: number): string | undefined {
  const end = Math.min(full.length, MAX_INDEXED_CHARS)
  if (cutAt >= end) return undefined
  // the word (or anchor) the cut split is listed whole, from its start; never from inside a surrogate pair
  const before = full.slice(Math.max(0, cutAt - SPLIT_WORD_CHARS), cutAt)
  let from = cutAt - (WORD_END.exec(before)?.[0].length ?? 0)
  if (from > 0 && isLowSurrogate(full, from)) from -= 1
  return full.slice(from, end)
}

/** Pieces of `text` of at most `size` characters (listTail), never split inside a surrogate pair. */
function tailPieces(text: string, size: number): string[] {
  if (text.length <= size) return [text]
  const pieces: string[] = []
  for (let from = 0; from < text.length;) {
    let to = Math.min(text.length, from + size)
    let next = to
    if (to < text.length) {
      const space = text.lastIndexOf(' ', to)
      if (space > from + SPLIT_WORD_CHARS) next = to = space
      else {
        if (isLowSurrogate(text, to)) to -= 1
        next = to - SPLIT_WORD_CHARS
        if (isLowSurrogate(text, next)) next -= 1
      }
    }
    pieces.push(text.slice(from, to))
    from = next
  }
  return pieces
}

function isLowSurrogate(text: string, at: number): boolean {
  const code = text.charCodeAt(at)
  return code >= 0xdc00 && code <= 0xdfff
}

/** The run of word and anchor characters (marks, astral letters too) that ends a string. */
const WORD_END = /[\p{L}\p{M}\p{N}_$./\\:-]+$/u
/** What is not a CJK letter (terms.ts CJK_CHAR), in runs. */
const NOT_CJK = /[^\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3005\u30fc]+/gu
