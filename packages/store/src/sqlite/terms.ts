/**
 * MATCH expressions for the `detail=none` indexes, which take single tokens only (no phrases):
 * a query term becomes the AND of its tokens (words) or of its trigrams (grams). The AND of a
 * term's trigrams also matches texts holding them apart, so substring candidates are checked
 * against the text (`holdsTerms`).
 */
import { ftsString } from '../analyzer.ts'

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
    const tokens = [...new Set((term.match(TOKEN) ?? []).flatMap(token => split === 'chars' ? [...token] : [token]))]
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
  for (const term of terms) {
    const grams = trigrams(term)
    if (grams.length === 0) {
      if (operator === 'and') return undefined
      continue
    }
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
  const usable = terms.filter(term => [...term].length >= 3)
  if (usable.length === 0) return false
  const test = (lower: string): boolean => operator === 'and' ? usable.every(term => lower.includes(term)) : usable.some(term => lower.includes(term))
  if (test(text.toLowerCase())) return true
  return /[^\p{ASCII}]/u.test(text) && test(text.normalize('NFKC').toLowerCase())
}
