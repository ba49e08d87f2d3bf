/**
 * What a search's scan (passage.ts scanTerms) finds in a session index's docs, read from their
 * stored tokens (resident/tokens.ts) instead of their text: `scanDocs` makes a doc's TermScan,
 * `countDocs` only counts its positions. Both are synchronous: the terms' key slots (TermLists.slots)
 * are set for them and cleared before they return.
 */
import { isCjkTerm, MAX_POSITIONS, RANK_TEXT_CHARS, type TermPosition, type TermScan } from '../search/passage.ts'
import type { TermLists } from './term-lists.ts'
import { TokenReader } from './tokens.ts'

/** What the scans read of an index's docs. */
export interface ScannedDocs {
  /** A doc's tokens, packed. */
  tokensOf(doc: number): Uint8Array
  /** The scan's sample of a doc, lowercased. */
  sampleLower(doc: number): string
  /** Whether lowercasing changed the doc's length (doc-flags.ts LOWER_SHIFT): the scan places no CJK match then. */
  shifted(doc: number): boolean
  /** A doc's text length (characters). */
  textLength(doc: number): number
}

type CjkTerms = ReadonlyArray<{ term: string; index: number }>

/**
 * `scanTerms(text, terms)` of each of these docs, from their stored tokens, as `make` asks: a
 * doc must be regular for these terms (no odd key among them: resident/unit-scans.ts scans the
 * others; a shifted lowercase places no CJK match, as the scan's does not); past the scan's
 * position cap too, which it keeps as the scan does (tests/resident-attack.test.ts).
 */
export function scanDocs<T>(keys: TermLists, docs: ScannedDocs, terms: readonly string[], make: (scan: (doc: number) => TermScan) => T): T {
  return slotted(keys, terms, cjk => {
    const slots = keys.slots
    const reader = new TokenReader()
    return make(doc => {
      const covered = terms.map(() => false)
      const positions: TermPosition[] = []
      const tokens = reader
      tokens.start(docs.tokensOf(doc))
      let wholeFound = false
      while (tokens.next()) {
        const code = tokens.code
        // a camelCase part is not counted where its whole matched (the scan's rule)
        const part = (code & 1) === 1
        if (part && wholeFound) continue
        const index = slots.get(code >> 1)
        if (!part) wholeFound = index >= 0
        if (index < 0) continue
        covered[index] = true
        if (positions.length < MAX_POSITIONS) positions.push({ at: tokens.at, length: tokens.length, term: index })
      }
      if (cjk.length > 0) {
        cjkMatches(docs, doc, cjk, (index, at, length) => {
          covered[index] = true
          if (at >= 0 && positions.length < MAX_POSITIONS) positions.push({ at, length, term: index })
        })
        positions.sort((a, b) => a.at - b.at)
      }
      return { covered, positions, scanned: Math.min(docs.textLength(doc), RANK_TEXT_CHARS) }
    })
  })
}

/**
 * What `scanDocs`' scan of a doc counts, its positions counted rather than made: `count(doc, out,
 * base)` writes at out[base + term] how many positions of the term the scan keeps (its cap
 * included), 0.5 for a term it covers with none kept. Same conditions as `scanDocs`, but for a
 * doc whose lowercase shifted too: its CJK terms counted as the scan does then. A doc with
 * many matches (a log's repeated words) is recounted by every search: its thousands of position
 * objects took most of such a search's time, in the collector.
 */
export function countDocs<T>(keys: TermLists, docs: ScannedDocs, terms: readonly string[], make: (count: (doc: number, out: Float64Array, base: number) => void) => T): T {
  return slotted(keys, terms, (cjk, slottedKeys) => {
    const slots = keys.slots
    const width = terms.length
    const covered = new Uint8Array(width)
    return make((doc, out, base) => {
      covered.fill(0)
      for (let index = 0; index < width; index += 1) out[base + index] = 0
      let kept = 0
      let coveredTokens = 0
      // the triples decoded here, the position and length skipped (tokens.ts TokenReader reads all three)
      const bytes = docs.tokensOf(doc)
      // no key of the terms is held here: no token can count
      const end = slottedKeys === 0 ? 0 : bytes.length
      let offset = 0
      let wholeFound = false
      while (offset < end) {
        let byte = bytes[offset++]!
        let code = byte & 0x7f
        for (let scale = 128; (byte & 0x80) !== 0; scale *= 128) {
          byte = bytes[offset++]!
          code += (byte & 0x7f) * scale
        }
        while ((bytes[offset++]! & 0x80) !== 0);
        while ((bytes[offset++]! & 0x80) !== 0);
        // a camelCase part is not counted where its whole matched (the scan's rule)
        const part = (code & 1) === 1
        if (part && wholeFound) continue
        const index = slots.get(code >> 1)
        if (!part) wholeFound = index >= 0
        if (index < 0) continue
        if (covered[index] === 0) {
          covered[index] = 1
          coveredTokens += 1
        }
        if (kept < MAX_POSITIONS) {
          out[base + index]! += 1
          kept += 1
        } else if (coveredTokens === slottedKeys) break // past the cap with every term covered: the rest changes nothing
      }
      if (cjk.length > 0) {
        cjkMatches(docs, doc, cjk, (index, at) => {
          covered[index] = 1
          if (at >= 0 && kept < MAX_POSITIONS) {
            out[base + index]! += 1
            kept += 1
          }
        })
      }
      for (let index = 0; index < width; index += 1) if (covered[index] === 1 && out[base + index] === 0) out[base + index] = 0.5
    })
  })
}

/**
 * Run with the terms' key slots set (each key's slot its first term; `slotted` keys set), the CJK
 * terms apart (counted in the text); the slots are cleared before this returns.
 */
function slotted<T>(keys: TermLists, terms: readonly string[], run: (cjk: CjkTerms, slotted: number) => T): T {
  const slots = keys.slots
  const set: number[] = []
  const cjk: Array<{ term: string; index: number }> = []
  terms.forEach((term, index) => {
    if (isCjkTerm(term)) {
      cjk.push({ term, index })
      return
    }
    const id = keys.idIfAny(term)
    if (id !== undefined && slots.get(id) < 0) {
      slots.set(id, index)
      set.push(id)
    }
  })
  try {
    return run(cjk, set.length)
  } finally {
    for (const id of set) slots.set(id, -1)
  }
}

/**
 * The CJK terms' matches in a doc's scan sample, as passage.ts scanTerms finds them: `hit(term, at,
 * length)` per match, each term's own cap applied (the positions cap is the caller's); for a
 * lowercase of another length the scan places none: `hit(term, -1, 0)` once per term held.
 */
function cjkMatches(docs: ScannedDocs, doc: number, cjk: CjkTerms, hit: (term: number, at: number, length: number) => void): void {
  const lower = docs.sampleLower(doc)
  if (docs.shifted(doc)) {
    for (const { term, index } of cjk) if (lower.includes(term)) hit(index, -1, 0)
    return
  }
  for (const { term, index } of cjk) {
    let found = 0
    for (let at = lower.indexOf(term); at !== -1 && found < MAX_POSITIONS / cjk.length; at = lower.indexOf(term, at + term.length)) {
      hit(index, at, term.length)
      found += 1
    }
  }
}
