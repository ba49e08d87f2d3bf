/**
 * What a resident index holds of one message: for every key a search scan could match, how many
 * times the scan would count it. The counts are the scan's own (search/passage.ts `scanTerms`):
 * the same sample (the text cut at RANK_TEXT_CHARS, tool-call rendering blanked), the same pieces
 * (unicode61 tokens with CJK runs cut out), the same keys (a piece's index term, and for a
 * camelCase piece each part's, counted only when it differs from the whole), and for CJK the
 * occurrences `indexOf` finds stepping past each match. So a ranking computed from these counts
 * is the ranking computed by scanning the text (tests/resident-terms.test.ts holds them equal).
 *
 * What the counts cannot say is flagged, and a search scans such a message instead:
 * - a piece whose head (first two letters, folded) is not its stem's head: the scan skips it
 *   unless some query term has that head ("ayed" stems to "ai");
 * - a sample whose lowercase has another length (İ): the scan then records CJK matches as covered
 *   without positions.
 */
import { withoutBoilerplate } from '../analyzer.ts'
import { timeCuePiece } from '../days.ts'
import { RUN_CHARS } from '../scripts.ts'
import { camelSplit, forEachPiece, headOf, isCamelPiece, RANK_TEXT_CHARS, stemOf } from '../search/passage.ts'

/** Characters of a CJK run as the analyzer cuts them (the query's CJK terms are made of these). */
export const CJK_CHAR = new RegExp(`[${RUN_CHARS}]`, 'v')
const HAS_CJK = CJK_CHAR
const NON_ASCII = /[^\p{ASCII}]/u
const DIGITS = /^[0-9]+$/

/** Key prefix of CJK character counts (one or two characters); a Latin key never starts with it. */
export const CJK_KEY = '\u0001'

export interface MessageTerms {
  /** Key → times the scan counts it. */
  readonly counts: Map<string, number>
  /** Keys whose count a scan may not reproduce (their pieces' heads differ from the stem's). */
  readonly oddKeys: readonly string[]
  /** Lowercasing changed the sample's length: CJK terms need a scan. */
  readonly lowerShift: boolean
}

/** The scan's sample of a text. */
export function scanSample(text: string): string {
  return withoutBoilerplate(text.length > RANK_TEXT_CHARS ? text.slice(0, RANK_TEXT_CHARS) : text)
}

/**
 * What the scan makes of one distinct piece: its whole key, its camelCase parts (offsets within
 * the piece), whether its head is not its key's. A session repeats its words on every line, so
 * each distinct piece is stemmed and split once; `id`/`partIds` are the owning index's key ids.
 */
export interface Piece {
  readonly whole: string
  readonly parts: readonly PiecePart[] | undefined
  readonly odd: boolean
  /** It may be part of a time word (days.ts timeCuePiece). */
  readonly timeCue: boolean
  id: number
  partIds: Int32Array | undefined
}

export interface PiecePart {
  readonly key: string
  readonly offset: number
  readonly length: number
}

/** Distinct pieces seen (per index); cleared past PIECE_CACHE entries (a piece is worked out again). */
export type PieceCache = Map<string, Piece>
const PIECE_CACHE = 100_000

export function pieceOf(piece: string, cache: PieceCache): Piece {
  let known = cache.get(piece)
  if (known !== undefined) return known
  known = workOut(piece)
  if (cache.size >= PIECE_CACHE) cache.clear()
  if (piece.length <= 64) cache.set(piece, known)
  return known
}

/** What the scan makes of a piece (its id not yet given). */
export function workOut(piece: string): Piece {
  // digits only (a number, an id): its key is itself, it has no case, stem or camelCase part
  if (DIGITS.test(piece)) return { whole: piece, parts: undefined, odd: false, timeCue: timeCuePiece(piece), id: -1, partIds: undefined }
  const whole = stemOf(piece)
  let parts: PiecePart[] | undefined
  let odd = false
  if (isCamelPiece(piece)) {
    parts = []
    let offset = 0
    for (const part of camelSplit(piece)) {
      parts.push({ key: stemOf(part), offset, length: part.length })
      offset += part.length
    }
  } else {
    odd = headOf(piece) !== headOf(whole)
  }
  return { whole, parts, odd, timeCue: timeCuePiece(piece), id: -1, partIds: undefined }
}

/** Every key the scan of `text` could count, with its count. */
export function messageTerms(text: string, cache: PieceCache = new Map()): MessageTerms {
  const counts = new Map<string, number>()
  const add = (key: string): void => {
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  const flags = scanPieces(text, cache, piece => {
    add(piece.whole)
    for (const part of piece.parts ?? []) if (part.key !== piece.whole) add(part.key)
  }, add)
  return { counts, ...flags }
}

/**
 * Every Latin piece of the scan's sample of `text`, in order, with where it is (a part of a
 * camelCase piece counts only where its key is not the whole's: `messageTerms`), and every CJK
 * count key once per time it counts.
 */
export function scanPieces(text: string, cache: PieceCache, onPiece: (piece: Piece, at: number, length: number) => void, onCjk: (key: string) => void): Omit<MessageTerms, 'counts'> {
  const sample = scanSample(text)
  let odd: Set<string> | undefined
  const visit = (found: string, at: number): void => {
    const piece = pieceOf(found, cache)
    if (piece.odd) (odd ??= new Set()).add(piece.whole)
    onPiece(piece, at, found.length)
  }
  if (NON_ASCII.test(sample)) forEachPiece(sample, visit)
  else asciiPieces(sample, visit)
  let lowerShift = false
  if (HAS_CJK.test(sample)) {
    const lower = sample.toLowerCase()
    lowerShift = lower.length !== sample.length
    countCjk(lower, onCjk)
  }
  return { oddKeys: odd === undefined ? [] : [...odd], lowerShift }
}

/** The pieces of an ASCII sample (runs of letters and digits), without a regex. */
function asciiPieces(sample: string, visit: (piece: string, at: number) => void): void {
  let start = -1
  for (let at = 0; at <= sample.length; at += 1) {
    const code = at < sample.length ? sample.charCodeAt(at) : 0
    const token = (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122)
    if (token) {
      if (start < 0) start = at
    } else if (start >= 0) {
      visit(sample.slice(start, at), start)
      start = -1
    }
  }
}

/**
 * CJK characters and character pairs of the lowercased sample, each pair counted as `indexOf`
 * finds it when a scan steps past every match (`aaa` holds `aa` once).
 */
function countCjk(lower: string, emit: (key: string) => void): void {
  let previous = ''
  let previousAt = -1
  /** Per pair: the offset (code units) before which a new occurrence overlaps the last one counted. */
  const free = new Map<string, number>()
  for (let at = 0; at < lower.length;) {
    const point = lower.codePointAt(at)!
    const width = point > 0xffff ? 2 : 1
    const char = width === 2 ? lower.slice(at, at + 2) : lower[at]!
    if (!CJK_CHAR.test(char)) {
      previous = ''
      at += width
      continue
    }
    emit(CJK_KEY + char)
    if (previous !== '') {
      const pair = previous + char
      if (previousAt >= (free.get(pair) ?? 0)) {
        emit(CJK_KEY + pair)
        free.set(pair, previousAt + pair.length)
      }
    }
    previous = char
    previousAt = at
    at += width
  }
}

/** Code points of a CJK term. */
export function cjkChars(term: string): string[] {
  return [...term]
}

/**
 * How a search looks a scanned term up: a Latin term by its key; a CJK term of one or two
 * characters by its count key; a longer one by the keys of its pairs (then found in the text).
 */
export type TermLookup =
  | { readonly kind: 'latin'; readonly key: string }
  | { readonly kind: 'cjk'; readonly key: string }
  | { readonly kind: 'cjk-long'; readonly pairs: readonly string[] }

export function termLookup(term: string, cjk: boolean): TermLookup {
  if (!cjk) return { kind: 'latin', key: term }
  const chars = cjkChars(term)
  if (chars.length <= 2 && chars.every(char => CJK_CHAR.test(char))) return { kind: 'cjk', key: CJK_KEY + term }
  const pairs: string[] = []
  for (let index = 0; index + 1 < chars.length; index += 1) {
    // a character outside the runs the index counts cannot narrow: the pair is left out (the text decides)
    if (CJK_CHAR.test(chars[index]!) && CJK_CHAR.test(chars[index + 1]!)) pairs.push(CJK_KEY + chars[index]! + chars[index + 1]!)
  }
  return { kind: 'cjk-long', pairs: [...new Set(pairs)] }
}

/** Non-overlapping occurrences of a CJK term in a lowercased sample, as the scan counts them. */
export function countOccurrences(lower: string, term: string): number {
  let found = 0
  for (let at = lower.indexOf(term); at !== -1; at = lower.indexOf(term, at + term.length)) found += 1
  return found
}
