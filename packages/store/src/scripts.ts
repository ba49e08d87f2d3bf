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
const UNSPACED_RUN = new RegExp(`${UNSPACED}+`, 'gv')
const HAS_UNSPACED = new RegExp(UNSPACED, 'v')
/** Private-use characters (icon fonts' glyphs): no word's letters. */
const PRIVATE_USE = /\p{Co}/gu

/**
 * A text folded for the index views and queries: NFKC, except in runs of the scripts written
 * without spaces, which stay as written (NFKC splits ำ into ํ and า, and ໜ into ຫ and ນ: a query
 * was folded so, and the scan, which reads the text as written, found it nowhere), and private-use
 * characters as spaces (PostgreSQL's lexemes keep them, for the marks spelled below; an icon
 * glued to a word made the word another token, and one of Supplementary Private Use Area-A could
 * be taken for a spelled mark).
 */
export function fold(text: string): string {
  let folded: string
  if (!HAS_UNSPACED.test(text)) folded = text.normalize('NFKC')
  else {
    folded = ''
    let from = 0
    for (const run of text.matchAll(UNSPACED_RUN)) {
      folded += text.slice(from, run.index).normalize('NFKC') + run[0]
      from = run.index + run[0].length
    }
    folded += text.slice(from).normalize('NFKC')
  }
  return folded.replace(PRIVATE_USE, ' ')
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
const UTF16 = new TextDecoder('utf-16le')

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
  // the decoder would replace a lone surrogate: such a text is spelled by the regex
  if (!words.isWellFormed()) return words.replace(RUN_MARKS, mark => String.fromCodePoint(MARK_BASE + mark.codePointAt(0)!))
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
  return UTF16.decode(out)
}
