/**
 * One pass over a message's scan sample for the resident build (session-index.ts): its Latin
 * pieces, its CJK runs and anchor candidates, and the facts the build pre-tests on, read off the
 * char codes without a regex or a substring per token. A session repeats its words on every line:
 * a piece seen before is found by a hash of its chars checked against the stored piece, so only
 * a new piece is sliced and worked out (terms.ts workOut).
 *
 * The classes are those of the scan and the analyzer: a piece is a maximal run of PIECE_CHAR
 * (search/passage.ts forEachPiece: unicode61 tokens with CJK runs cut out), a CJK run one of
 * CJK_CHAR (terms.ts countCjk, analyzer.ts CJK_RUN), an anchor candidate the first to the last
 * word character of a run of analyzer.ts ANCHOR's characters. tests/resident-build.test.ts holds
 * an index built from this pass equal to one built the straightforward way.
 */
import { HAS_CJK } from '../analyzer.ts'
import { CJK_CHAR, workOut, type Piece } from './terms.ts'
import { PIECE_CHAR } from '../search/passage.ts'
import { ZH_DIGITS } from '../search/values.ts'

/** FNV-1a over code units (SpanTable's hash, before its finish): the pass hashes spans as it reads them. */
const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/** Class bits of a code point (KNOWN: worked out). */
export const PIECE = 1
/** Counted as CJK (terms.ts CJK_CHAR) and cut as a CJK run by the analyzer (CJK_RUN). */
export const CJK_COUNTED = 2
/** analyzer.ts HAS_CJK: an anchor candidate holding one is left out (and the anchors are partial). */
export const CJK_LETTER = 4
/** analyzer.ts ANCHOR's first and last character: [\p{L}\p{N}_$]. */
export const ANCHOR_END = 8
/** analyzer.ts ANCHOR's inner characters: [\p{L}\p{N}_$./\\:-]. */
export const ANCHOR_INNER = 16
/** A digit search/values.ts VALUE reads (ASCII or ZH_DIGITS): a text without one states no value. */
export const DIGIT = 32
const KNOWN = 128

const ANCHOR_END_CHAR = /^[\p{L}\p{N}_$]$/u
const ANCHOR_INNER_CHAR = /^[\p{L}\p{N}_$./\\:-]$/u

/** Per code point, its classes once asked (the regexes run once per distinct character). */
let classes: Uint8Array | undefined

function classify(point: number): number {
  const char = String.fromCodePoint(point)
  let bits = KNOWN
  if (PIECE_CHAR.test(char)) bits |= PIECE
  if (CJK_CHAR.test(char)) bits |= CJK_COUNTED
  if (HAS_CJK.test(char)) bits |= CJK_LETTER
  if (ANCHOR_END_CHAR.test(char)) bits |= ANCHOR_END
  if (ANCHOR_INNER_CHAR.test(char)) bits |= ANCHOR_INNER
  if ((point >= 48 && point <= 57) || ZH_DIGITS.includes(char)) bits |= DIGIT
  return bits
}

/** The classes of a code point (a lone surrogate is its own point: none of them). */
export function classOf(point: number): number {
  classes ??= new Uint8Array(0x110000)
  const known = classes[point]!
  if (known !== 0) return known
  const bits = classify(point)
  classes[point] = bits
  return bits
}

/** ASCII lowercase of a code unit (a table folding case compares and hashes these). */
function folded(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code
}

/**
 * Entries by a span of code units, found without making a string: one hash over its units (ASCII
 * letters lowercased when `fold`), then the stored key compared unit by unit. Spans are read from
 * typed arrays (the pass's copy of a sample, the keys' pool), not from strings: a string's
 * property loads see every representation a string has (sliced, cons, one- or two-byte) and go
 * megamorphic. An entry is a number from 0 up, in the order added: its owner keeps what it stands
 * for in arrays of its own.
 */
export class SpanTable {
  // small to start: an index of a few messages holds a few keys (the arrays double as they fill)
  /** Per slot: the key's hash, and its entry + 1 (0: empty). */
  private slots = new Int32Array(64)
  /** Per entry: where its key starts in `units`, and its length. */
  private starts = new Int32Array(16)
  private lengths = new Int32Array(16)
  /** The keys' code units (folded when `fold`), one after another. */
  units = new Uint16Array(128)
  private used = 0
  size = 0
  /** The hash of the span last looked for (`add` takes it). */
  private lastHash = 0
  private readonly fold: boolean

  constructor(fold: boolean) {
    this.fold = fold
  }

  /** The entry of units[from, to), or -1. */
  find(units: Uint16Array, from: number, to: number): number {
    let hash = FNV_OFFSET
    if (this.fold) for (let at = from; at < to; at += 1) hash = Math.imul(hash ^ folded(units[at]!), FNV_PRIME)
    else for (let at = from; at < to; at += 1) hash = Math.imul(hash ^ units[at]!, FNV_PRIME)
    return this.findHashed(units, from, to, hash)
  }

  /** `find` with the span's FNV-1a hash (over its units, folded when `fold`) already taken. */
  findHashed(units: Uint16Array, from: number, to: number, fnv: number): number {
    // FNV-1a's low bits are weak: mixed before they pick the slot
    let hash = fnv ^ (fnv >>> 16)
    hash = Math.imul(hash, 0x85ebca6b)
    hash ^= hash >>> 13
    this.lastHash = hash
    const slots = this.slots
    const mask = (slots.length >> 1) - 1
    for (let slot = hash & mask; slots[slot * 2 + 1] !== 0; slot = (slot + 1) & mask) {
      if (slots[slot * 2] !== hash) continue
      const entry = slots[slot * 2 + 1]! - 1
      if (this.lengths[entry] === to - from && this.same(this.starts[entry]!, units, from, to)) return entry
    }
    return -1
  }

  /** Add units[from, to), the span just looked for and not found: its entry. */
  add(units: Uint16Array, from: number, to: number): number {
    if ((this.size + 1) * 4 > this.slots.length) this.grow()
    const length = to - from
    if (this.used + length > this.units.length) this.units = enlarged(this.units, this.used + length)
    if (this.size === this.starts.length) {
      this.starts = enlarged(this.starts, this.size + 1)
      this.lengths = enlarged(this.lengths, this.size + 1)
    }
    const start = this.used
    const keys = this.units
    if (this.fold) for (let at = from; at < to; at += 1) keys[start + at - from] = folded(units[at]!)
    else keys.set(units.subarray(from, to), start)
    const entry = this.size
    this.starts[entry] = start
    this.lengths[entry] = length
    this.used += length
    this.size += 1
    this.put(this.lastHash, entry + 1)
    return entry
  }

  /** Where an entry's key starts in `units` (an entry past the last: where the next one will). */
  start(entry: number): number {
    return entry === this.size ? this.used : this.starts[entry]!
  }

  /** Bytes its arrays take. */
  get bytes(): number {
    return this.slots.byteLength + this.starts.byteLength + this.lengths.byteLength + this.units.byteLength
  }

  /** Drop every entry. */
  clear(): void {
    this.slots.fill(0)
    this.used = 0
    this.size = 0
  }

  private same(start: number, units: Uint16Array, from: number, to: number): boolean {
    const keys = this.units
    if (this.fold) {
      for (let at = from; at < to; at += 1) if (keys[start + at - from] !== folded(units[at]!)) return false
    } else {
      for (let at = from; at < to; at += 1) if (keys[start + at - from] !== units[at]) return false
    }
    return true
  }

  private put(hash: number, entryPlusOne: number): void {
    const slots = this.slots
    const mask = (slots.length >> 1) - 1
    let slot = hash & mask
    while (slots[slot * 2 + 1] !== 0) slot = (slot + 1) & mask
    slots[slot * 2] = hash
    slots[slot * 2 + 1] = entryPlusOne
  }

  private grow(): void {
    const old = this.slots
    this.slots = new Int32Array(old.length * 2)
    for (let slot = 0; slot < old.length; slot += 2) if (old[slot + 1] !== 0) this.put(old[slot]!, old[slot + 1]!)
  }
}

/** A copy of a typed array with room for at least `size` (doubled). */
function enlarged<T extends Int32Array | Uint16Array | Uint8Array>(array: T, size: number): T {
  let length = array.length * 2
  while (length < size) length *= 2
  const copy = new (array.constructor as new (length: number) => T)(length)
  copy.set(array)
  return copy
}

/** Distinct pieces held; past it the table starts over (between messages), as terms.ts PieceCache does. */
const PIECES_HELD = 100_000
/** Longest piece held (terms.ts pieceOf keeps the same). */
const PIECE_HELD_CHARS = 64

/** What a piece entry is (PieceTable.kinds): it has camelCase parts; its head is not its key's (terms.ts); it may be part of a time word. */
export const PIECE_PARTS = 1
export const PIECE_ODD = 2
export const PIECE_TIME_CUE = 4

/**
 * Pieces by their text: a piece seen before is one hash and a compare; a new one is sliced and
 * worked out once. Per entry it keeps the piece, its key id in the owning index once given, and
 * its kind: a message's usual piece is counted from these two typed arrays alone.
 */
export class PieceTable {
  private table = new SpanTable(false)
  private pieces: Piece[] = []
  /** Per entry: the piece's key id in the owning index (-1: not yet given). */
  keyIds = new Int32Array(16)
  kinds = new Uint8Array(16)
  /** The message's pieces too long to hold, by their (negative) entries: loose[-1 - entry]. */
  private readonly loose: Piece[] = []

  /** Pieces held. */
  get size(): number {
    return this.table.size
  }

  /** Bytes its typed arrays take (the pieces aside). */
  get bytes(): number {
    return this.table.bytes + this.keyIds.byteLength + this.kinds.byteLength
  }

  /** Before a message: the loose pieces go, and the table starts over when full (never within a message: its entries stay valid). */
  startMessage(): void {
    this.loose.length = 0
    if (this.table.size >= PIECES_HELD) {
      this.table.clear()
      this.pieces = []
    }
  }

  /** The entry of the piece text[from, to) (`units` the text's code units, `fnv` its FNV-1a hash). */
  get(text: string, units: Uint16Array, from: number, to: number, fnv: number): number {
    const known = this.table.findHashed(units, from, to, fnv)
    if (known >= 0) return known
    const piece = workOut(text.slice(from, to))
    if (to - from > PIECE_HELD_CHARS) {
      this.loose.push(piece)
      return -this.loose.length
    }
    const entry = this.table.add(units, from, to)
    if (entry === this.keyIds.length) {
      this.keyIds = enlarged(this.keyIds, entry + 1)
      this.kinds = enlarged(this.kinds, entry + 1)
    }
    this.pieces[entry] = piece
    this.keyIds[entry] = -1
    this.kinds[entry] = (piece.parts !== undefined ? PIECE_PARTS : 0) | (piece.odd ? PIECE_ODD : 0) | (piece.timeCue ? PIECE_TIME_CUE : 0)
    return entry
  }

  /**
   * Empty, at its first sizes (between messages, as `startMessage` starts over): a built index
   * holds no table of its build's pieces (8.8 MB of a 10k-message session's ~72 MB), and the
   * few messages appended later fill a small one again.
   */
  release(): void {
    this.table = new SpanTable(false)
    this.pieces = []
    this.loose.length = 0
    this.keyIds = new Int32Array(16)
    this.kinds = new Uint8Array(16)
  }

  piece(entry: number): Piece {
    return entry >= 0 ? this.pieces[entry]! : this.loose[-1 - entry]!
  }

  /** The kind of an entry (PIECE_PARTS, PIECE_ODD, PIECE_TIME_CUE). */
  kind(entry: number): number {
    if (entry >= 0) return this.kinds[entry]!
    const piece = this.loose[-1 - entry]!
    return (piece.parts !== undefined ? PIECE_PARTS : 0) | (piece.odd ? PIECE_ODD : 0) | (piece.timeCue ? PIECE_TIME_CUE : 0)
  }
}

/** Values an IntScratch keeps room for when emptied (1 MB). */
const KEPT_VALUES = 1 << 18

/** A growable list of int32 (the pass's spans, the index's token triples): no array of boxed numbers per message. */
export class IntScratch {
  data: Int32Array
  length = 0
  private readonly capacity: number

  constructor(capacity = 1024) {
    this.capacity = capacity
    this.data = new Int32Array(capacity)
  }

  /** Bytes held. */
  get bytes(): number {
    return this.data.byteLength
  }

  /**
   * Empty; back to its first capacity once past KEPT_VALUES (a buffer an index keeps between two
   * pages of a build holds a page's worth, not a session's; grown again for each page it cost 2%).
   */
  clear(): void {
    this.length = 0
    if (this.data.length > KEPT_VALUES) this.data = new Int32Array(this.capacity)
  }

  /** Empty, back to its first capacity (a built index keeps no build-sized buffer). */
  release(): void {
    this.length = 0
    if (this.data.length > this.capacity) this.data = new Int32Array(this.capacity)
  }

  push3(a: number, b: number, c: number): void {
    if (this.length + 3 > this.data.length) this.grow()
    const data = this.data
    data[this.length] = a
    data[this.length + 1] = b
    data[this.length + 2] = c
    this.length += 3
  }

  push1(a: number): void {
    if (this.length + 1 > this.data.length) this.grow()
    this.data[this.length] = a
    this.length += 1
  }

  push2(a: number, b: number): void {
    if (this.length + 2 > this.data.length) this.grow()
    this.data[this.length] = a
    this.data[this.length + 1] = b
    this.length += 2
  }

  /** The values pushed, copied. */
  copy(): Int32Array {
    return this.data.slice(0, this.length)
  }

  private grow(): void {
    this.data = enlarged(this.data, this.data.length + 1)
  }
}

/** Anchor candidate flags (TextScan.anchors): it holds a non-ASCII character; a CJK_LETTER. */
export const ANCHOR_NON_ASCII = 1
export const ANCHOR_CJK = 2

/**
 * The pass's findings for one sample, in reused buffers (valid until the next `run`): pieces
 * with where they are, CJK runs as [from, to) spans, and anchor candidates of anchor shape
 * (analyzer.ts anchorShaped, three or more code units) as (from, to, folded hash, flags).
 */
export class TextScan {
  /** Per piece: its entry in the piece table (PieceTable.get). */
  readonly pieces = new IntScratch()
  /** Per piece: at, length. */
  readonly spans = new IntScratch()
  readonly cjkRuns = new IntScratch()
  readonly anchors = new IntScratch()
  /** The sample's code units (the tables read spans from these). */
  units = new Uint16Array(1024)
  /** Some character is not ASCII. */
  nonAscii = false
  /** Some character is CJK_COUNTED (terms.ts HAS_CJK). */
  cjk = false
  /** Where each run of DIGITs starts (search/values.ts valueMatchesAt). */
  readonly numbers = new IntScratch()
  /** Some piece may be part of a time word (days.ts timeCuePiece). */
  timeCue = false
  run(sample: string, table: PieceTable): void {
    table.startMessage()
    this.pieces.length = 0
    this.spans.length = 0
    this.cjkRuns.length = 0
    this.anchors.length = 0
    this.numbers.length = 0
    this.timeCue = false
    let nonAscii = false
    let bitsSeen = 0
    let afterDigit = false
    let pieceStart = -1
    let pieceHash = 0
    let cjkStart = -1
    // the anchor candidate being read: its first word character, the end of its last one, the
    // hash of its folded code units up to there and of the run so far, and what anchorShaped asks
    let wordStart = -1
    let wordEnd = -1
    let wordHash = 0
    let runHash = 0
    let shaped = false
    let capitals = true
    let innerMark = false
    let afterLower = false
    let anchorFlags = 0
    const length = sample.length
    if (this.units.length < length) this.units = enlarged(this.units, length)
    const units = this.units
    for (let at = 0; at <= length;) {
      let bits = 0
      let width = 1
      let code = 0
      if (at < length) {
        code = sample.charCodeAt(at)
        units[at] = code
        if (code < 128) bits = ASCII_CLASSES[code]!
        else {
          const point = sample.codePointAt(at)!
          if (point > 0xffff) {
            width = 2
            units[at + 1] = sample.charCodeAt(at + 1)
          }
          bits = classOf(point)
          nonAscii = true
        }
      }
      bitsSeen |= bits
      const digit = (bits & DIGIT) !== 0
      if (digit && !afterDigit) this.numbers.push1(at)
      afterDigit = digit
      if ((bits & PIECE) !== 0) {
        if (pieceStart < 0) {
          pieceStart = at
          pieceHash = FNV_OFFSET
        }
        pieceHash = Math.imul(pieceHash ^ code, FNV_PRIME)
        if (width === 2) pieceHash = Math.imul(pieceHash ^ units[at + 1]!, FNV_PRIME)
      } else if (pieceStart >= 0) {
        const entry = table.get(sample, units, pieceStart, at, pieceHash)
        this.pieces.push1(entry)
        this.spans.push2(pieceStart, at - pieceStart)
        if ((table.kind(entry) & PIECE_TIME_CUE) !== 0) this.timeCue = true
        pieceStart = -1
      }
      if ((bits & CJK_COUNTED) !== 0) {
        if (cjkStart < 0) cjkStart = at
      } else if (cjkStart >= 0) {
        this.cjkRuns.push2(cjkStart, at)
        cjkStart = -1
      }
      // ANCHOR is greedy: a candidate runs from the first word character of a run of its
      // characters to the last one (its inner marks count only when a word character follows)
      if ((bits & ANCHOR_END) !== 0) {
        const upper = code >= 65 && code <= 90
        if (wordStart < 0) {
          wordStart = at
          runHash = FNV_OFFSET
          shaped = false
          capitals = true
          innerMark = false
          afterLower = false
          anchorFlags = 0
        }
        runHash = Math.imul(runHash ^ (upper ? code + 32 : code), FNV_PRIME)
        if (width === 2) runHash = Math.imul(runHash ^ units[at + 1]!, FNV_PRIME)
        wordHash = runHash
        wordEnd = at + width
        if (innerMark || (code >= 48 && code <= 57) || code === 95 || (afterLower && upper)) shaped = true
        if (!upper) capitals = false
        if (code >= 128) anchorFlags |= (bits & CJK_LETTER) !== 0 ? ANCHOR_NON_ASCII | ANCHOR_CJK : ANCHOR_NON_ASCII
        innerMark = false
        afterLower = code >= 97 && code <= 122
      } else if (wordStart >= 0) {
        if ((bits & ANCHOR_INNER) !== 0) {
          // . / \ : - : inner marks, all of anchorShaped
          runHash = Math.imul(runHash ^ code, FNV_PRIME)
          innerMark = true
          afterLower = false
        } else {
          const size = wordEnd - wordStart
          if (size >= 3 && (shaped || (capitals && size >= 4))) {
            this.anchors.push2(wordStart, wordEnd)
            this.anchors.push2(wordHash, anchorFlags)
          }
          wordStart = -1
        }
      }
      at += width
    }
    this.nonAscii = nonAscii
    this.cjk = (bitsSeen & CJK_COUNTED) !== 0
  }

}

const ASCII_CLASSES = Uint8Array.from({ length: 128 }, (_, code) => classify(code))
