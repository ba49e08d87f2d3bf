/**
 * LongTerms: the docs of a session index holding a CJK term of three or more characters (which
 * it keeps no key of), found among the docs holding all its character pairs and counted in their
 * text; kept once asked and extended over the docs appended since, so a common phrase is counted
 * in its holders' texts once, not per search.
 */
import { firstAtOrAbove } from '../sorted.ts'
import { intersect } from './lists.ts'
import { ENTRY_BYTES } from './memory.ts'
import type { Postings } from './term-lists.ts'

/** Terms kept; past it the memo starts over. */
const LONG_TERMS = 512

export class LongTerms {
  /** Bytes its entries hold (an estimate, resident/memory.ts). */
  bytes = 0
  private readonly memo = new Map<string, Postings & { upTo: number }>()

  /**
   * The term's postings over docs below `size`: `listOf(pair)` gives a pair's postings, `countIn(doc)`
   * the term's count in a doc holding every pair (-1: the doc does not hold it).
   */
  postings(term: string, pairs: readonly string[], size: number, listOf: (pair: string) => Postings | undefined, countIn: (doc: number) => number): Postings {
    let memo = this.memo.get(term)
    if (memo === undefined) {
      if (this.memo.size >= LONG_TERMS) this.drop()
      memo = { docs: [], counts: [], upTo: 0 }
      this.memo.set(term, memo)
    }
    if (memo.upTo < size) {
      let docs: number[] | undefined
      for (const pair of pairs) {
        const list = listOf(pair)?.docs ?? []
        const from = firstAtOrAbove(list, memo.upTo)
        docs = docs === undefined ? list.slice(from) : intersect(docs, list.slice(from))
        if (docs.length === 0) break
      }
      for (const doc of docs ?? []) {
        const count = countIn(doc)
        if (count < 0) continue
        memo.docs.push(doc)
        memo.counts.push(count)
        this.bytes += ENTRY_BYTES
      }
      memo.upTo = size
    }
    return memo
  }

  /** Forget every term (counted again when asked). */
  drop(): void {
    this.memo.clear()
    this.bytes = 0
  }
}
