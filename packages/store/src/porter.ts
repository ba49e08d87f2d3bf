/**
 * The Porter stemmer, as SQLite's FTS5 `porter` tokenizer applies it: ranking must stem exactly as
 * the index does, or "games" and "game" meet in the index but not in coverage. Tokens shorter than
 * 3 or longer than 64 characters, or with anything but ASCII letters, pass through unchanged.
 * Verified against SQLite itself (tests/porter.test.ts reads FTS5's own vocabulary).
 */

const MAX_STEMMED = 64

function isConsonant(word: string, index: number): boolean {
  const char = word[index]!
  if (char === 'a' || char === 'e' || char === 'i' || char === 'o' || char === 'u') return false
  if (char === 'y') return index === 0 ? true : !isConsonant(word, index - 1)
  return true
}

/** m(): the number of vowel-consonant sequences in `word[0, end)`. */
function measure(word: string, end: number): number {
  let count = 0
  let index = 0
  while (index < end && isConsonant(word, index)) index += 1
  while (index < end) {
    while (index < end && !isConsonant(word, index)) index += 1
    if (index >= end) break
    count += 1
    while (index < end && isConsonant(word, index)) index += 1
  }
  return count
}

function hasVowel(word: string, end: number): boolean {
  for (let index = 0; index < end; index += 1) if (!isConsonant(word, index)) return true
  return false
}

function doubleConsonant(word: string, end: number): boolean {
  return end >= 2 && word[end - 1] === word[end - 2] && isConsonant(word, end - 1)
}

/** *o: ends consonant-vowel-consonant, the last not w, x or y. */
function cvc(word: string, end: number): boolean {
  if (end < 3) return false
  if (!isConsonant(word, end - 1) || isConsonant(word, end - 2) || !isConsonant(word, end - 3)) return false
  const last = word[end - 1]
  return last !== 'w' && last !== 'x' && last !== 'y'
}

/** Replace `suffix` by `replacement` when the stem before it has measure > `min`. */
function replaceIf(word: string, suffix: string, replacement: string, min: number): string | undefined {
  if (!word.endsWith(suffix)) return undefined
  const stem = word.length - suffix.length
  return measure(word, stem) > min ? word.slice(0, stem) + replacement : word
}

function step1a(word: string): string {
  // as SQLite does: a suffix that is the whole word is not one
  if (word.endsWith('sses') && word.length > 4) return word.slice(0, -2)
  if (word.endsWith('ies') && word.length > 3) return word.slice(0, -2)
  if (word.endsWith('ss')) return word
  if (word.endsWith('s')) return word.slice(0, -1)
  return word
}

function step1b(word: string): string {
  if (word.endsWith('eed') && word.length > 3) return measure(word, word.length - 3) > 0 ? word.slice(0, -1) : word
  let stem: string | undefined
  if (word.endsWith('ed') && hasVowel(word, word.length - 2)) stem = word.slice(0, -2)
  else if (word.endsWith('ing') && hasVowel(word, word.length - 3)) stem = word.slice(0, -3)
  if (stem === undefined) return word
  if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return `${stem}e`
  if (doubleConsonant(stem, stem.length) && !/[lsz]$/.test(stem)) return stem.slice(0, -1)
  if (measure(stem, stem.length) === 1 && cvc(stem, stem.length)) return `${stem}e`
  return stem
}

function step1c(word: string): string {
  return word.endsWith('y') && hasVowel(word, word.length - 1) ? `${word.slice(0, -1)}i` : word
}

const STEP2: ReadonlyArray<readonly [string, string]> = [
  ['ational', 'ate'], ['tional', 'tion'], ['enci', 'ence'], ['anci', 'ance'], ['izer', 'ize'], ['logi', 'log'],
  ['bli', 'ble'], ['alli', 'al'], ['entli', 'ent'], ['eli', 'e'], ['ousli', 'ous'], ['ization', 'ize'],
  ['ation', 'ate'], ['ator', 'ate'], ['alism', 'al'], ['iveness', 'ive'], ['fulness', 'ful'], ['ousness', 'ous'],
  ['aliti', 'al'], ['iviti', 'ive'], ['biliti', 'ble'],
]
const STEP3: ReadonlyArray<readonly [string, string]> = [
  ['icate', 'ic'], ['ative', ''], ['alize', 'al'], ['iciti', 'ic'], ['ical', 'ic'], ['ful', ''], ['ness', ''],
]
const STEP4 = ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize']

/** The longest matching suffix of a table decides; a failed condition stops the step. */
function byTable(word: string, table: ReadonlyArray<readonly [string, string]>, min: number): string {
  let best: readonly [string, string] | undefined
  for (const entry of table) if (word.endsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry
  return best === undefined ? word : replaceIf(word, best[0], best[1], min) ?? word
}

function step4(word: string): string {
  let best: string | undefined
  for (const suffix of STEP4) if (word.endsWith(suffix) && (best === undefined || suffix.length > best.length)) best = suffix
  if (best === undefined) return word
  const stem = word.length - best.length
  if (measure(word, stem) <= 1) return word
  if (best === 'ion' && !/[st]$/.test(word.slice(0, stem))) return word
  return word.slice(0, stem)
}

function step5(word: string): string {
  let out = word
  if (out.endsWith('e')) {
    const m = measure(out, out.length - 1)
    if (m > 1 || (m === 1 && !cvc(out, out.length - 1))) out = out.slice(0, -1)
  }
  if (measure(out, out.length) > 1 && doubleConsonant(out, out.length) && out.endsWith('l')) out = out.slice(0, -1)
  return out
}

const ASCII_WORD = /^[a-z]+$/

/** The index's stem of one lowercased token. */
export function porterStem(token: string): string {
  if (token.length < 3 || token.length > MAX_STEMMED || !ASCII_WORD.test(token)) return token
  let word = step1a(token)
  word = step1b(word)
  word = step1c(word)
  word = byTable(word, STEP2, 0)
  word = byTable(word, STEP3, 0)
  word = step4(word)
  return step5(word)
}
