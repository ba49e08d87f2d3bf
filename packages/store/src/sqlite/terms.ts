/**
 * MATCH expressions for the `detail=none` indexes, which take single tokens only (no phrases):
 * a query term becomes the AND of its tokens (words) or of its trigrams (grams). The AND of a
 * term's trigrams also matches texts holding them apart, so substring candidates are checked
 * against the text (`holdsTerms`).
 */
import type { DatabaseSync } from 'node:sqlite'
import { ftsString } from '../analyzer.ts'
import { fold, spelledMarks } from '../scripts.ts'
import { essentialTerms } from '../substring-terms.ts'
import { decodeText } from './rows.ts'

/** Token characters of `unicode61` (letters, digits, private use); everything else separates. */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu
/** Trigrams used per substring term: the AND narrows fast, the text check does the rest. */
const MAX_TRIGRAMS = 12

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
 * Register `shadow_holds(text, operator, terms_json)` on a connection: holdsTerms over a row's
 * whole text, in the statement, so false substring candidates never become rows. It replaced one
 * `instr(lower(text), ?)` per term: SQLite's instr compares at every position, so 48 terms of a
 * repeated letter took 12 ms each over a 2M-character text (1.9 s a search over five such rows);
 * here the text is lowercased once and each term found by V8's string search (0.8-1.4 ms).
 */
export function registerTermsFunction(db: DatabaseSync): void {
  // the statement's terms, worked out once (not per row)
  let key = ''
  let terms: string[] = []
  db.function('shadow_holds', { deterministic: true }, (text, operator, list) => {
    if (text === null || typeof list !== 'string') return 0
    const mode = operator === 'and' ? 'and' : 'or'
    if (`${mode} ${list}` !== key) {
      terms = usableTerms(JSON.parse(list) as string[], mode)
      key = `${mode} ${list}`
    }
    return holdsUsable(decodeText(text), terms, mode) ? 1 : 0
  })
}
