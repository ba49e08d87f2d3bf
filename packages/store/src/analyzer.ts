/**
 * Text analysis shared by indexing and querying. Plain functions, no SQL.
 *
 * Two index views of every message:
 * - **words**: the text for a `porter unicode61` index (stemmed Latin), with CJK runs rewritten as
 *   dictionary words (Intl.Segmenter) plus character bigrams, and camelCase identifiers also
 *   spelled as their parts. unicode61 alone treats a whole Chinese run as one token, which is
 *   useless for search; bigrams keep recall when the segmenter splits a query differently from the
 *   document it should match.
 * - **grams**: the literal anchors of the message (identifiers, paths, numbers, CJK runs) for a
 *   `trigram` index, which answers substring queries ("erver.ts", "ECONNREF"). Only the anchors,
 *   not the whole text: a full trigram index is ~5x larger and slower than a scan for common terms.
 *
 * Queries are analysed with the same functions and reach FTS5 only as quoted string literals, so
 * query text is always data, never FTS syntax.
 */

import { fold, RUN_CHARS, RUN_SCRIPTS, spelledMarks } from './scripts.ts'

/** Bump when the index views change: the store then rebuilds its indexes from the stored text. */
// 3: Thai, Lao, Khmer and Myanmar runs analysed as CJK runs are (scripts.ts)
export const ANALYZER_VERSION = 3

/** Longest text indexed per message (the stored content itself is never truncated). */
export const MAX_INDEXED_CHARS = 2_000_000
/** Longest anchor text indexed per message in the trigram index. */
export const MAX_ANCHOR_CHARS = 64_000
/**
 * CJK characters per message segmented into dictionary words for the words view; past them its CJK
 * text is indexed as character bigrams only (each word there is found by its bigrams). The
 * segmenter costs ~0.6 µs a word: a 2M-character message took 1.3 s in it alone. Rows indexed before
 * the cap keep their words past it (a superset: every query's bigrams are among its terms), so
 * ANALYZER_VERSION stays and no store is rebuilt for it.
 */
export const MAX_DICTIONARY_CHARS = 256_000

const CJK_RUN = new RegExp(`[${RUN_CHARS}]+`, 'gv')
export const HAS_CJK = new RegExp(`[${RUN_SCRIPTS}]`, 'v')
/** Runs of ASCII word characters: a camelCase identifier is one of them (`camelWords`). */
const ASCII_WORD = /[A-Za-z0-9_]+/g
/**
 * Tokens worth a substring index: contain a digit, an inner capital, `_ . / \ : -` between word
 * characters, or are an all-caps constant (ECONNREFUSED).
 */
const ANCHOR = /[\p{L}\p{N}_$][\p{L}\p{N}_$./\\:-]*[\p{L}\p{N}_$]/gu
const ANCHOR_MARK = /\d|[a-z][A-Z]|[_./\\:-]/

/**
 * `/\d|[a-z][A-Z]|[_./\\:-]|^[A-Z]{4,}$/.test(token)`, the all-caps test as a loop: the regex's
 * `^[A-Z]{4,}$` overflowed the stack on a token of 4M capitals (NFKC of 2M 'Ⅷ'), failing the append.
 */
function anchorShaped(token: string): boolean {
  if (ANCHOR_MARK.test(token)) return true
  if (token.length < 4) return false
  for (let at = 0; at < token.length; at += 1) {
    const code = token.charCodeAt(at)
    if (code < 0x41 || code > 0x5a) return false
  }
  return true
}

/** Common single-character function words; indexing them as words only adds noise. */
const CJK_STOPWORDS = new Set([
  '的', '了', '和', '是', '在', '我', '你', '他', '她', '它', '们', '这', '那', '就', '也', '都', '而', '及', '与', '或',
  '把', '被', '让', '给', '对', '向', '从', '到', '之', '其', '着', '过', '吗', '呢', '吧', '啊', '很', '还', '又', '个',
  'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'へ', 'や', 'か', 'な', 'た', 'し', 'て',
])

let segmenter: Intl.Segmenter | undefined
function cjkSegmenter(): Intl.Segmenter {
  segmenter ??= new Intl.Segmenter('zh', { granularity: 'word' })
  return segmenter
}

/** Dictionary words of one CJK run, without single-character stopwords. */
export function cjkWords(run: string): string[] {
  const words: string[] = []
  for (const part of cjkSegmenter().segment(run)) {
    if (!part.isWordLike) continue
    if (part.segment.length === 1 && CJK_STOPWORDS.has(part.segment)) continue
    words.push(part.segment)
  }
  return words
}

/**
 * `cjkWords(run).join(' ')` of each of these runs, from one pass of the segmenter over them all,
 * joined by spaces (a space ends a word on both sides): a text of 130k short runs took 2 s run by
 * run, 0.8 s this way (570k Korean words: an append took 11-13 s). Should a word ever span a
 * space, each run is segmented alone instead.
 */
export function cjkWordsOfRuns(runs: readonly string[]): string[] {
  if (runs.length < 2) return runs.map(alone => cjkWords(alone).join(' '))
  const out = runs.map(() => '')
  let run = 0
  let start = 0
  for (const part of cjkSegmenter().segment(runs.join(' '))) {
    while (run < runs.length && part.index >= start + runs[run]!.length) {
      start += runs[run]!.length + 1
      run += 1
    }
    // the space after a run
    if (part.index < start) continue
    if (part.index + part.segment.length > start + runs[run]!.length) return runs.map(alone => cjkWords(alone).join(' '))
    if (!part.isWordLike) continue
    if (part.segment.length === 1 && CJK_STOPWORDS.has(part.segment)) continue
    out[run] = out[run]!.length === 0 ? part.segment : `${out[run]} ${part.segment}`
  }
  return out
}

/** Overlapping character bigrams of one CJK run (the run itself when it is one character). */
export function cjkBigrams(run: string): string[] {
  const chars = [...run]
  if (chars.length < 2) return chars.filter(char => !CJK_STOPWORDS.has(char))
  const grams: string[] = []
  for (let index = 0; index + 1 < chars.length; index += 1) grams.push(chars[index]! + chars[index + 1]!)
  return grams
}

const UTF16 = new TextDecoder('utf-16le')
/** Runs from this long have their bigrams written as one string (below it the arrays cost less than the buffer). */
const BIGRAM_TEXT_CHARS = 64

/**
 * `cjkBigrams(run).join(' ')`, written into one buffer for a long run: a 2M-character run made 2M
 * gram strings and their array first (0.9 s, most of it collecting them; 0.1 s this way). A
 * character is a code point (a surrogate pair is one).
 */
export function cjkBigramText(run: string): string {
  const length = run.length
  // one character (a run between two others' letters): itself unless a stopword, no array made
  if (length === 1) return CJK_STOPWORDS.has(run) ? '' : run
  if (length < BIGRAM_TEXT_CHARS) return cjkBigrams(run).join(' ')
  // where each character starts (the last entry: the run's end)
  const starts = new Int32Array(length + 1)
  let count = 0
  for (let at = 0; at < length; count += 1) {
    starts[count] = at
    const code = run.charCodeAt(at)
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = run.charCodeAt(at + 1)
      // a lone surrogate: the decoder would replace it (a CJK run holds none)
      if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return cjkBigrams(run).join(' ')
      at += 2
    } else at += 1
  }
  starts[count] = length
  if (count < 2) return cjkBigrams(run).join(' ')
  // each gram is two characters, each inner character in two grams, a space between two grams
  const out = new Uint16Array(2 * length - (starts[1]! - starts[0]!) - (length - starts[count - 1]!) + count - 2)
  let to = 0
  for (let char = 0; char + 1 < count; char += 1) {
    if (char > 0) out[to++] = 0x20
    for (let at = starts[char]!; at < starts[char + 2]!; at += 1) out[to++] = run.charCodeAt(at)
  }
  return UTF16.decode(out)
}

/**
 * The camelCase identifiers of a text: whole runs of ASCII word characters with no `_`, starting with
 * a letter, with a capital after it (what `\b[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b` matches, without
 * its nested quantifier: on a run of 4M capitals, as NFKC makes of 2M 'Ⅷ', that regex overflowed the
 * stack and the append failed with a RangeError).
 */
export function camelWords(text: string): string[] {
  const words: string[] = []
  for (const match of text.matchAll(ASCII_WORD)) {
    const word = match[0]
    const first = word.charCodeAt(0)
    if (first <= 0x39 || word.includes('_')) continue
    for (let at = 1; at < word.length; at += 1) {
      const code = word.charCodeAt(at)
      if (code >= 0x41 && code <= 0x5a) {
        words.push(word)
        break
      }
    }
  }
  return words
}

/** Parts of a camelCase identifier: `handleRequestTimeout` → handle, Request, Timeout. */
export function camelParts(word: string): string[] {
  return word.split(/(?<=[a-z0-9])(?=[A-Z])/)
}

/**
 * The rendering of a tool call (`[tool call shell] {...}`) is ours, not the conversation's: its
 * words would make "call" and "tool" match every calling message. Blanked to spaces of the same
 * length, so offsets into the stored text still hold.
 */
const CALL_OPENING = '[tool call '
const CALL_BLANK = ' '.repeat(CALL_OPENING.length)

/**
 * Every CALL_OPENING whose line closes a bracket after it (`[^\]\n]*\]` follows), blanked. In one
 * pass: a lookahead regex scanned to the line's end for each opening, and 200k characters of
 * openings without a bracket took an append 3.8 s and every search holding the message 7 s.
 */
export function withoutBoilerplate(text: string): string {
  let at = text.indexOf(CALL_OPENING)
  if (at < 0) return text
  let out = ''
  let from = 0
  // the first ']' and '\n' at or after the last opening's end (Infinity: none), found again only once passed
  let close = -1
  let newline = -1
  while (at >= 0) {
    const after = at + CALL_OPENING.length
    if (close < after) close = nextOf(text, ']', after)
    if (newline < after) newline = nextOf(text, '\n', after)
    if (close < newline) {
      out += text.slice(from, at) + CALL_BLANK
      from = after
      at = text.indexOf(CALL_OPENING, after)
    } else at = text.indexOf(CALL_OPENING, at + 1)
  }
  return from === 0 ? text : out + text.slice(from)
}

function nextOf(text: string, char: string, from: number): number {
  const at = text.indexOf(char, from)
  return at === -1 ? Infinity : at
}

function normalize(text: string): string {
  let folded = fold(text)
  // NFKC lengthens some characters up to 18 times (ﷺ): 2M of them made 36M characters to index, and
  // runs of millions of letters (㌀, ﷲ) on which the view's regexes overflowed the stack
  if (folded.length > MAX_INDEXED_CHARS) folded = folded.slice(0, charBoundary(folded, MAX_INDEXED_CHARS))
  // NUL and other C0 controls are kept in the stored content but mean nothing to an index.
  return folded.replace(/\p{Cc}/gu, ' ')
}

/** `at`, or one before it when `at` falls between the halves of a surrogate pair (emoji, CJK ext. B). */
export function charBoundary(text: string, at: number): number {
  if (at <= 0 || at >= text.length) return at
  const code = text.charCodeAt(at)
  const before = text.charCodeAt(at - 1)
  return code >= 0xdc00 && code <= 0xdfff && before >= 0xd800 && before <= 0xdbff ? at - 1 : at
}

/** The two index views of one message text. */
export function indexViews(text: string): { words: string; grams: string } {
  const clean = normalize(withoutBoilerplate(text.length > MAX_INDEXED_CHARS ? text.slice(0, MAX_INDEXED_CHARS) : text))
  const extra: string[] = []
  for (const word of camelWords(clean)) extra.push(camelParts(word).join(' '))
  const runs = clean.match(CJK_RUN) ?? []
  const dictionary = cjkWordsOfRuns(dictionaryParts(runs))
  // each run rewritten where it stands: the first occurrence after the last (no CJK letter lies between two runs)
  let words = ''
  let from = 0
  runs.forEach((run, index) => {
    const at = clean.indexOf(run, from)
    const found = dictionary[index] ?? ''
    const bigrams = cjkBigramText(run)
    words += `${clean.slice(from, at)} ${found}${found.length > 0 && bigrams.length > 0 ? ' ' : ''}${bigrams} `
    from = at + run.length
  })
  words += clean.slice(from)
  // a Thai mark would cut its word in the index (scripts.ts); only runs hold such marks
  if (runs.length > 0) words = spelledMarks(words)
  return { words: extra.length === 0 ? words : `${words}\n${extra.join(' ')}`, grams: anchors(clean) }
}

/** The runs, or their first parts, that hold the first MAX_DICTIONARY_CHARS characters of these (the runs past them are left out). */
function dictionaryParts(runs: readonly string[]): string[] {
  const parts: string[] = []
  let left = MAX_DICTIONARY_CHARS
  for (const run of runs) {
    if (left <= 0) break
    if (run.length <= left) parts.push(run)
    else parts.push(run.slice(0, charBoundary(run, left)))
    left -= run.length
  }
  return parts
}

/**
 * The distinct literal anchors of a text as its grams view holds them, lowercased (the trigram
 * index folds case): what the resident index answers substring terms from (resident/). `complete`:
 * every run of anchor characters of the text itself is among them (no tool-call rendering blanked,
 * NFKC changed nothing, no run dropped for a CJK letter or the size cap), so a piece made of
 * anchor characters that the lowercased text holds is inside one of them.
 */
export function anchorView(text: string): { readonly anchors: string[]; readonly complete: boolean } {
  const cut = text.length > MAX_INDEXED_CHARS ? text.slice(0, MAX_INDEXED_CHARS) : text
  const blanked = withoutBoilerplate(cut)
  const clean = normalize(blanked)
  // NFKC changes only non-ASCII text
  let complete = cut.length === text.length && blanked === cut && (!/[^\p{ASCII}]/u.test(cut) || cut === fold(cut))
  const view = anchors(clean, () => { complete = false })
  return { anchors: view.length === 0 ? [] : [...new Set(view.toLowerCase().split(' '))], complete }
}

/** The literal anchors of a text, space separated, at most MAX_ANCHOR_CHARS (`dropped`: a run left out for a CJK letter or the cap). */
export function anchors(text: string, dropped?: () => void): string {
  const seen = new Set<string>()
  let length = 0
  const take = (value: string): boolean => {
    if (seen.has(value)) return true
    if (length + value.length + 1 > MAX_ANCHOR_CHARS) return false
    seen.add(value)
    length += value.length + 1
    return true
  }
  for (const match of text.matchAll(CJK_RUN)) {
    if (!take(match[0])) {
      dropped?.()
      break
    }
  }
  for (const match of text.matchAll(ANCHOR)) {
    const token = match[0]
    if (token.length < 3 || !anchorShaped(token)) continue
    if (HAS_CJK.test(token)) dropped?.()
    else if (!take(token)) {
      dropped?.()
      break
    }
  }
  return [...seen].join(' ')
}

/** Longest query accepted, in characters. */
export const MAX_QUERY_CHARS = 4_000
/** At most this many terms of a query are used. */
export const MAX_QUERY_TERMS = 48
/**
 * A substring term is looked for by its first this many characters (on every backend and in the
 * session index alike): a match of a term costs up to its length at every position of a text on
 * PostgreSQL and SQLite, and a term of thousands of characters is found by its first 256.
 */
export const MAX_SUBSTRING_CHARS = 256

export interface AnalyzedQuery {
  /** Terms for the words index (each becomes one quoted FTS5 string). */
  readonly words: readonly string[]
  /** Substrings (≥ 3 characters) for the trigram index. */
  readonly grams: readonly string[]
  /** The query's literal pieces, lowercased, for snippet marking and literal matching. */
  readonly literals: readonly string[]
  /** The query asks for the current state ("latest", "now", "目前"): newer answers should win. */
  readonly recency: boolean
  /**
   * The query's words as a reader names them (Latin tokens, CJK dictionary words of two or more
   * characters), lowercased: what "no message mentions …" reports on.
   */
  readonly topics: readonly string[]
}

/**
 * Words that ask for the newest state of something rather than name a topic. They are taken out
 * of the query terms (no message needs to contain "latest") and turn on recency ordering.
 */
const RECENCY_CUE = /\b(?:latest|newest|current|currently|now|most\s+recent(?:ly)?|as\s+of\s+now)\b/giu
const CJK_RECENCY_CUE = /最新|现在|目前|当前|眼下|如今/gu

/** Tokens as unicode61 sees them: runs of letters, digits and marks. */
const LATIN_TOKEN = /[\p{L}\p{N}\p{M}]+/gu
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u

/**
 * Question and filler words of CJK queries. They stay in the index (a message may be about "why");
 * in a query they only dilute: "数据库迁移是什么时候做的" is about 数据库迁移, not about 什么时候.
 */
const CJK_QUERY_STOPWORDS = new Set([
  ...CJK_STOPWORDS,
  '什么', '时候', '什么时候', '怎么', '怎么样', '怎样', '为什么', '为何', '哪个', '哪些', '哪里', '哪儿', '哪', '多少', '几', '谁',
  '有', '有没有', '是否', '如何', '一下', '那个', '这个', '那些', '这些', '之前', '以前', '后来', '多久', '请问', '能', '可以',
  '现在', '最新', '目前', '当前', '最后', '一共', '总共', '呀', '么', '做', '用', '说', '提到', '讨论',
])

/**
 * The topical chunks of one CJK query run: maximal runs of dictionary words that are not query
 * stopwords. Bigrams are then taken inside a chunk only, so none straddles a dropped word. A run
 * made only of stopwords is kept whole (the user asked about exactly that).
 */
export function cjkQueryChunks(run: string): string[] {
  const chunks: string[] = []
  let chunk = ''
  for (const part of cjkSegmenter().segment(run)) {
    if (part.isWordLike && !CJK_QUERY_STOPWORDS.has(part.segment)) {
      chunk += part.segment
      continue
    }
    if (chunk.length > 0) chunks.push(chunk)
    chunk = ''
  }
  if (chunk.length > 0) chunks.push(chunk)
  return chunks.length > 0 ? chunks : [run]
}

export function analyzeQuery(query: string): AnalyzedQuery {
  const normalized = normalize(query).trim()
  const stripped = normalized.replace(RECENCY_CUE, ' ').replace(CJK_RECENCY_CUE, ' ').trim()
  // A query that is nothing but a cue word is a search for that word.
  const recency = stripped !== normalized && /[\p{L}\p{N}]/u.test(stripped)
  const clean = recency ? stripped : normalized
  const words: string[] = []
  const grams: string[] = []
  const literals: string[] = []
  const topics: string[] = []
  const add = (list: string[], value: string): void => {
    const lower = value.toLowerCase()
    if (lower.length > 0 && !list.includes(lower)) list.push(lower)
  }
  const addGram = (value: string): void => add(grams, value.length > MAX_SUBSTRING_CHARS ? value.slice(0, charBoundary(value, MAX_SUBSTRING_CHARS)) : value)
  for (const match of clean.matchAll(CJK_RUN)) {
    for (const chunk of cjkQueryChunks(match[0])) {
      const chars = [...chunk]
      add(literals, chunk)
      if (chars.length >= 2 && chars.length <= 4) add(topics, chunk)
      else for (const word of cjkWords(chunk)) if ([...word].length >= 2) add(topics, word)
      if (chars.length >= 2 && chars.length <= 4) add(words, chunk)
      for (const word of cjkWords(chunk)) if ([...word].length >= 2) add(words, word)
      for (const gram of cjkBigrams(chunk)) add(words, gram)
      if (chars.length >= 3) addGram(chunk)
    }
  }
  const latin = clean.replace(CJK_RUN, ' ')
  for (const piece of latin.split(/\s+/)) {
    const trimmed = piece.replace(/^["'`([{<]+|["'`)\]}>,;!?]+$/g, '')
    if (trimmed.length === 0) continue
    add(literals, trimmed)
    // Any fragment can be part of an indexed anchor ("erver" of src/server.ts).
    if (trimmed.length >= 3) addGram(trimmed)
    for (const token of trimmed.matchAll(LATIN_TOKEN)) {
      // marks alone (U+0301 after a Thai run) are no word: no index holds one
      if (!LETTER_OR_DIGIT.test(token[0])) continue
      add(words, token[0])
      add(topics, token[0])
      for (const part of camelParts(token[0])) if (part !== token[0]) add(words, part)
    }
  }
  return { words: words.slice(0, MAX_QUERY_TERMS), grams: grams.slice(0, MAX_QUERY_TERMS), literals: literals.slice(0, MAX_QUERY_TERMS), recency, topics: topics.slice(0, MAX_QUERY_TERMS) }
}

/** One FTS5 string literal: double quotes doubled, so any text is matched as a phrase, never parsed. */
export function ftsString(term: string): string {
  return `"${term.replaceAll('"', '""')}"`
}
