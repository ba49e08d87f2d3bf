/**
 * Where in a candidate the query is: one linear pass over its tokens (as the index tokenizes them:
 * letter/digit runs, lowercased, diacritics removed, Porter-stemmed, camelCase parts) finds which
 * query terms it covers and where, then the densest window becomes the hit's passage and snippet.
 * Plain functions over text; every backend's candidates go through the same code.
 *
 * Work per candidate is bounded: only the first RANK_TEXT_CHARS characters are scanned, at most
 * MAX_POSITIONS occurrences are kept, and a token is stemmed only when it is short enough to be a
 * word. A 50 MB tool output costs what 256 KB costs.
 */
import { charBoundary, withoutBoilerplate } from '../analyzer.ts'
import { porterStem } from '../porter.ts'
import { RUN_SCRIPTS } from '../scripts.ts'

/** Characters of one candidate that ranking and passages look at. */
export const RANK_TEXT_CHARS = 256_000
/** Occurrences of query terms kept per candidate (passages need the densest cluster, not all). */
export const MAX_POSITIONS = 4_000
/** Width of a passage: where a read of the hit starts and spends its budget first. */
export const PASSAGE_CHARS = 1_600

/** unicode61 tokens; CJK runs inside one are cut out (the analyzer rewrites them into words and bigrams). */
const TOKEN = /[\p{L}\p{N}\p{M}]+/gu
const CJK_RUNS = new RegExp(`[${RUN_SCRIPTS}]+`, 'gv')

/** The non-CJK pieces of a token with their offsets (most tokens are ASCII: one piece, no regex). */
export function latinPieces(token: string, at: number): Array<{ text: string; at: number }> {
  if (!NON_ASCII.test(token) || !CJK.test(token)) return [{ text: token, at }]
  const pieces: Array<{ text: string; at: number }> = []
  let cursor = 0
  for (const run of token.matchAll(CJK_RUNS)) {
    if (run.index > cursor) pieces.push({ text: token.slice(cursor, run.index), at: at + cursor })
    cursor = run.index + run[0].length
  }
  if (cursor < token.length) pieces.push({ text: token.slice(cursor), at: at + cursor })
  return pieces
}
const CJK = new RegExp(`[${RUN_SCRIPTS}]`, 'v')
const NON_ASCII = /[^\p{ASCII}]/u
const INNER_CAPITAL = /[a-z0-9][A-Z]/
const CAMEL_SPLIT = /(?<=[a-z0-9])(?=[A-Z])/

/** A scanned term matched as a CJK substring (not as a whole token). */
export function isCjkTerm(term: string): boolean {
  return CJK.test(term)
}

/**
 * Every Latin piece of a sample as the exhaustive scan visits it: unicode61 tokens with their
 * CJK runs cut out, in text order. The resident index (resident/terms.ts) counts the same pieces.
 */
export function forEachPiece(sample: string, visit: (piece: string, at: number) => void): void {
  for (const match of sample.matchAll(TOKEN)) {
    for (const { text, at } of latinPieces(match[0], match.index)) visit(text, at)
  }
}

/**
 * Longest piece scanned as camelCase. The analyzer splits an identifier of any length for the index
 * lists; at 200 a session search missed what a store-wide one found by a part of a 439-character
 * identifier. Not unbounded: a 2M-character token of camelCase parts then took the first session
 * search after it 3.2 s (every part listed) and every later one 23 ms (the sample's parts split).
 */
const CAMEL_PIECE_CHARS = 4_096

/** Whether a piece is scanned as camelCase: its parts are matched when the whole is not. */
export function isCamelPiece(piece: string): boolean {
  return piece.length <= CAMEL_PIECE_CHARS && INNER_CAPITAL.test(piece)
}

/** The camelCase parts of a piece, as the scan splits them. */
export function camelSplit(piece: string): string[] {
  return piece.split(CAMEL_SPLIT)
}

/** Stems of tokens seen lately: a log repeats its words on every line. */
const STEMS = new Map<string, string>()
const STEM_CACHE = 20_000

/** A token as the index sees it: lowercased, diacritics removed, stemmed. */
export function indexTerm(token: string): string {
  const cached = STEMS.get(token)
  if (cached !== undefined) return cached
  const stemmed = stemOf(token)
  if (STEMS.size >= STEM_CACHE) STEMS.clear()
  if (token.length <= 64) STEMS.set(token, stemmed)
  return stemmed
}

/** `indexTerm` without its cache (a caller keeping its own, as the resident build's piece table). */
export function stemOf(token: string): string {
  let lower = token.toLowerCase()
  if (NON_ASCII.test(lower)) {
    // a CJK term is matched as a substring of the text as written: its marks are letters of its
    // word (ข้อมูล, the kana デ), not diacritics; folded, it matched no text (デ is テ with one)
    if (CJK.test(lower)) return lower
    lower = lower.normalize('NFD').replace(/\p{M}/gu, '').normalize('NFC')
  }
  return porterStem(lower)
}

/**
 * Porter only rewrites endings: a stem's first two characters (one, for a one-character stem)
 * begin the token. A token whose head begins no term cannot stem to one and is not stemmed.
 */
export function headOf(token: string): string {
  const head = token.slice(0, 2).toLowerCase()
  if (head.charCodeAt(0) < 128 && (head.length < 2 || head.charCodeAt(1) < 128)) return head
  // folded once per distinct head: a text of many short non-ASCII tokens ('é é é …', 256 KB) otherwise
  // normalizes every one of them, seconds for a search of a few such candidates
  let folded = HEADS.get(head)
  if (folded === undefined) {
    folded = head.normalize('NFD').replace(/\p{M}/gu, '')
    if (HEADS.size >= STEM_CACHE) HEADS.clear()
    HEADS.set(head, folded)
  }
  return folded
}
const HEADS = new Map<string, string>()

/**
 * What every token stemming to `term` begins with. Porter rewrites only endings (y→i, a final e
 * added): a stem without its last two characters begins its token, and its first two do (the
 * head) unless a two-letter stem ends in an i that was a y ("ayed" → "ai"). Checked on ~100k
 * English words; a short prefix only costs more tokens looked at.
 */
function safePrefix(term: string): string {
  return term.length <= 2 && term.endsWith('i') ? term.slice(0, 1) : term.slice(0, Math.max(2, term.length - 2))
}
const ASCII_TERM = /^[a-z0-9]+$/

function isTokenChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122)
}

/** Characters that may be non-ASCII piece characters (not ASCII, not a CJK ideograph or Hangul syllable): each is checked with pieceCharAt. */
// the range starts at U+0000 on purpose: every ASCII character is excluded, control ones too
// eslint-disable-next-line no-control-regex
const NON_ASCII_OTHER = /[^\x00-\x7f\u4e00-\u9fff\uac00-\ud7a3]/g
export const PIECE_CHAR = new RegExp(`^[[\\p{L}\\p{N}\\p{M}]--[${RUN_SCRIPTS}]]$`, 'v')

/** Piece character test of one non-ASCII code point: common ranges answered without a regex. */
function isPieceCode(code: number, char: () => string): boolean {
  // Latin-1 and Latin Extended-A/B letters (not × or ÷), combining marks, Greek and Cyrillic letters
  if ((code >= 0xc0 && code <= 0x24f && code !== 0xd7 && code !== 0xf7) || (code >= 0x300 && code <= 0x36f) || (code >= 0x3b1 && code <= 0x3c9) || (code >= 0x410 && code <= 0x44f)) return true
  // CJK ideographs and Hangul syllables (every one of their script): cut out of Latin pieces;
  // general punctuation separates. Not the kana blocks: ー and ゛ are Common, so part of a piece.
  if ((code >= 0x4e00 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7a3) || (code >= 0x2000 && code <= 0x206f)) return false
  return pieceByRegex(code, char)
}

/**
 * PIECE_CHAR's answer per code point, kept once asked (0: not yet, 1: a piece character, 2: not):
 * a text of 256 KB of kana or emoji otherwise runs the regex on every character of it.
 */
const PIECE_KNOWN = new Uint8Array(0x110000)

function pieceByRegex(point: number, char: () => string): boolean {
  const known = PIECE_KNOWN[point]!
  if (known !== 0) return known === 1
  const piece = PIECE_CHAR.test(char())
  PIECE_KNOWN[point] = piece ? 1 : 2
  return piece
}

/** Length in code units of the piece character ending just before `at` (0: none there). */
function pieceCharBefore(text: string, at: number): number {
  const code = text.charCodeAt(at - 1)
  if (code < 128) return isTokenChar(code) ? 1 : 0
  const wide = code >= 0xdc00 && code <= 0xdfff && at >= 2 && text.charCodeAt(at - 2) >= 0xd800 && text.charCodeAt(at - 2) <= 0xdbff
  if (!wide) return isPieceCode(code, () => text[at - 1]!) ? 1 : 0
  return pieceByRegex(text.codePointAt(at - 2)!, () => text.slice(at - 2, at)) ? 2 : 0
}

/** Length in code units of the piece character starting at `at` (0: none there). */
function pieceCharAt(text: string, at: number): number {
  const code = text.charCodeAt(at)
  if (code < 128) return isTokenChar(code) ? 1 : 0
  const point = text.codePointAt(at)!
  if (point <= 0xffff) return isPieceCode(code, () => text[at]!) ? 1 : 0
  return pieceByRegex(point, () => String.fromCodePoint(point)) ? 2 : 0
}

/** Where CAMEL_SPLIT cuts a token: an ASCII capital after an ASCII lowercase letter or digit. */
function partStart(text: string, at: number): boolean {
  const code = text.charCodeAt(at)
  const before = text.charCodeAt(at - 1)
  return code >= 65 && code <= 90 && ((before >= 97 && before <= 122) || (before >= 48 && before <= 57))
}

/** Past this share of a text's characters, its non-ASCII pieces are walked by the full token scan (cheaper when they are most of it). */
const NON_ASCII_PIECE_SHARE = 1 / 64
/**
 * Past this share of a text's characters, other non-ASCII characters, or pieces taken for a
 * prefix, also send it to the token scan: the prefix walk costs more per token than the scan
 * then (2-5x on 256 KB of emoji, kana, or one-letter-prefix tokens). Both give the same result.
 */
const OTHER_SHARE = 1 / 4
const TAKEN_SHARE = 1 / 16
/** Counts below this never decide (a short text is cheap either way). */
const DENSE_FLOOR = 64

/**
 * The Latin pieces (tokens, as latinPieces cuts them) of a text that can match a term, in text
 * order: every piece holding some term's safe prefix (an ASCII piece stemming to a term, or with
 * a camelCase part that does, holds it), found with indexOf instead of tokenizing the whole text,
 * and every piece with a non-ASCII letter, digit or mark (diacritics fold away, so such a piece is
 * checked whatever it spells). The caller checks each piece exactly as a full scan does, so the
 * result is the same; `undefined` when the terms are not ASCII, or when lowercasing moves the
 * text's offsets (a character whose lowercase is longer, as İ).
 */
function pieceCandidates(sample: string, prefixes: RegExp): Array<[number, string]> | undefined {
  const ascii = !NON_ASCII.test(sample)
  const tokens = new Map<number, string>()
  const take = (found: number, length: number, lastEnd: number): number => {
    let start = found
    if (ascii) {
      while (start > lastEnd && isTokenChar(sample.charCodeAt(start - 1))) start -= 1
    } else {
      for (let width = 0; start > lastEnd && (width = pieceCharBefore(sample, start)) > 0;) start -= width
    }
    let end = found + length
    if (ascii) {
      while (end < sample.length && isTokenChar(sample.charCodeAt(end))) end += 1
    } else {
      for (let width = 0; end < sample.length && (width = pieceCharAt(sample, end)) > 0;) end += width
    }
    if (!tokens.has(start)) tokens.set(start, sample.slice(start, end))
    return end
  }
  if (!ascii) {
    let lastEnd = 0
    NON_ASCII_OTHER.lastIndex = 0
    for (let match = NON_ASCII_OTHER.exec(sample), pieces = 0, others = 0; match !== null; match = NON_ASCII_OTHER.exec(sample)) {
      const width = match.index < lastEnd ? 0 : pieceCharAt(sample, match.index)
      // mostly other non-ASCII characters (kana, emoji, symbols): one regex step each here, the token scan skips them at once
      if (width === 0 && (others += 1) > DENSE_FLOOR + match.index * OTHER_SHARE) return undefined
      if (width === 0) continue
      // dense so far: the full token scan is cheaper (decided early, not after walking most of them)
      if ((pieces += 1) > 8 + match.index * NON_ASCII_PIECE_SHARE) return undefined
      lastEnd = take(match.index, width, lastEnd)
      NON_ASCII_OTHER.lastIndex = lastEnd
    }
  }
  // every place some prefix starts, in one case-insensitive pass (ASCII folding only: a piece a
  // wider fold could match holds a non-ASCII character and was taken above)
  let lastEnd = 0
  prefixes.lastIndex = 0
  for (let match = prefixes.exec(sample), taken = 0; match !== null; match = prefixes.exec(sample)) {
    const found = match.index
    // a hit inside a piece that starts no camelCase part begins nothing that can stem to a term
    // (the piece's own start, or its part's, holds the prefix too, and is found there)
    if (found > 0 && pieceCharBefore(sample, found) > 0 && !partStart(sample, found)) {
      prefixes.lastIndex = found + 1
      continue
    }
    // a prefix beginning most tokens (a one-letter term in 'a b a b …'): the token scan is cheaper
    if ((taken += 1) > DENSE_FLOOR + found * TAKEN_SHARE) return undefined
    lastEnd = take(found, match[0].length, lastEnd)
    if (lastEnd >= sample.length) break
    prefixes.lastIndex = lastEnd
  }
  return [...tokens].toSorted((a, b) => a[0] - b[0])
}

interface CompiledTerms {
  readonly latin: ReadonlyMap<string, number>
  readonly cjk: ReadonlyArray<{ readonly term: string; readonly index: number }>
  readonly heads: ReadonlySet<string>
  /** The safe prefixes of the Latin terms as one case-insensitive pattern (pieceCandidates); undefined when a term is not ASCII. */
  readonly prefixes: RegExp | undefined
  /** The terms it was made from (an array changed since is compiled again). */
  readonly key: string
}

/** A search scans every candidate with the same terms array: its set-up is done once per array. */
const COMPILED = new WeakMap<readonly string[], CompiledTerms>()

function compiled(terms: readonly string[]): CompiledTerms {
  const key = terms.join('\u0000')
  const known = COMPILED.get(terms)
  if (known !== undefined && known.key === key) return known
  const latin = new Map<string, number>()
  const cjk: Array<{ term: string; index: number }> = []
  terms.forEach((term, index) => {
    if (CJK.test(term)) cjk.push({ term, index })
    else if (!latin.has(term)) latin.set(term, index)
  })
  const keys = [...latin.keys()]
  // prefixes are [a-z0-9]: nothing to escape; no u flag, so `i` folds ASCII letters only
  const prefixes = keys.length > 0 && keys.every(term => ASCII_TERM.test(term)) ? new RegExp([...new Set(keys.map(safePrefix))].join('|'), 'gi') : undefined
  const out = { latin, cjk, heads: new Set(keys.map(headOf)), prefixes, key }
  COMPILED.set(terms, out)
  return out
}

export interface TermPosition {
  readonly at: number
  readonly length: number
  /** Index into the scanned terms. */
  readonly term: number
}

export interface TermScan {
  /** Per term (same order): does the text contain it. */
  readonly covered: boolean[]
  /** Where, in text order (at most MAX_POSITIONS). */
  readonly positions: TermPosition[]
  /** Characters scanned (the text is cut at RANK_TEXT_CHARS). */
  readonly scanned: number
}

/**
 * Which terms (already index terms: stemmed, lowercased) a text contains, and where. Latin terms
 * match whole tokens or camelCase parts; CJK terms match as substrings (the index bigrams them).
 * Linear in min(text length, RANK_TEXT_CHARS).
 */
export function scanTerms(text: string, terms: readonly string[], cap = RANK_TEXT_CHARS, mode: 'auto' | 'exhaustive' = 'auto'): TermScan {
  const covered = terms.map(() => false)
  const positions: TermPosition[] = []
  if (terms.length === 0) return { covered, positions, scanned: 0 }
  const sample = withoutBoilerplate(text.length > cap ? text.slice(0, cap) : text)
  const { latin, cjk, heads, prefixes } = compiled(terms)
  const hit = (at: number, length: number, term: number): void => {
    covered[term] = true
    if (positions.length < MAX_POSITIONS) positions.push({ at, length, term })
  }
  if (latin.size > 0) {
    const visit = (token: string, at: number): void => {
      const camel = isCamelPiece(token)
      const head = camel ? '' : headOf(token)
      if (!camel && !heads.has(head) && !heads.has(head.slice(0, 1))) return
      const whole = latin.get(indexTerm(token))
      if (whole !== undefined) {
        hit(at, token.length, whole)
        return
      }
      if (camel) {
        let offset = 0
        for (const part of token.split(CAMEL_SPLIT)) {
          const index = latin.get(indexTerm(part))
          if (index !== undefined) hit(at + offset, part.length, index)
          offset += part.length
        }
      }
    }
    const starts = mode === 'auto' && prefixes !== undefined ? pieceCandidates(sample, prefixes) : undefined
    if (starts !== undefined) {
      for (const [at, token] of starts) visit(token, at)
    } else {
      forEachPiece(sample, visit)
    }
  }
  if (cjk.length > 0) {
    const lower = sample.toLowerCase()
    const sameLength = lower.length === sample.length
    for (const { term, index } of cjk) {
      let found = 0
      for (let at = lower.indexOf(term); at !== -1 && found < MAX_POSITIONS / cjk.length; at = lower.indexOf(term, at + term.length)) {
        if (!sameLength) {
          covered[index] = true
          break
        }
        hit(at, term.length, index)
        found += 1
      }
    }
    positions.sort((a, b) => a.at - b.at)
  }
  return { covered, positions, scanned: sample.length }
}

/** Share of the query's weight the scan covers (terms without a weight count 1). */
export function coveredWeight(scan: Pick<TermScan, 'covered'>, terms: readonly string[], weights: ReadonlyMap<string, number>): number {
  let total = 0
  let covered = 0
  terms.forEach((term, index) => {
    const weight = weights.get(term) ?? 1
    total += weight
    if (scan.covered[index] === true) covered += weight
  })
  return total === 0 ? 0 : covered / total
}

export interface Passage {
  /** Character offsets into the text, [start, end). */
  readonly start: number
  readonly end: number
}

/**
 * The occurrence a passage and its snippet are built around: in the window, the match of the term
 * that is rarest in this text for its weight (a word said once in a long output, not the word on
 * every line), earliest on ties.
 */
function anchorOf(positions: readonly TermPosition[], from: number, to: number, weightOf: (term: number) => number): number {
  const occurrences = new Map<number, number>()
  for (const position of positions) occurrences.set(position.term, (occurrences.get(position.term) ?? 0) + 1)
  const score = (position: TermPosition): number => weightOf(position.term) / occurrences.get(position.term)!
  let anchor = positions[from]!
  for (let index = from + 1; index <= to; index += 1) {
    const position = positions[index]!
    if (score(position) > score(anchor) + 1e-9) anchor = position
  }
  return anchor.at
}

/**
 * The window of `width` characters holding the most query weight (each term counted once), found
 * with two pointers over the positions. The passage starts shortly before the window's heaviest
 * (rarest) match, at a line start when one is near: a read of it shows that match first.
 */
export function bestPassage(text: string, scan: TermScan, terms: readonly string[], weights: ReadonlyMap<string, number>, width = PASSAGE_CHARS): Passage {
  const positions = scan.positions
  if (positions.length === 0) return { start: 0, end: Math.min(text.length, width) }
  const counts = new Map<number, number>()
  const weightOf = (term: number): number => weights.get(terms[term]!) ?? 1
  let weight = 0
  let best = -1
  let bestLeft = 0
  let bestRight = 0
  let left = 0
  for (let right = 0; right < positions.length; right += 1) {
    const entering = positions[right]!
    const count = counts.get(entering.term) ?? 0
    if (count === 0) weight += weightOf(entering.term)
    counts.set(entering.term, count + 1)
    // never past the entering match: one longer than the window is a window of its own
    while (left < right && entering.at + entering.length - positions[left]!.at > width * 0.75) {
      const leaving = positions[left]!
      const remaining = counts.get(leaving.term)! - 1
      counts.set(leaving.term, remaining)
      if (remaining === 0) weight -= weightOf(leaving.term)
      left += 1
    }
    if (weight > best + 1e-9) {
      best = weight
      bestLeft = left
      bestRight = right
    }
  }
  const anchor = anchorOf(positions, bestLeft, bestRight, weightOf)
  let start = Math.max(0, anchor - Math.floor(width / 8))
  const newline = text.lastIndexOf('\n', anchor)
  if (newline >= start) start = newline + 1
  else if (newline !== -1 && anchor - newline < width / 4) start = newline + 1
  return { start: charBoundary(text, start), end: charBoundary(text, Math.min(text.length, start + width)) }
}


export interface PassageSnippet {
  readonly text: string
  /** Query pieces the snippet marks (as written in the message, lowercased). */
  readonly matched: readonly string[]
}

/**
 * A snippet of `width` characters inside the passage around its densest matches, each match a
 * whole token (or an exact literal at token boundaries) wrapped in `**…**`.
 */
export function passageSnippet(text: string, passage: Passage, scan: TermScan, literals: readonly string[] = [], width = 240): PassageSnippet {
  const marks: Array<{ at: number; length: number }> = scan.positions.filter(p => p.at >= passage.start && p.at + p.length <= passage.end)
  // exact pieces with inner punctuation (paths, versions) are marked where they stand alone
  const region = text.slice(passage.start, passage.end)
  const lowerRegion = region.toLowerCase()
  for (const literal of literals) {
    if (literal.length < 3 || !/[^\p{L}\p{N}\s]/u.test(literal)) continue
    for (let at = lowerRegion.indexOf(literal); at !== -1; at = lowerRegion.indexOf(literal, at + literal.length)) {
      const before = region[at - 1]
      const after = region[at + literal.length]
      if ((before === undefined || !/[\p{L}\p{N}]/u.test(before)) && (after === undefined || !/[\p{L}\p{N}]/u.test(after))) marks.push({ at: passage.start + at, length: literal.length })
    }
  }
  marks.sort((a, b) => a.at - b.at || b.length - a.length)
  // overlapping or touching matches (CJK words and bigrams of one run) are marked as one span
  const spans: Array<{ at: number; length: number }> = []
  for (const mark of marks) {
    const last = spans.at(-1)
    if (last !== undefined && mark.at <= last.at + last.length) last.length = Math.max(last.length, mark.at + mark.length - last.at)
    else spans.push({ ...mark })
  }
  marks.splice(0, marks.length, ...spans)
  // the passage starts just before its anchor match: the snippet does too
  const first = marks.find(mark => mark.at >= passage.start)?.at ?? passage.start
  const start = charBoundary(text, marks.length === 0 ? passage.start : Math.max(passage.start, Math.min(first, passage.start + Math.floor(width / 8)) - Math.floor(width / 8)))
  const end = charBoundary(text, Math.min(text.length, start + width))
  let out = ''
  let cursor = start
  const matched = new Set<string>()
  for (const mark of marks) {
    if (mark.at < cursor || mark.at + mark.length > end) continue
    out += text.slice(cursor, mark.at) + '**' + text.slice(mark.at, mark.at + mark.length) + '**'
    matched.add(text.slice(mark.at, mark.at + mark.length).toLowerCase())
    cursor = mark.at + mark.length
  }
  out += text.slice(cursor, end)
  const flat = out.replace(/\s+/g, ' ').trim()
  return { text: `${start > 0 ? '…' : ''}${flat}${end < text.length ? '…' : ''}`, matched: [...matched] }
}
