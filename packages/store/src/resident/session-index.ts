/**
 * SessionIndex: one session's rows in memory with an inverted index over what a search scan
 * counts (resident/terms.ts), its substring anchors, call links and referred days. Rows are held
 * in seq order (a row's position is its doc number); the lists hold doc numbers ascending, so the
 * newest matches are at their ends and a fork bound is a binary search. What a search reads of
 * every match (seq, time, length, role, flags, its call, result and reply) is kept in columns.
 * A row that lost its text (retention) stays as a row without index entries: it is still a call
 * partner and a seq.
 *
 * A row is added in one pass over its text (resident/text-scan.ts); its postings and its new
 * anchors' trigrams are filed in batches, settled before a list is read (tests/resident-build.test.ts
 * holds the result equal to the straightforward build's).
 *
 * It answers only what a search asks (resident/engine.ts); it never decides what is current:
 * the registry keeps it in step with the store (resident/registry.ts).
 */
import { anchorView, MAX_ANCHOR_CHARS } from '../analyzer.ts'
import { CANDIDATE_TEXT_CHARS } from '../backend.ts'
import { unpackEventJson } from '../event-json.ts'
import { DAY_SCAN_CHARS, referredDays } from '../days.ts'
import type { ShadowMessage, ShadowRole } from '../types.ts'
import { SHORT_REPLY_CHARS } from '../search/values.ts'
import { Column, float64, int32, uint8 } from './columns.ts'
import { CJK_KEY, countOccurrences, scanPieces, scanSample, type Piece, type PieceCache } from './terms.ts'
import { ANCHOR_CJK, ANCHOR_NON_ASCII, CJK_COUNTED, classOf, IntScratch, PIECE_ODD, PIECE_PARTS, PieceTable, SpanTable, TextScan } from './text-scan.ts'
import { isCjkTerm, MAX_POSITIONS, RANK_TEXT_CHARS, type TermPosition, type TermScan } from '../search/passage.ts'
import { valueMatches, valueMatchesAt, type ValueMatch } from '../search/values.ts'

const NO_TOKENS = new Int32Array(0)

/** Event JSON in its stored form (event-json.ts `packEventJson`). */
export type StoredEvent = Uint8Array | string

/**
 * Texts up to this long take their anchors from the one-pass build: their anchors and CJK runs
 * (disjoint but for CJK runs inside a candidate) cannot reach MAX_ANCHOR_CHARS, so none is
 * dropped for the cap. Longer ones go through analyzer.ts anchorView.
 */
const FAST_ANCHOR_CHARS = Math.floor(MAX_ANCHOR_CHARS / 2) - 2

/** Int32 values per chunk of kept token triples, at most (the first ones are smaller: a short session holds few). */
const TOKEN_CHUNK = 1 << 16
const FIRST_TOKEN_CHUNK = 1 << 10

/** Pending postings (entries × 3) past which `settle` sorts them by key first. */
const SETTLE_SORTED = 3 * 1024

/**
 * The one-pass build's buffers for the message being added, shared by every index: append runs
 * through synchronously, one message at a time, so no index keeps buffers of its own between two
 * (each held ~150 KB, a session of a few messages a hundred times its rows).
 */
const shared = { scan: new TextScan(), triples: new IntScratch(), keyUnits: new Uint16Array(256) }

/** Long CJK terms whose postings are kept (longPostings); past it the memo starts over. */
const LONG_TERMS = 512

/** A question a short reply may answer (units.ts). */
const QUESTION = /[?？]|吗|呢/u
/** A string V8 cannot hold at one byte a character. */
const TWO_BYTE = /[\u0100-\uffff]/
const NON_ASCII = /[^\p{ASCII}]/u

/**
 * What the memory estimate (`bytes`) takes each part of an index to cost, measured with
 * process.memoryUsage() on sessions of prose, paths, numbers, dates, CJK and tool calls (Node 22,
 * x64): a row (its object and field strings, its event's and tokens' typed arrays, its columns),
 * a token (an Int32Array triple), a list entry (a doc and a count in two arrays), a key (its map
 * entry, lists and slots), an anchor (its string's map entry and doc list) and a trigram entry, a
 * piece the cache holds. Text is counted at its size as V8 holds it (one or two bytes a character).
 */
const ROW_BYTES = 700
const TOKEN_BYTES = 12
const ENTRY_BYTES = 16
const KEY_BYTES = 150
const ANCHOR_BYTES = 150
const GRAM_BYTES = 12
const PIECE_BYTES = 120
/** A Map entry of numbers, and a Map of a few (the one-pass build's CJK ids by code point), as V8 holds them. */
const MAP_ENTRY_BYTES = 40
const MAP_BYTES = 200
/** A pointer in an array. */
const SLOT_BYTES = 8
/** An index before its first row: its columns, maps and arrays at their first sizes (the build's tables counted apart). */
const INDEX_BYTES = 12_000

/** Bytes V8 takes for a string's characters. */
function stringBytes(text: string): number {
  return TWO_BYTE.test(text) ? text.length * 2 : text.length
}

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
  /** Doc numbers, ascending. */
  readonly docs: number[]
  /** How many times the scan counts the key in each doc (same order). */
  readonly counts: number[]
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
  /** Distinct lowercased anchors, their docs, and a trigram index over them. */
  private readonly anchors: string[] = []
  private readonly anchorIds = new Map<string, number>()
  private readonly anchorDocs: number[][] = []
  private readonly anchorGrams = new Map<string, number[]>()
  private readonly calls = new Map<string, number[]>()
  private readonly days = new Map<number, number[]>()
  /** Bytes held (an estimate, see ROW_BYTES), the pieces' aside: `bytes`. */
  private held = 0
  /** The straightforward build (tests check the one-pass build against it). */
  private readonly reference: boolean
  private readonly pieceCache: PieceCache = new Map()
  private readonly pieceTable = new PieceTable()
  private readonly textScan = shared.scan
  /**
   * Anchor ids by anchor (the one-pass build's anchorIds): a span of a text finds its anchor
   * with ASCII capitals folded, no substring made. A key is a lowercase string: no lowercasing
   * yields a character lowercasing changes, so a span holding one never folds to a key.
   */
  private readonly anchorTable = new SpanTable(true)
  /** Per anchor: 1 when its trigrams are taken from the anchor table's copy of it (ASCII), the last doc logged for it. */
  private readonly anchorAscii = new Column(uint8)
  private readonly anchorLast = new Column(int32)
  /** (anchor id, doc) pairs not yet in anchorDocs (settleAnchorDocs). */
  private readonly anchorLog = new IntScratch(64)
  /** Anchors whose trigrams are in anchorGrams (settleGrams). */
  private gramsUpTo = 0
  /** anchorGrams' lists by gram (the gram table's entry), found from a span of the anchor. */
  private readonly gramTable = new SpanTable(false)
  private readonly gramLists: number[][] = []
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
  private readonly tokens: Int32Array[] = []
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
  private chunk = new Int32Array(0)
  private chunkUsed = 0
  private chunkSlack = 0
  /** Key ids that are the whole of some camelCase piece: its parts count only when the whole is no query term. */
  private readonly camelWholes = new Set<number>()
  private readonly long = new Map<string, Postings & { upTo: number }>()
  private readonly scratch = new Column(int32)
  private readonly touched: number[] = []
  /** Postings not yet in their lists, as (key id, doc, count) in doc order: `settle` moves them. */
  private readonly pending = new IntScratch(64)

  /** `build`: 'reference' for the straightforward build (tests compare the two). */
  constructor(sessionId: string, tag: string, revision: number, build: 'fast' | 'reference' = 'fast') {
    this.sessionId = sessionId
    this.tag = tag
    this.revision = revision
    this.reference = build === 'reference'
  }

  get size(): number {
    return this.rows.length
  }

  /** Bytes this index is taken to hold (the registry's budget). */
  get bytes(): number {
    // what waits is filed first: a new anchor's trigrams are counted as they are filed, and the
    // buffers of what waits go (the registry asks after every page a build reads: they stay small)
    this.settleAll()
    return INDEX_BYTES + this.held + (this.pieceCache.size + this.pieceTable.size) * PIECE_BYTES + this.buildBytes()
  }

  /** What the one-pass build keeps besides the index: its tables, the lists waiting to be filed, token chunks' free room. */
  private buildBytes(): number {
    const tables = this.pieceTable.bytes + this.anchorTable.bytes + this.gramTable.bytes + this.gramLists.length * SLOT_BYTES
    const cjk = (this.cjkChars.size + this.cjkPairCount) * MAP_ENTRY_BYTES + this.cjkPairs.size * MAP_BYTES
    return tables + cjk + this.anchorAscii.bytes + this.anchorLast.bytes + this.pending.bytes + this.anchorLog.bytes + this.chunkSlack * 4
  }

  get lastSeq(): number {
    return this.rows.length === 0 ? -1 : this.seq.get(this.rows.length - 1)
  }

  /**
   * Add a row after every row held (its seq above the last): `row` as a light read gives it (text
   * cut at CANDIDATE_TEXT_CHARS, no event JSON), `event` its event JSON as stored (event-json.ts).
   */
  append(row: ShadowMessage, event: StoredEvent): void {
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
    if (row.callId !== null) for (const id of row.callId.split(' ')) if (id.length > 0) this.held += listAdd(this.calls, id, doc)
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
      } else {
        const piece = table.piece(entry)
        this.addPiece(piece, spans[index * 2]!, spans[index * 2 + 1]!)
        if (entry >= 0) keyIds[entry] = piece.id
      }
      if ((kind & PIECE_ODD) !== 0) (odd ??= new Set()).add(table.piece(entry).whole)
    }
    let flags = 0
    if (scan.cjk) {
      // the text's own lowercase when the sample is the text (most are): not lowercased again
      const lowerSample = sample === text ? lower : sample.toLowerCase()
      if (lowerSample.length !== sample.length) flags |= LOWER_SHIFT
      this.countCjk(lowerSample)
    }
    this.tokens.push(this.keptTriples())
    this.held += (triples.length / 3) * TOKEN_BYTES
    // VALUE tried only where a run of digits starts (the sample's are the text's unless it was cut)
    this.keepValues(sample.length === text.length ? valueMatchesAt(text, scan.numbers.data, scan.numbers.length) : valueMatches(text))
    const folded = scan.nonAscii ? sample.normalize('NFKC') : sample
    if (folded !== sample) this.listFolded(doc, folded)
    if (!this.anchorText(doc, text, sample, folded !== sample)) flags |= ANCHORS_PARTIAL
    if (odd !== undefined) this.odd.set(doc, [...odd])
    // a short ASCII text none of whose pieces can be part of a time word has none (days.ts timeCuePiece)
    if (scan.timeCue || scan.nonAscii || text.length > DAY_SCAN_CHARS) this.addDays(doc, row)
    return flags
  }

  /** The straightforward build `indexText` must equal (tests/resident-build.test.ts): the scan's own piece walk, analyzer.ts anchorView. */
  private indexReference(doc: number, row: ShadowMessage): number {
    const text = row.text
    this.triples.length = 0
    const found = scanPieces(text, this.pieceCache, (piece, at, length) => this.addPiece(piece, at, length), key => this.count(this.idOf(key)))
    this.tokens.push(this.triples.copy())
    this.held += (this.triples.length / 3) * TOKEN_BYTES
    this.keepValues(valueMatches(text))
    if (NON_ASCII.test(text)) {
      const sample = scanSample(text)
      const folded = sample.normalize('NFKC')
      if (folded !== sample) this.listFolded(doc, folded)
    }
    const anchored = anchorView(text)
    for (const anchor of anchored.anchors) this.addAnchor(anchor, doc)
    if (found.oddKeys.length > 0) this.odd.set(doc, found.oddKeys)
    this.addDays(doc, row)
    return (found.lowerShift ? LOWER_SHIFT : 0) | (anchored.complete ? 0 : ANCHORS_PARTIAL)
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
   * it. `folded`: the scan's sample, NFKC-folded (where that changes it); before `touched` is filed.
   */
  private listFolded(doc: number, folded: string): void {
    const listed = new Set<number>()
    scanPieces(folded, this.pieceCache, piece => {
      this.resolve(piece)
      listed.add(piece.id)
      for (const id of piece.partIds ?? []) listed.add(id)
    }, key => listed.add(this.idOf(key)))
    for (const id of listed) if (this.scratch.get(id) === 0) this.post(id, doc, 0)
  }

  /**
   * The triples of the doc being added, kept: a view of a shared chunk (a typed array of its own
   * per message costs an allocation of its own, page faults included).
   */
  private keptTriples(): Int32Array {
    const length = this.triples.length
    if (length === 0) return NO_TOKENS
    if (length > TOKEN_CHUNK / 4) return this.triples.copy()
    if (this.chunkUsed + length > this.chunk.length) {
      this.chunk = new Int32Array(Math.min(TOKEN_CHUNK, Math.max(FIRST_TOKEN_CHUNK, this.chunk.length * 2, length)))
      this.chunkUsed = 0
      // the old chunk's tail is lost; the new chunk's is counted until it fills
      this.chunkSlack += this.chunk.length
    }
    this.chunk.set(this.triples.data.subarray(0, length), this.chunkUsed)
    const kept = this.chunk.subarray(this.chunkUsed, this.chunkUsed + length)
    this.chunkUsed += length
    this.chunkSlack -= length
    return kept
  }

  private addDays(doc: number, row: ShadowMessage): void {
    for (const day of referredDays(row.text, row.time)) this.held += listAdd(this.days, day, doc)
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
   * point (no key string made or hashed for one seen before).
   */
  private countCjk(lower: string): void {
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
      this.count(id)
      if (previous >= 0) {
        let pairs = this.cjkPairs.get(previous)
        if (pairs === undefined) this.cjkPairs.set(previous, pairs = new Map())
        let pair = pairs.get(point)
        if (pair === undefined) {
          pair = this.idOf(CJK_KEY + String.fromCodePoint(previous, point))
          pairs.set(point, pair)
          this.cjkPairCount += 1
        }
        // a pair is counted as indexOf steps past each match: not where it overlaps the last one
        if (previousAt >= (free.get(pair) ?? 0)) {
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

  /**
   * The anchors of a text (analyzer.ts anchorView) from the pass's runs and candidates; whether
   * they are complete. anchorView itself where the pass cannot stand for it: NFKC would change
   * the text, or it is long enough for the anchors' size cap to drop one.
   */
  private anchorText(doc: number, text: string, sample: string, nfkcChanges: boolean): boolean {
    const scan = this.textScan
    if (text.length > FAST_ANCHOR_CHARS || nfkcChanges) {
      const anchored = anchorView(text)
      for (const anchor of anchored.anchors) this.addAnchor(anchor, doc)
      return anchored.complete
    }
    // the sample is the text with the tool-call rendering blanked: anchors of a blanked one are partial
    let complete = sample === text
    const units = scan.units
    const runs = scan.cjkRuns
    for (let at = 0; at < runs.length; at += 2) {
      const from = runs.data[at]!
      const to = runs.data[at + 1]!
      const known = this.anchorTable.find(units, from, to)
      if (known >= 0) this.anchorDoc(known, doc)
      else this.addAnchor(sample.slice(from, to).toLowerCase(), doc)
    }
    const candidates = scan.anchors
    const data = candidates.data
    for (let at = 0; at < candidates.length; at += 4) {
      const from = data[at]!
      const to = data[at + 1]!
      const flags = data[at + 3]!
      // a candidate holding a CJK letter is left out (analyzer.ts anchors)
      if ((flags & ANCHOR_CJK) !== 0) {
        complete = false
        continue
      }
      const known = this.anchorTable.findHashed(units, from, to, data[at + 2]!)
      if (known >= 0) this.anchorDoc(known, doc)
      // an ASCII span's lowercase is its folded units: a new anchor is made from the table's copy
      else if ((flags & ANCHOR_NON_ASCII) === 0) this.newAsciiAnchor(units, from, to, doc)
      // the table folds ASCII capitals only: a span whose lowercase changes more is looked up by its lowercase
      else this.addAnchor(sample.slice(from, to).toLowerCase(), doc)
    }
    return complete
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

  /** Everything the one-pass build keeps waiting, filed. */
  private settleAll(): void {
    if (this.reference) return
    this.settle()
    this.settleAnchorDocs()
    this.settleGrams()
  }

  /**
   * Move the pending postings into their lists, grouped by key: a list is touched once per
   * settle, not once per doc it gains (appended as each doc came, between the rest of a build,
   * nearly every append was a cache miss). Before any list is read.
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

  /** Add a doc to an anchor (lowercased), the anchor first if new. */
  private addAnchor(anchor: string, doc: number): void {
    if (this.reference) {
      let id = this.anchorIds.get(anchor)
      if (id === undefined) {
        id = this.anchors.length
        this.anchorIds.set(anchor, id)
        this.newAnchor(anchor, doc, false)
        this.gramsOf(anchor, id)
      } else this.anchorDoc(id, doc)
      return
    }
    // a key's units copied once (the tables read typed arrays only)
    if (shared.keyUnits.length < anchor.length) shared.keyUnits = new Uint16Array(anchor.length * 2)
    const units = shared.keyUnits
    let ascii = true
    for (let at = 0; at < anchor.length; at += 1) {
      const code = anchor.charCodeAt(at)
      units[at] = code
      if (code >= 128) ascii = false
    }
    const id = this.anchorTable.find(units, 0, anchor.length)
    if (id >= 0) {
      this.anchorDoc(id, doc)
      return
    }
    this.anchorTable.add(units, 0, anchor.length)
    this.newAnchor(anchor, doc, ascii)
  }

  /** A new anchor of an ASCII span (not in the anchor table): its string and trigrams from the table's lowercased copy. */
  private newAsciiAnchor(units: Uint16Array, from: number, to: number, doc: number): void {
    const start = this.anchorTable.start(this.anchorTable.add(units, from, to))
    // a flat string of its own (a slice of the text would keep the text and be another string representation)
    this.newAnchor(String.fromCharCode.apply(null, this.anchorTable.units.subarray(start, start + to - from) as unknown as number[]), doc, true)
  }

  /**
   * A new anchor, its id the next (in the one-pass build, the anchor table's entry just added).
   * `ascii`: its trigrams are taken from the table's copy of it (settleGrams).
   */
  private newAnchor(anchor: string, doc: number, ascii: boolean): void {
    const id = this.anchors.length
    this.anchors.push(anchor)
    this.held += ANCHOR_BYTES + stringBytes(anchor) + ENTRY_BYTES
    if (this.reference) {
      // most anchors stand in one doc (a number, a file:line): no room kept for more
      this.anchorDocs.push([doc])
      return
    }
    this.anchorAscii.push(ascii ? 1 : 0)
    this.anchorLast.push(doc)
    this.anchorLog.push2(id, doc)
  }

  /**
   * The trigrams of the anchors made since the last call, into anchorGrams: made in one go when a
   * substring is first looked for, the gram table and lists stay in cache (added as each anchor
   * came, between the rest of a build, nearly every gram was a cache miss).
   */
  private settleGrams(): void {
    const table = this.anchorTable
    for (let id = this.gramsUpTo; id < this.anchors.length; id += 1) {
      if (this.anchorAscii.get(id) === 1) this.addGrams(table.units, table.start(id), table.start(id + 1) - table.start(id), id)
      else this.gramsOf(this.anchors[id]!, id)
    }
    this.gramsUpTo = this.anchors.length
  }

  /**
   * The docs of each anchor logged since the last call, into anchorDocs, grouped by anchor (each
   * list touched once): as for the postings, appending as each doc came missed the cache.
   */
  private settleAnchorDocs(): void {
    const log = this.anchorLog
    if (log.length === 0) return
    const data = log.data
    const docs = this.anchorDocs
    const order = sortedBy(data, log.length, 2, this.anchors.length)
    for (let index = 0; index < order.length;) {
      const id = data[order[index]!]!
      // a new anchor (ids ascend here, each new one with its first doc logged) starts with that doc
      // alone: most anchors stand in one doc (an empty list takes room for 17 at its first push)
      if (id === docs.length) {
        docs.push([data[order[index]! + 1]!])
        index += 1
      }
      const list = docs[id]!
      for (; index < order.length && data[order[index]!] === id; index += 1) list.push(data[order[index]! + 1]!)
    }
    log.clear()
  }

  /** An ASCII anchor's trigrams (its 3-unit spans, in a table's copy) from the gram table: no gram string made for one seen before. */
  private addGrams(units: Uint16Array, start: number, length: number, id: number): void {
    for (let at = start; at + 3 <= start + length; at += 1) {
      const entry = this.gramTable.find(units, at, at + 3)
      let list: number[]
      if (entry >= 0) list = this.gramLists[entry]!
      else {
        const gram = String.fromCharCode(units[at]!, units[at + 1]!, units[at + 2]!)
        list = this.anchorGrams.get(gram) ?? []
        if (list.length === 0) {
          this.anchorGrams.set(gram, list)
          this.held += KEY_BYTES
        }
        this.gramTable.add(units, at, at + 3)
        this.gramLists.push(list)
      }
      // a gram repeated in the anchor is listed once (the id is already last); no list[-1] read (it makes the load megamorphic)
      if (list.length === 0 || list[list.length - 1] !== id) {
        list.push(id)
        this.held += ENTRY_BYTES + GRAM_BYTES
      }
    }
  }

  /** An anchor's trigrams from its string (the reference build's, and a non-ASCII anchor's). */
  private gramsOf(anchor: string, id: number): void {
    for (const gram of new Set(trigramsOf(anchor))) this.held += listAdd(this.anchorGrams, gram, id) + GRAM_BYTES
  }

  private anchorDoc(id: number, doc: number): void {
    if (this.reference ? this.anchorDocs[id]!.at(-1) === doc : this.anchorLast.get(id) === doc) return
    this.held += ENTRY_BYTES
    if (this.reference) this.anchorDocs[id]!.push(doc)
    else {
      this.anchorLast.set(id, doc)
      this.anchorLog.push2(id, doc)
    }
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
   * doc must be regular for these terms (no odd key among them, no shifted lowercase with a CJK
   * term: resident/engine.ts scans the others); past the scan's position cap too, which it keeps
   * as the scan does (tests/resident-attack.test.ts). Synchronous: the key slots
   * are this index's, set for the terms and cleared before it returns.
   */
  scans<T>(terms: readonly string[], make: (scan: (doc: number) => TermScan) => T): T {
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
    const scan = (doc: number): TermScan => {
      const covered = terms.map(() => false)
      const positions: TermPosition[] = []
      const tokens = this.tokens[doc]!
      let wholeFound = false
      for (let at = 0; at < tokens.length; at += 3) {
        const code = tokens[at]!
        const part = (code & 1) === 1
        if (!part) wholeFound = false
        else if (wholeFound) continue
        const index = slots.get(code >> 1)
        if (index < 0) continue
        if (!part) wholeFound = true
        covered[index] = true
        if (positions.length < MAX_POSITIONS) positions.push({ at: tokens[at + 1]!, length: tokens[at + 2]!, term: index })
      }
      if (cjk.length > 0) {
        // the scan's sample, lowercased: the text itself for most docs (no tool-call rendering, not cut)
        const held = this.lowers[doc]!
        const lower = held.length > RANK_TEXT_CHARS || held.includes('[tool call ') ? scanSample(held) : held
        for (const { term, index } of cjk) {
          let found = 0
          for (let at = lower.indexOf(term); at !== -1 && found < MAX_POSITIONS / cjk.length; at = lower.indexOf(term, at + term.length)) {
            covered[index] = true
            if (positions.length < MAX_POSITIONS) positions.push({ at, length: term.length, term: index })
            found += 1
          }
        }
        positions.sort((a, b) => a.at - b.at)
      }
      return { covered, positions, scanned: Math.min(this.rows[doc]!.text.length, RANK_TEXT_CHARS) }
    }
    try {
      return make(scan)
    } finally {
      for (const id of set) slots.set(id, -1)
    }
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
        if (count > 0 || (NON_ASCII.test(sample) && sample.normalize('NFKC').includes(term))) {
          memo.docs.push(doc)
          memo.counts.push(count)
          this.held += ENTRY_BYTES
        }
      }
      memo.upTo = this.rows.length
    }
    return memo
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

  /**
   * Mark (1) at `offset + doc` each doc below `below` with an anchor holding `term` (lowercased, at
   * least 3 characters). The anchors holding all the term's trigrams are found smallest list first,
   * a long list probed by binary search rather than walked.
   */
  markSubstring(term: string, marks: Uint8Array, offset: number, below: number): void {
    this.settleAll()
    const lists: number[][] = []
    for (const gram of new Set(trigramsOf(term))) {
      const list = this.anchorGrams.get(gram)
      if (list === undefined) return
      lists.push(list)
    }
    if (lists.length === 0) return
    lists.sort((a, b) => a.length - b.length)
    const anchors = this.anchors
    const anchorDocs = this.anchorDocs
    next: for (const id of lists[0]!) {
      for (let at = 1; at < lists.length; at += 1) {
        const list = lists[at]!
        const found = firstAtOrAbove(list, id)
        if (found === list.length || list[found] !== id) continue next
      }
      if (!anchors[id]!.includes(term)) continue
      const docs = anchorDocs[id]!
      for (let at = 0; at < docs.length; at += 1) {
        const doc = docs[at]!
        if (doc >= below) break
        marks[offset + doc] = 1
      }
    }
  }
}

/** First position in an ascending list whose value is at or above `bound`. */
export function firstAtOrAbove(list: readonly number[], bound: number): number {
  let low = 0
  let high = list.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (list[middle]! < bound) low = middle + 1
    else high = middle
  }
  return low
}

/** Add a value to a key's list (once in a row); the bytes that took (an entry, and a key when new). */
function listAdd<K>(map: Map<K, number[]>, key: K, value: number): number {
  const list = map.get(key)
  if (list === undefined) {
    map.set(key, [value])
    return KEY_BYTES + ENTRY_BYTES
  }
  if (list.at(-1) === value) return 0
  list.push(value)
  return ENTRY_BYTES
}

function trigramsOf(text: string): string[] {
  const chars = [...text]
  const grams: string[] = []
  for (let index = 0; index + 3 <= chars.length; index += 1) grams.push(chars[index]! + chars[index + 1]! + chars[index + 2]!)
  return grams
}

/**
 * The records of data[0, length) (`width` values each, the first a key below `keys`) ordered by
 * key, as offsets into `data`: a counting sort, stable (records of one key keep their order).
 */
function sortedBy(data: Int32Array, length: number, width: number, keys: number): Int32Array {
  const ends = new Int32Array(keys)
  for (let at = 0; at < length; at += width) ends[data[at]!] = ends[data[at]!]! + 1
  for (let key = 1; key < keys; key += 1) ends[key] = ends[key]! + ends[key - 1]!
  const order = new Int32Array(length / width)
  for (let at = length - width; at >= 0; at -= width) {
    const end = ends[data[at]!]! - 1
    ends[data[at]!] = end
    order[end] = at
  }
  return order
}

/** Intersection of two ascending lists (of `b`, its first `bLength` entries). */
export function intersect(a: readonly number[], b: readonly number[], bLength = b.length): number[] {
  const out: number[] = []
  for (let i = 0, j = 0; i < a.length && j < bLength;) {
    const x = a[i]!
    const y = b[j]!
    if (x === y) {
      out.push(x)
      i += 1
      j += 1
    } else if (x < y) i += 1
    else j += 1
  }
  return out
}
