/**
 * The scripts whose text is searched as runs of characters rather than as space-separated words.
 * "CJK" in this package's names means these: Chinese, Japanese and Korean, and the Southeast Asian
 * scripts written without spaces between words (Thai, Lao, Khmer, Myanmar). unicode61 (and every
 * tokenizer that splits at spaces and punctuation) makes a whole Thai sentence one token, and cuts
 * it again at each vowel or tone mark: a word inside a sentence was never found, in any scope.
 * Their runs are indexed as dictionary words and character bigrams, kept whole as substring
 * anchors, and matched as substrings when ranked, as Chinese is.
 */

/**
 * The letters, digits and marks of the Southeast Asian scripts written without spaces: their
 * punctuation (។, ။, ๚) ends a run as a space does (inside one it cut bigrams into single letters).
 */
const UNSPACED = '[[\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}]&&[\\p{L}\\p{N}\\p{M}]]'
/** Whether a text holds a character of those scripts' runs (fold keeps them as written). */
export const HAS_UNSPACED = new RegExp(UNSPACED, 'v')
const UTF16 = new TextDecoder('utf-16le')
/** Private-use characters (icon fonts' glyphs): no word's letters. */
const PRIVATE_USE = /\p{Co}/u

/**
 * A non-ASCII stretch outside the runs of the scripts written without spaces, with the ASCII
 * character before it (a letter its marks compose with: e and U+0301). Private-use characters
 * are left out: no normalization changes one, and a spelled view holds millions.
 */
const CHANGEABLE = new RegExp(`[\\x00-\\x7f]?[[^\\x00-\\x7f]--${UNSPACED}--\\p{Co}]+`, 'gv')

/**
 * `change` applied to a text outside the runs of the scripts written without spaces; the runs
 * stay as written. `change` must leave ASCII as it is and work character by character between
 * two ASCII ones (NFKC, NFKD and dropping marks do): it is given each non-ASCII stretch with the
 * character before it, found by one regex (a text of many short runs, walked run by run, took
 * 0.4 s for 2M characters).
 */
export function outsideRuns(text: string, change: (stretch: string) => string): string {
  if (!HAS_UNSPACED.test(text)) return change(text)
  return text.replace(CHANGEABLE, change)
}

/**
 * A text folded for the index views and queries: NFKC, except in runs of the scripts written
 * without spaces, which stay as written (NFKC splits ำ into ํ and า, ໜ into ຫ and ນ, and puts
 * marks typed out of order in order: a query folded so was found in no text the scan reads,
 * which is the text as written), and private-use characters as spaces (PostgreSQL's lexemes keep
 * them, for the marks spelled below: an icon glued to a word made the word another token, and
 * one of Supplementary Private Use Area-A could be taken for a spelled mark). A text NFKC leaves
 * as it is is its own fold: most are, and a text of many short runs took 0.5 s stretch by stretch.
 */
export function fold(text: string): string {
  // a lone surrogate as U+FFFD, as the UTF-8 every backend stores it in has it
  const whole = text.isWellFormed() ? text : text.toWellFormed()
  const folded = whole.normalize('NFKC') === whole ? whole : outsideRuns(whole, stretch => stretch.normalize('NFKC'))
  return PRIVATE_USE.test(folded) ? withoutPrivateUse(folded) : folded
}

/**
 * Each private-use character as a space, written into one buffer (a regex replace took 0.2-0.5 s
 * for a text of 1M icons, and the substring check folds each candidate's text).
 */
function withoutPrivateUse(text: string): string {
  const out = new Uint16Array(text.length)
  let to = 0
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at)
    if (code >= 0xe000 && code <= 0xf8ff) out[to++] = 0x20
    else if (code >= 0xdb80 && code <= 0xdbff) {
      // planes 15 and 16, private use but for their last two code points (noncharacters); the text is well formed (fold)
      const low = text.charCodeAt(at + 1)
      if ((low & 0x3fe) === 0x3fe && (code & 0x3f) === 0x3f) {
        out[to++] = code
        out[to++] = low
      } else out[to++] = 0x20
      at += 1
    } else out[to++] = code
  }
  return UTF16.decode(out.subarray(0, to))
}

/**
 * The string of these code units, made from `source` (which they were written from): the decoder
 * when `source` has no lone surrogate (it would replace one), else in chunks that keep them.
 */
function stringOf(units: Uint16Array, source: string): string {
  if (source.isWellFormed()) return UTF16.decode(units)
  const parts: string[] = []
  for (let at = 0; at < units.length; at += 8_192) parts.push(String.fromCharCode(...units.subarray(at, at + 8_192)))
  return parts.join('')
}

/**
 * One definition of these characters, in regex class syntax (inside `[...]`, `v` flag), for every
 * module that tells them apart: the analyzer, the scan ranking uses, the resident index.
 */
export const RUN_SCRIPTS = `\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}${UNSPACED}`
/** RUN_SCRIPTS with the iteration mark 々 and the prolonged sound mark ー (Common), which continue a run. */
export const RUN_CHARS = `${RUN_SCRIPTS}\\u3005\\u30fc`

/** The vowel and tone marks of the unspaced Southeast Asian scripts (not Han's or kana's: NFKC composes those); all in the BMP. */
const RUN_MARKS = /[\p{M}&&[\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]]/gv
/** Where those marks move in a words view: Supplementary Private Use Area-A, each mark at its own code point's offset (SQLite's scope tokens are BMP private use: never one of these). */
const MARK_BASE = 0xf0000

/**
 * Per BMP code unit, 1 for such a mark (worked out once, not per character of every view), and a
 * regex of their ranges that tells at once whether a view holds any.
 */
let marks: { readonly table: Uint8Array; readonly any: RegExp } | undefined
function markTable(): { readonly table: Uint8Array; readonly any: RegExp } {
  if (marks !== undefined) return marks
  const table = new Uint8Array(0x10000)
  // one pass of the regex over every BMP character (surrogates left out: the marks are all BMP)
  const units = new Uint16Array(0x10000 - 0x800)
  for (let code = 0, to = 0; code < 0x10000; code += 1) if (code < 0xd800 || code > 0xdfff) units[to++] = code
  for (const match of UTF16.decode(units).matchAll(RUN_MARKS)) table[match[0].charCodeAt(0)] = 1
  const ranges: string[] = []
  const hex = (code: number): string => `\\u${code.toString(16).padStart(4, '0')}`
  for (let code = 0, start = -1; code <= 0x10000; code += 1) {
    const mark = code < 0x10000 && table[code] === 1
    if (mark && start < 0) start = code
    if (!mark && start >= 0) {
      ranges.push(`${hex(start)}-${hex(code - 1)}`)
      start = -1
    }
  }
  marks = { table, any: new RegExp(`[${ranges.join('')}]`) }
  return marks
}

/**
 * A words view (or a words-index term) with each such mark spelled as a private-use character.
 * unicode61 (SQLite) separates tokens at every mark, so ข้อมูล was indexed as ข, อม, ล and every
 * bigram holding a mark as a single letter: lists of all Thai text, and counts no session index
 * made. Private-use characters are token characters there (and in the PostgreSQL lexemes), so a
 * word or bigram stays one token. Only the index sees the spelling; text, scans and anchors keep
 * the marks. Idempotent: a spelled view spells to itself. Written into one buffer (a regex replace
 * took 0.57 s over the 6.3M-character view of 2M characters of Thai).
 */
export function spelledMarks(words: string): string {
  const { table, any } = markTable()
  if (!any.test(words)) return words
  const length = words.length
  let count = 0
  for (let at = 0; at < length; at += 1) count += table[words.charCodeAt(at)]!
  // each mark becomes a surrogate pair
  const out = new Uint16Array(length + count)
  let to = 0
  for (let at = 0; at < length; at += 1) {
    const code = words.charCodeAt(at)
    if (table[code] === 1) {
      const offset = MARK_BASE + code - 0x10000
      out[to++] = 0xd800 + (offset >> 10)
      out[to++] = 0xdc00 + (offset & 0x3ff)
    } else out[to++] = code
  }
  return stringOf(out, words)
}
