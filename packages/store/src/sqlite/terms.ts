/**
 * MATCH expressions for the `detail=none` indexes, which take single tokens only (no phrases):
 * a query term becomes the AND of its tokens (words) or of its trigrams (grams). The AND of a
 * term's trigrams also matches texts holding them apart, so substring candidates are checked
 * against the text (`holdsTerms`).
 */
import type { DatabaseSync } from 'node:sqlite'
import { ftsString } from '../analyzer.ts'
import { termSources } from '../fold-sources.ts'
import { fold, spelledMarks } from '../scripts.ts'
import { essentialTerms } from '../substring-terms.ts'
import { decodeText } from './rows.ts'

/** Token characters of `unicode61` (letters, digits, private use); everything else separates. */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu
/** Trigrams used per substring term: the AND narrows fast, the text check does the rest. */
const MAX_TRIGRAMS = 12
/**
 * A stored text of at least this many bytes is checked on its bytes first (holdsInBytes): a row
 * whose trigrams hold a Chinese term it does not (6 rows of 2M characters, `中文字 文字中` for
 * `中文字中`) was decoded, lowercased and folded whole by each statement that checked it, 0.84 s
 * a search, and a search grew with every such row. A byte search of the same row takes 1-4 ms.
 */
export const BYTE_CHECK_BYTES = 65_536
/**
 * Verdicts kept of long rows' checks (shadow_held): a search checks a false candidate in each of
 * its lists and counts, three reads of its 6 MB (8 ms each, before any check); a kept verdict
 * costs the read of the row's id, revision and hash (~1 ms there: past the text's pages).
 */
const KEPT_VERDICTS = 4_096
/** Term lists numbered for those verdicts' keys; past this many, numbering starts over with new numbers. */
const KEPT_LISTS = 256

/**
 * `chars` splits every token into characters: the fallback when SQLite's Unicode tables (older
 * than JavaScript's) see a separator inside what JavaScript calls one token.
 */
export function wordsMatch(terms: readonly string[], operator: 'and' | 'or', split: 'tokens' | 'chars' = 'tokens'): string | undefined {
  const parts: string[] = []
  for (const term of terms) {
    // spelled as the words view spells them (scripts.ts): a Thai mark is no separator there
    const tokens = [...new Set((spelledMarks(term).match(TOKEN) ?? []).flatMap(token => split === 'chars' ? [...token] : [token]))]
    if (tokens.length === 0) {
      if (operator === 'and') return undefined
      continue
    }
    parts.push(tokens.length === 1 ? ftsString(tokens[0]!) : `(${tokens.map(ftsString).join(' AND ')})`)
  }
  return parts.length === 0 ? undefined : parts.join(operator === 'and' ? ' AND ' : ' OR ')
}

export function gramsMatch(terms: readonly string[], operator: 'and' | 'or'): string | undefined {
  const parts: string[] = []
  const essential = new Set(usableTerms(terms, operator))
  for (const term of new Set(terms)) {
    const grams = trigrams(term)
    if (grams.length === 0) {
      if (operator === 'and') return undefined
      continue
    }
    if (!essential.has(term)) continue
    parts.push(grams.length === 1 ? ftsString(grams[0]!) : `(${grams.map(ftsString).join(' AND ')})`)
  }
  return parts.length === 0 ? undefined : parts.join(operator === 'and' ? ' AND ' : ' OR ')
}

/** Distinct trigrams of a term (code points, as the trigram tokenizer cuts), at most MAX_TRIGRAMS spread over it. */
export function trigrams(term: string): string[] {
  const chars = [...term]
  const all: string[] = []
  for (let index = 0; index + 3 <= chars.length; index += 1) all.push(chars.slice(index, index + 3).join(''))
  const distinct = [...new Set(all)]
  if (distinct.length <= MAX_TRIGRAMS) return distinct
  // first and last always (the ends of the term), the rest evenly between
  const picked = new Set<string>()
  for (let step = 0; step < MAX_TRIGRAMS; step += 1) picked.add(distinct[Math.round(step * (distinct.length - 1) / (MAX_TRIGRAMS - 1))]!)
  return [...picked]
}

/**
 * Whether a text holds the substring terms (any of them, or all), case-insensitively, as the
 * trigram index folds case. NFKC as the analyzer indexes: tried only when the plain text fails.
 */
export function holdsTerms(text: string, terms: readonly string[], operator: 'and' | 'or'): boolean {
  return holdsUsable(text, usableTerms(terms, operator), operator)
}

/** The terms a substring check looks for: of three characters or more, those that decide (essentialTerms). */
export function usableTerms(terms: readonly string[], operator: 'and' | 'or'): string[] {
  return essentialTerms(terms.filter(term => [...term].length >= 3), operator)
}

/** holdsTerms with its terms already usableTerms'. */
function holdsUsable(text: string, usable: readonly string[], operator: 'and' | 'or'): boolean {
  if (usable.length === 0) return false
  const test = (lower: string): boolean => operator === 'and' ? usable.every(term => lower.includes(term)) : usable.some(term => lower.includes(term))
  if (test(text.toLowerCase())) return true
  if (!/[^\p{ASCII}]/u.test(text)) return false
  // folded as the analyzer indexes; a text folding leaves as it is was tested already
  const folded = fold(text)
  return folded !== text && test(folded.toLowerCase())
}

/**
 * Whether a text's stored UTF-8 holds the terms, decided on its bytes when it can be (undefined
 * when not: a term some character of the text may fold or lowercase into, fold-sources.ts): a
 * term's bytes in the text are a match; none, with none of its sources there, is none in the
 * folded text either. `sources[i]` are `terms[i]`'s (termSources, as bytes).
 */
export function holdsInBytes(bytes: Uint8Array, terms: readonly string[], sources: ReadonlyArray<readonly Buffer[] | undefined>, operator: 'and' | 'or'): boolean | undefined {
  if (terms.length === 0) return false
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let undecided = false
  for (const [index, term] of terms.entries()) {
    const mine = sources[index]
    const held = mine === undefined ? undefined
      : buffer.includes(term) ? true
        : mine.some(source => buffer.includes(source)) ? undefined : false
    if (held === undefined) undecided = true
    else if (held === (operator === 'or')) return held
  }
  return undecided ? undefined : operator === 'and'
}

/** Each term's sources as UTF-8 (undefined: the term is checked on the decoded text only). */
export function sourceBytes(terms: readonly string[]): Array<Buffer[] | undefined> {
  return terms.map(term => termSources(term)?.map(source => Buffer.from(source, 'utf8')))
}

/**
 * Register `shadow_holds(text, operator, terms_json)` on a connection: holdsTerms over a row's
 * whole text, in the statement, so false substring candidates never become rows. It replaced one
 * `instr(lower(text), ?)` per term: SQLite's instr compares at every position, so 48 terms of a
 * repeated letter took 12 ms each over a 2M-character text (1.9 s a search over five such rows);
 * here the text is lowercased once and each term found by V8's string search (0.8-1.4 ms). A long
 * text is looked at in its bytes first (BYTE_CHECK_BYTES).
 *
 * For a long row, `shadow_held(id, rev, hash, operator, terms_json)` is the verdict
 * `shadow_holds_kept(text, id, rev, hash, operator, terms_json)` gave it (NULL: none kept; asked
 * first in a coalesce, which reads the text only when it must). Every rewrite of a row's text
 * stamps a new revision and hash: a kept verdict is of the text the row holds.
 */
export function registerTermsFunction(db: DatabaseSync): void {
  // the statement's terms, worked out once (not per row); their sources at its first long row
  let key = ''
  let terms: string[] = []
  let sources: Array<Buffer[] | undefined> | undefined
  const check = (text: unknown, operator: unknown, list: string): number => {
    const mode = operator === 'and' ? 'and' : 'or'
    if (`${mode} ${list}` !== key) {
      terms = usableTerms(JSON.parse(list) as string[], mode)
      key = `${mode} ${list}`
      sources = undefined
    }
    if (text instanceof Uint8Array && text.byteLength >= BYTE_CHECK_BYTES) {
      const decided = holdsInBytes(text, terms, sources ??= sourceBytes(terms), mode)
      if (decided !== undefined) return decided ? 1 : 0
    }
    return holdsUsable(decodeText(text), terms, mode) ? 1 : 0
  }
  // oldest first (a Map keeps insertion order); a term list by its number, not its text (up to 4k characters a key)
  const kept = new Map<string, number>()
  const lists = new Map<string, number>()
  let listCount = 0
  const verdictKey = (id: unknown, rev: unknown, hash: unknown, operator: unknown, list: unknown): string => {
    const named = `${String(operator)} ${String(list)}`
    let number = lists.get(named)
    if (number === undefined) {
      if (lists.size >= KEPT_LISTS) lists.clear()
      lists.set(named, number = listCount++)
    }
    return `${String(id)} ${String(rev)} ${String(hash)} ${number}`
  }
  db.function('shadow_holds', { deterministic: true }, (text, operator, list) => {
    if (text === null || typeof list !== 'string') return 0
    return check(text, operator, list)
  })
  db.function('shadow_held', { deterministic: false }, (id, rev, hash, operator, list) => kept.get(verdictKey(id, rev, hash, operator, list)) ?? null)
  db.function('shadow_holds_kept', { deterministic: false }, (text, id, rev, hash, operator, list) => {
    if (text === null || typeof list !== 'string') return 0
    const verdict = check(text, operator, list)
    kept.set(verdictKey(id, rev, hash, operator, list), verdict)
    if (kept.size > KEPT_VERDICTS) kept.delete(kept.keys().next().value!)
    return verdict
  })
}
