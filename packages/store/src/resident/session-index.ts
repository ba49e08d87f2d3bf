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
 * Its parts, each in a module of its own: the keys and their postings (term-lists.ts), CJK
 * character and pair keys (cjk-keys.ts), long CJK terms counted once asked (long-terms.ts), the
 * packed tokens (tokens.ts) a search's scans read (doc-scans.ts), the anchors (anchors.ts), a cut
 * row's tail (tail.ts), the per-doc flags (doc-flags.ts).
 *
 * It answers only what a search asks (resident/engine.ts); it never decides what is current:
 * the registry keeps it in step with the store (resident/registry.ts).
 */
import { CANDIDATE_TEXT_CHARS } from '../backend.ts'
import { charBoundary, MAX_INDEXED_CHARS } from '../analyzer.ts'
import { unpackEventJson } from '../event-json.ts'
import { fold } from '../scripts.ts'
import { DAY_SCAN_CHARS, referredDays } from '../days.ts'
import type { ShadowMessage } from '../types.ts'
import { ANCHORS_PARTIAL, LOWER_SHIFT, ROLE_CODES, rowFlags, SINGLE_CALL, UNLISTED } from './doc-flags.ts'
import { AnchorIndex } from './anchors.ts'
import { Column, float64, int32, uint8 } from './columns.ts'
import { listAdd } from './lists.ts'
import { INDEX_BYTES, PIECE_BYTES, ROW_BYTES, stringBytes } from './memory.ts'
import { NO_TOKENS, packedCopy, TokenChunks } from './tokens.ts'
import { countOccurrences, scanPieces, scanSample, type Piece, type PieceCache } from './terms.ts'
import { IntScratch, PIECE_ODD, PIECE_PARTS, PieceTable, TextScan } from './text-scan.ts'
import { RANK_TEXT_CHARS, type TermScan } from '../search/passage.ts'
import { CjkKeys } from './cjk-keys.ts'
import { LongTerms } from './long-terms.ts'
import { countDocs, scanDocs, type ScannedDocs } from './doc-scans.ts'
import { cjkRuns, SPLIT_WORD_CHARS, tailPieces } from './tail.ts'
import { FIT_SLICE, TermLists, type Postings } from './term-lists.ts'
import { valueMatches, valueMatchesAt, type ValueMatch } from '../search/values.ts'

/** Event JSON in its stored form (event-json.ts `packEventJson`). */
export type StoredEvent = Uint8Array | string

/** Characters of a cut row's tail listed in one pass (below RANK_TEXT_CHARS, where the pass cuts its sample). */
const TAIL_PIECE = 128_000
/**
 * The one-pass build's buffers for the message being added, shared by every index: append runs
 * through synchronously, one message at a time, so no index keeps buffers of its own between two
 * (each held ~150 KB, a session of a few messages a hundred times its rows).
 */
const shared = { scan: new TextScan(), triples: new IntScratch() }

const NON_ASCII = /[^\p{ASCII}]/u

export class SessionIndex implements ScannedDocs {
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
  /** Its keys and their postings. */
  private readonly terms: TermLists
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
  /** Key ids of CJK characters and pairs by code point. */
  private readonly cjk: CjkKeys
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
  /** The message being added's token triples. */
  private readonly triples = shared.triples
  /** Where kept tokens go. */
  private readonly chunks = new TokenChunks()
  /** Key ids that are the whole of some camelCase piece: its parts count only when the whole is no query term. */
  private readonly camelWholes = new Set<number>()
  private readonly long = new LongTerms()
  /** Per doc with a tail (`append`): the tail's CJK runs, NFKC-folded, each ended by a NUL (a long CJK term is looked for there too). */
  private readonly tailCjk = new Map<number, string>()

  /** `build`: 'reference' for the straightforward build (tests compare the two). */
  constructor(sessionId: string, tag: string, revision: number, build: 'fast' | 'reference' = 'fast') {
    this.sessionId = sessionId
    this.tag = tag
    this.revision = revision
    this.reference = build === 'reference'
    this.anchors = new AnchorIndex(this.reference)
    this.terms = new TermLists(this.reference)
    this.cjk = new CjkKeys(this.terms)
  }

  get size(): number {
    return this.rows.length
  }

  /** Bytes this index is taken to hold (the registry's budget). */
  get bytes(): number {
    // what waits is filed first (the anchors file theirs: a new anchor's trigrams are counted as they
    // are filed), so its buffers go: the registry asks after every page a build reads
    this.terms.settle()
    return INDEX_BYTES + this.held + this.terms.bytes + this.cjk.bytes + this.long.bytes + this.chunks.slack + this.anchors.bytes + this.ownBuildingBytes()
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
    return (this.pieceCache.size + this.pieceTable.size) * PIECE_BYTES + this.pieceTable.bytes + this.terms.pendingBytes
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
    for (const step of this.appending(row, event, tail)) void step
  }

  /**
   * `append` in steps: a cut row's tail is listed a piece at a time, each step yielding the
   * characters it listed, so a build can let other calls run inside one long row (a 2M-character
   * message of distinct words held the thread 2.4 s). Between two steps the index is half-written:
   * only an index no search reads yet (a build's own) is appended to this way.
   */
  *appending(row: ShadowMessage, event: StoredEvent, tail?: string): Generator<number, void> {
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
    let flags = rowFlags(row)
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
    if (tail !== undefined) yield* this.listTail(doc, tail)
    this.terms.file(doc)
    this.flags.push(flags)
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
        this.terms.count(id)
        triples.push3(id * 2, spans[index * 2]!, spans[index * 2 + 1]!)
      } else this.addPiece(this.resolved(entry), spans[index * 2]!, spans[index * 2 + 1]!)
      if ((kind & PIECE_ODD) !== 0) (odd ??= new Set()).add(table.piece(entry).whole)
    }
    let flags = 0
    if (scan.cjk) {
      // the text's own lowercase when the sample is the text (most are): not lowercased again
      const lowerSample = sample === text ? lower : sample.toLowerCase()
      if (lowerSample.length !== sample.length) flags |= LOWER_SHIFT
      this.cjk.count(lowerSample, false)
    }
    const kept = this.chunks.keep(triples.data, triples.length)
    this.tokens.push(kept)
    this.held += kept.length
    // VALUE tried only where a run of digits starts (the sample's are the text's unless it was cut)
    this.keepValues(sample.length === text.length ? valueMatchesAt(text, scan.numbers.data, scan.numbers.length) : valueMatches(text))
    if (odd !== undefined) this.odd.set(doc, [...odd])
    // a short ASCII text none of whose pieces can be part of a time word has none (days.ts timeCuePiece)
    if (scan.timeCue || scan.nonAscii || text.length > DAY_SCAN_CHARS) this.addDays(doc, row)
    const folded = scan.nonAscii ? fold(sample) : sample
    if (!this.anchors.addScanned(doc, text, sample, scan, folded !== sample)) flags |= ANCHORS_PARTIAL
    // last: the pass runs again, over the folded sample
    if (folded !== sample) this.listFolded(folded)
    return flags
  }

  /** The straightforward build `indexText` must equal (tests/resident-build.test.ts): the scan's own piece walk, analyzer.ts anchorView. */
  private indexReference(doc: number, row: ShadowMessage): number {
    const text = row.text
    this.triples.length = 0
    const found = scanPieces(text, this.pieceCache, (piece, at, length) => this.addPiece(piece, at, length), key => this.terms.count(this.terms.idOf(key)))
    const kept = packedCopy(this.triples.data, this.triples.length)
    this.tokens.push(kept)
    this.held += kept.length
    this.keepValues(valueMatches(text))
    if (NON_ASCII.test(text)) {
      const sample = scanSample(text)
      const folded = fold(sample)
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
        this.terms.listOnce(piece.id)
        for (const id of piece.partIds ?? []) this.terms.listOnce(id)
      }, key => this.terms.listOnce(this.terms.idOf(key)))
    } else {
      const sample = scanSample(folded)
      const scan = this.textScan
      const table = this.pieceTable
      scan.run(sample, table)
      for (let index = 0; index < scan.pieces.length; index += 1) {
        const entry = scan.pieces.data[index]!
        const id = entry >= 0 ? table.keyIds[entry]! : -1
        if (id >= 0 && (table.kinds[entry]! & PIECE_PARTS) === 0) this.terms.listOnce(id)
        else {
          const piece = this.resolved(entry)
          this.terms.listOnce(piece.id)
          for (const part of piece.partIds ?? []) this.terms.listOnce(part)
        }
      }
      if (scan.cjk) this.cjk.count(sample.toLowerCase(), true)
    }
  }

  /**
   * A cut row's tail (`append`): its keys listed at a count of 0 (NFKC-folded, as the index lists
   * hold a text), its anchors held, its CJK runs kept; in pieces of at most TAIL_PIECE characters
   * (the pass cuts its sample at RANK_TEXT_CHARS), each ended at a space where it has one, else
   * overlapping the next by SPLIT_WORD_CHARS (a CJK pair or run across the end is whole in the next).
   */
  private *listTail(doc: number, tail: string): Generator<number, void> {
    // folded characters listed at most: the tail's own where NFKC does not lengthen it (2M ﷺ folded
    // to 31M characters listed, seconds for the first search after them; analyzer.ts cuts alike)
    let left = MAX_INDEXED_CHARS - CANDIDATE_TEXT_CHARS + SPLIT_WORD_CHARS
    for (const piece of tailPieces(tail, TAIL_PIECE)) {
      if (left <= 0) break
      let folded = fold(piece)
      if (folded.length > left) folded = folded.slice(0, charBoundary(folded, left))
      left -= folded.length
      // NFKC may lengthen a piece past the sample's cut (㌀, ﷺ): then its folded form goes in pieces too
      for (const part of folded.length > RANK_TEXT_CHARS / 2 ? tailPieces(folded, TAIL_PIECE) : [folded]) this.listFolded(part)
      this.anchors.addView(doc, piece)
      const runs = cjkRuns(folded)
      if (runs !== '') this.tailCjk.set(doc, (this.tailCjk.get(doc) ?? '') + runs)
      yield piece.length
    }
    const runs = this.tailCjk.get(doc)
    if (runs !== undefined) this.held += stringBytes(runs)
  }

  private addDays(doc: number, row: ShadowMessage): void {
    for (const day of referredDays(row.text, row.time)) this.held += listAdd(this.days, day, doc, true)
  }

  /** A piece's key ids in this index (its whole's, its camelCase parts'), worked out once per piece. */
  private resolve(piece: Piece): void {
    if (piece.id >= 0) return
    piece.id = this.terms.idOf(piece.whole)
    if (piece.parts !== undefined) {
      piece.partIds = Int32Array.from(piece.parts, part => this.terms.idOf(part.key))
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
    this.terms.count(piece.id)
    const triples = this.triples
    triples.push3(piece.id * 2, at, length)
    const parts = piece.parts
    if (parts === undefined) return
    for (let index = 0; index < parts.length; index += 1) {
      const part = parts[index]!
      const id = piece.partIds![index]!
      if (id !== piece.id) this.terms.count(id)
      triples.push3(id * 2 + 1, at + part.offset, part.length)
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

  /** `scanTerms` of each of these docs from their stored tokens (resident/doc-scans.ts scanDocs). */
  scans<T>(terms: readonly string[], make: (scan: (doc: number) => TermScan) => T): T {
    return scanDocs(this.terms, this, terms, make)
  }

  /** What `scans` counts, positions counted rather than made (resident/doc-scans.ts countDocs). */
  counts<T>(terms: readonly string[], make: (count: (doc: number, out: Float64Array, base: number) => void) => T): T {
    return countDocs(this.terms, this, terms, make)
  }

  tokensOf(doc: number): Uint8Array {
    return this.tokens[doc]!
  }

  shifted(doc: number): boolean {
    return (this.flags.get(doc) & LOWER_SHIFT) !== 0
  }

  textLength(doc: number): number {
    return this.rows[doc]!.text.length
  }

  /** The scan's sample of a doc, lowercased: the held lowercase for most docs (no tool-call rendering, not cut). */
  sampleLower(doc: number): string {
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

  /** The docs holding a CJK term of three or more characters and how often (resident/long-terms.ts). */
  longPostings(term: string, pairs: readonly string[]): Postings {
    return this.long.postings(term, pairs, this.rows.length, pair => this.terms.postings(pair), doc => {
      const sample = scanSample(this.rows[doc]!.text)
      const count = countOccurrences(sample, term)
      // held only once NFKC folds the text (halfwidth kana): a candidate at 0, as the pairs are (append)
      // or only a cut text's tail holds it (listTail): a candidate at 0 too
      if (count > 0 || (NON_ASCII.test(sample) && fold(sample).includes(term)) || this.tailCjk.get(doc)?.includes(term) === true) return count
      return -1
    })
  }

  /**
   * A build or a delta is over: what waits is filed, and the build's tables go (its piece table, a
   * page's worth of pending postings): what is appended later is analysed with tables started small.
   */
  built(): void {
    this.terms.release()
    this.anchors.release()
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
    yield* this.terms.fit(slice)
    yield* this.anchors.fitLists(slice)
  }

  /** Forget the long CJK terms counted for searches (they are counted again when asked): room for the budget. */
  dropMemos(): void {
    this.long.drop()
  }

  /**
   * Whether a term is the whole key of some camelCase piece here: with another term of the same
   * query, a doc holding it may hold that term only as its part, which the scan does not count.
   */
  camelWhole(term: string): boolean {
    const id = this.terms.idIfAny(term)
    return id !== undefined && this.camelWholes.has(id)
  }

  postings(key: string): Postings | undefined {
    return this.terms.postings(key)
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
