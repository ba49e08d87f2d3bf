/**
 * Where a character of `fold(text).toLowerCase()` (scripts.ts) can come from besides the same
 * character of the text: which characters NFKC or lowercasing turn into it. A substring check
 * over a text's stored UTF-8 (sqlite/terms.ts) decides without decoding the text when none of
 * those sources is in it: the term's bytes are then there or the folded text does not hold it.
 * Read from this runtime's own Unicode data (`normalize`, `toLowerCase`), so it never lags the
 * fold it stands for; built at first use (tens of milliseconds, once a process).
 */
import { HAS_UNSPACED } from './scripts.ts'

const UTF16 = new TextDecoder('utf-16le')

/**
 * Code points looked at together: a stretch neither NFKC nor lowercasing changes holds no character
 * either changes alone (decomposition and case mapping apply character by character;
 * tests/fold-sources.test.ts checks the tables against every code point alone).
 */
const CHUNK = 4096
const BLOCK = 256
/** More sources than this (a digit has ~90: ①, ¹, ５, ...): a term is left to the decoded check. */
const MAX_SOURCES = 32
/** Not a character a term is decided by in bytes: spaces (a private-use character folds to one), controls, unassigned, U+FFFD, marks (reordered by NFKC). */
const UNDECIDED = /[\p{White_Space}\p{C}\p{M}\uFFFD]/u

interface Tables {
  /** For a character, the other characters whose NFKC holds it (U+32A5 ㊥ for 中). */
  readonly preimages: ReadonlyMap<string, readonly string[]>
  /** Characters some other character lowercases into (a, ı̇, σ, ς): no byte check tells their case apart. */
  readonly lowered: ReadonlySet<string>
}

let tables: Tables | undefined

/** Whether NFKC and lowercasing leave these code points (surrogates skipped), written one after another, as they are. */
function unchanged(base: number, count: number): boolean {
  const units = new Uint16Array(count * 2)
  let length = 0
  for (let code = base; code < base + count; code += 1) {
    if (code >= 0xd800 && code < 0xe000) continue
    if (code < 0x10000) units[length++] = code
    else {
      units[length++] = 0xd800 + ((code - 0x10000) >> 10)
      units[length++] = 0xdc00 + ((code - 0x10000) & 0x3ff)
    }
  }
  const text = UTF16.decode(units.subarray(0, length))
  return text.normalize('NFKC') === text && text.toLowerCase() === text
}

/** The tables, built once (every code point, a block at a time). */
export function foldTables(): Tables {
  if (tables !== undefined) return tables
  const preimages = new Map<string, string[]>()
  const lowered = new Set<string>()
  for (let start = 0; start < 0x110000; start += CHUNK) {
    // most of the code space is unassigned or changes under neither: skipped a chunk at a time
    if (unchanged(start, CHUNK)) continue
    for (let base = start; base < start + CHUNK; base += BLOCK) {
      if (unchanged(base, BLOCK)) continue
      for (let code = base; code < base + BLOCK; code += 1) {
        if (code >= 0xd800 && code < 0xe000) continue
        const char = String.fromCodePoint(code)
        const normal = char.normalize('NFKC')
        if (normal !== char) {
          for (const made of new Set(normal)) {
            if (made === char) continue
            let list = preimages.get(made)
            if (list === undefined) preimages.set(made, list = [])
            list.push(char)
          }
        }
        const lower = char.toLowerCase()
        if (lower !== char) for (const made of lower) lowered.add(made)
      }
    }
  }
  tables = { preimages, lowered }
  return tables
}

/**
 * The characters whose presence in a text leaves `term` undecided by the text's bytes: the
 * sources, other than itself, of each of its characters in the folded text (their NFKC preimages,
 * and the trailing characters of their canonical decomposition, which compose with what precedes
 * them, with those characters' preimages). Undefined when no byte check decides the term: a
 * cased letter (lowercasing makes one from another, ς from Σ after a letter), one that is not its own NFKC (outside the runs
 * fold keeps as written), a space, control, mark (outside those runs) or U+FFFD, or too many sources.
 *
 * With no source in a text, `fold(text).toLowerCase()` holds the term exactly where the text does:
 * each of its characters there is one of the text's, unchanged (NFKC never drops a character, and
 * moves only marks), and lowercasing leaves it and makes it from nothing else.
 */
export function termSources(term: string): string[] | undefined {
  if (term.length === 0) return undefined
  const chars = [...term]
  // what needs no tables first: a term of Latin letters or digits never builds them
  for (const char of chars) {
    if (!HAS_UNSPACED.test(char) && (UNDECIDED.test(char) || char.normalize('NFKC') !== char)) return undefined
    // a cased letter either way: ς is no character's lowercase alone, but Σ's after a letter
    if (char.toLowerCase() !== char || char.toUpperCase() !== char) return undefined
  }
  const { preimages, lowered } = foldTables()
  const sources = new Set<string>()
  for (const char of chars) {
    if (lowered.has(char)) return undefined
    for (const source of preimages.get(char) ?? []) sources.add(source)
    const parts = [...char.normalize('NFD')]
    for (const part of parts.slice(1)) {
      sources.add(part)
      for (const source of preimages.get(part) ?? []) sources.add(source)
    }
  }
  return sources.size > MAX_SOURCES ? undefined : [...sources]
}
