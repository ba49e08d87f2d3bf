/**
 * Cross-lingual bridge: the query's software-engineering words in the other language (English ↔
 * Chinese), from a small general glossary (`glossary-data.ts`). A bridge term is an extra,
 * lighter query term: it brings its own candidate list and counts toward coverage at
 * BRIDGE_SHARE of the weight the original word carries, so a message in the query's own language
 * with the same words still ranks first. Plain functions, no store access.
 */
import { cjkBigrams } from '../analyzer.ts'
import { GLOSSARY_TEXT } from './glossary-data.ts'
import { indexTerm } from './passage.ts'

/**
 * A translation covers this share of what the original word would. A prior (a translation is
 * weaker evidence than the word itself), not fitted to any set.
 */
export const BRIDGE_SHARE = 0.5
/** Bridge terms per query at most (a long query would otherwise double its lists). */
export const MAX_BRIDGES = 12

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

export interface BridgeTerm {
  /** The query's word (an English word, or the Chinese word found in the query). */
  readonly source: string
  /** The translation as written. */
  readonly translation: string
  /** The translation as a words-index term (a Chinese word as its bigrams, all required). */
  readonly index: string
  /** The translation as a coverage term (stemmed English, or the Chinese word as a substring). */
  readonly scan: string
}

interface Glossary {
  /** English stem → Chinese words. */
  readonly toZh: ReadonlyMap<string, readonly string[]>
  /** Chinese word → English words. */
  readonly toEn: ReadonlyMap<string, readonly string[]>
  readonly longestZh: number
}

let loaded: Glossary | undefined

/** The glossary, parsed once. Exported for its tests (well-formed, no one-character Chinese side). */
export function glossary(): Glossary {
  if (loaded !== undefined) return loaded
  const toZh = new Map<string, string[]>()
  const toEn = new Map<string, string[]>()
  let longestZh = 0
  for (const line of GLOSSARY_TEXT.split('\n')) {
    const [english, chinese] = line.split('|')
    if (english === undefined || chinese === undefined) continue
    const word = english.trim().toLowerCase()
    const stem = indexTerm(word)
    for (const zh of chinese.split(',').map(part => part.trim()).filter(part => [...part].length >= 2)) {
      toZh.set(stem, [...new Set([...(toZh.get(stem) ?? []), zh])])
      toEn.set(zh, [...new Set([...(toEn.get(zh) ?? []), word])])
      longestZh = Math.max(longestZh, [...zh].length)
    }
  }
  loaded = { toZh, toEn, longestZh }
  return loaded
}

function chineseTerm(source: string, zh: string): BridgeTerm {
  const chars = [...zh]
  return { source, translation: zh, index: chars.length === 2 ? zh : cjkBigrams(zh).join(' '), scan: zh }
}

/** Glossary words in a CJK run, longest first from left to right (数据库 before 数据). */
function chineseWords(run: string, longest: number, known: ReadonlyMap<string, unknown>): string[] {
  const chars = [...run]
  const found: string[] = []
  for (let at = 0; at < chars.length;) {
    let length = Math.min(longest, chars.length - at)
    for (; length >= 2; length -= 1) if (known.has(chars.slice(at, at + length).join(''))) break
    if (length >= 2) {
      found.push(chars.slice(at, at + length).join(''))
      at += length
    } else {
      at += 1
    }
  }
  return found
}

/**
 * The bridge terms of a query: its English words in Chinese and its Chinese words in English.
 * `words` are the analyzer's word terms (lowercased), `literals` its literal pieces (CJK chunks
 * among them). Translations the query already holds are left out.
 */
export function bridgeTerms(words: readonly string[], literals: readonly string[]): BridgeTerm[] {
  const { toZh, toEn, longestZh } = glossary()
  const bridges: BridgeTerm[] = []
  const seen = new Set<string>()
  const query = [...words, ...literals].join(' ').toLowerCase()
  const add = (bridge: BridgeTerm): void => {
    if (seen.has(bridge.scan) || bridges.length >= MAX_BRIDGES) return
    // the query already says it in both languages
    if (CJK.test(bridge.scan) ? query.includes(bridge.scan) : words.some(word => indexTerm(word) === bridge.scan)) return
    seen.add(bridge.scan)
    bridges.push(bridge)
  }
  for (const word of words) {
    if (CJK.test(word)) continue
    for (const zh of toZh.get(indexTerm(word)) ?? []) add(chineseTerm(word, zh))
  }
  for (const literal of literals) {
    if (!CJK.test(literal)) continue
    for (const zh of chineseWords(literal, longestZh, toEn)) {
      for (const english of toEn.get(zh) ?? []) add({ source: zh, translation: english, index: english, scan: indexTerm(english) })
    }
  }
  return bridges
}

/**
 * The coverage weight of each bridge term: BRIDGE_SHARE of the weight of the original terms it
 * translates (an English word's stem; for a Chinese word, the query's CJK terms inside it).
 */
export function bridgeWeights(bridges: readonly BridgeTerm[], terms: readonly string[], weights: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>()
  for (const bridge of bridges) {
    const sources = CJK.test(bridge.source)
      ? terms.filter(term => CJK.test(term) && bridge.source.includes(term))
      : terms.filter(term => term === indexTerm(bridge.source))
    const weight = sources.reduce((sum, term) => sum + (weights.get(term) ?? 1), 0)
    if (weight > 0) out.set(bridge.scan, Math.max(out.get(bridge.scan) ?? 0, BRIDGE_SHARE * weight))
  }
  return out
}
