/**
 * The store's analyzer output as PostgreSQL index values. The `words` view is split, folded and
 * stemmed here the way SQLite's `porter unicode61 remove_diacritics 2` tokenizer treats it (with the
 * store's own Porter module, the one ranking stems with: one analyzer for both backends), and the
 * lexemes go into a `tsvector` as they are (no text search parser or dictionary touches them), so
 * CJK words and bigrams, camelCase parts and stems match exactly as on SQLite. The `grams` view is
 * kept lowercased as text for a pg_trgm index that answers substring queries.
 */
import { dayKey } from '../days.ts'
import { porterStem } from '../porter.ts'
import { outsideRuns, spelledMarks } from '../scripts.ts'

/** Tokens as unicode61 sees them once diacritics are folded: runs of letters, digits and private-use characters. */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu
const MARKS = /\p{M}+/gu
/** Lexemes longer than this are not indexed (PostgreSQL's own limit is 2047 bytes). */
const MAX_LEXEME_CHARS = 200
/** A tsvector holds at most 1 MB; stop adding lexemes well before. */
const MAX_TSVECTOR_BYTES = 900_000

/** The lexemes of one analyzed text, in first-seen order, without duplicates. */
export function lexemes(words: string): string[] {
  // diacritics folded outside the runs of the scripts written without spaces, which stay as
  // written, their marks spelled as the words view spells them (scripts.ts): a query term's too
  const folded = spelledMarks(outsideRuns(words.toLowerCase(), stretch => stretch.normalize('NFKD').replace(MARKS, '')))
  const seen = new Set<string>()
  // a token met before is stemmed once: a 100 KB log repeats its words thousands of times
  const met = new Set<string>()
  let bytes = 0
  for (const match of folded.matchAll(TOKEN)) {
    const token = match[0]
    if (token.length > MAX_LEXEME_CHARS || met.has(token)) continue
    met.add(token)
    const lexeme = porterStem(token)
    if (seen.has(lexeme)) continue
    bytes += Buffer.byteLength(lexeme) + 8
    if (bytes > MAX_TSVECTOR_BYTES) break
    seen.add(lexeme)
  }
  return [...seen]
}

/** The lexeme that puts a row in its session's scope (cannot collide: word lexemes have no `:`). */
export function scopeLexeme(tag: string): string {
  return `~s:${tag}`
}

/** One lexeme quoted for tsvector or tsquery input: never parsed as operators. */
function quote(lexeme: string): string {
  return `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
}

/** What starts a day lexeme (then yyyymmdd). */
export const DAY_PREFIX = '~d:'

/** The lexeme of a UTC day a row's time words refer to (days.ts; cannot collide, like the scope's). */
export function dayLexeme(day: number): string {
  return `${DAY_PREFIX}${dayKey(day)}`
}

/** tsvector input of a row: its word lexemes, its scope lexeme and the days it refers to. */
export function tsvectorText(words: string, tag: string, days: readonly number[] = []): string {
  return [...lexemes(words), scopeLexeme(tag), ...days.map(dayLexeme)].map(quote).join(' ')
}

/** tsquery input matching rows that refer to any of these days. */
export function daysQuery(days: readonly number[]): string {
  return `(${days.map(day => quote(dayLexeme(day))).join(' | ')})`
}

/**
 * tsquery input for index terms (each term analysed like a document; a term of several lexemes
 * needs all of them), or undefined when no term has a lexeme.
 */
export function termsQuery(terms: readonly string[], operator: 'and' | 'or'): string | undefined {
  const parts = terms.map(termQuery).filter((part): part is string => part !== undefined)
  if (parts.length === 0) return undefined
  return parts.join(operator === 'and' ? ' & ' : ' | ')
}

export function termQuery(term: string): string | undefined {
  const found = lexemes(term)
  return found.length === 0 ? undefined : lexemeQuery(found)
}

/** tsquery input requiring all of these lexemes. */
export function lexemeQuery(found: readonly string[]): string {
  return `(${found.map(quote).join(' & ')})`
}

/** tsquery input matching any of these sessions' scope lexemes. */
export function scopeQuery(tags: readonly string[]): string {
  return `(${tags.map(tag => quote(scopeLexeme(tag))).join(' | ')})`
}

/** The grams view as stored: lowercased, so substring matching is case-insensitive like FTS5's trigram. */
export function gramsText(grams: string): string {
  return grams.toLowerCase()
}

/** A LIKE pattern for one substring (`\` escapes, the server's default). */
export function likePattern(substring: string): string {
  return `%${substring.toLowerCase().replace(/[\\%_]/g, char => `\\${char}`)}%`
}

/** A regular expression matching one substring: every ASCII character that is not a letter or a digit escaped (in an ARE, `\` before one is that character). */
export function regexPattern(substring: string): string {
  return substring.toLowerCase().replace(/[^A-Za-z0-9\u0080-\uffff]/g, char => `\\${char}`)
}
