/**
 * CjkKeys: the key ids of CJK characters and character pairs in one session index, by code point,
 * so counting a message's CJK text makes no key string and hashes none for a character or pair seen before.
 */
import { MAP_BYTES, MAP_ENTRY_BYTES } from './memory.ts'
import { CJK_KEY } from './terms.ts'
import { CJK_COUNTED, classOf } from './text-scan.ts'
import type { TermLists } from './term-lists.ts'

export class CjkKeys {
  private readonly chars = new Map<number, number>()
  private readonly pairs = new Map<number, Map<number, number>>()
  private pairCount = 0
  /** Per pair id of the message being counted: where its next occurrence stops overlapping. */
  private readonly free = new Map<number, number>()
  private readonly terms: TermLists

  constructor(terms: TermLists) {
    this.terms = terms
  }

  /** Bytes its maps hold (an estimate, resident/memory.ts). */
  get bytes(): number {
    return (this.chars.size + this.pairCount) * MAP_ENTRY_BYTES + this.pairs.size * MAP_BYTES
  }

  /**
   * CJK characters and pairs of a lowercased sample as terms.ts countCjk counts them, counted in
   * the doc being added; `listing`: listed at a count of 0 instead (TermLists.listOnce).
   */
  count(lower: string, listing: boolean): void {
    const terms = this.terms
    const free = this.free
    free.clear()
    let previous = -1
    let previousAt = -1
    let previousWidth = 0
    for (let at = 0; at < lower.length;) {
      const code = lower.charCodeAt(at)
      if (code < 128) {
        previous = -1
        at += 1
        continue
      }
      const point = lower.codePointAt(at)!
      const width = point > 0xffff ? 2 : 1
      if ((classOf(point) & CJK_COUNTED) === 0) {
        previous = -1
        at += width
        continue
      }
      let id = this.chars.get(point)
      if (id === undefined) {
        id = terms.idOf(CJK_KEY + String.fromCodePoint(point))
        this.chars.set(point, id)
      }
      if (listing) terms.listOnce(id)
      else terms.count(id)
      if (previous >= 0) {
        let pairs = this.pairs.get(previous)
        if (pairs === undefined) this.pairs.set(previous, pairs = new Map())
        let pair = pairs.get(point)
        if (pair === undefined) {
          pair = terms.idOf(CJK_KEY + String.fromCodePoint(previous, point))
          pairs.set(point, pair)
          this.pairCount += 1
        }
        if (listing) terms.listOnce(pair)
        // a pair is counted as indexOf steps past each match: not where it overlaps the last one
        else if (previousAt >= (free.get(pair) ?? 0)) {
          terms.count(pair)
          free.set(pair, previousAt + previousWidth + width)
        }
      }
      previous = point
      previousAt = at
      previousWidth = width
      at += width
    }
  }
}
