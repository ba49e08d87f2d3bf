/**
 * A search's leading units are found without sorting all of them (resident/select.ts): the same
 * first `count` as a full sort, whatever the keys (ties, repeats, one value, sorted or reversed input).
 */
import { describe, expect, it } from 'vitest'
import { kthSmallest, leading } from '../src/resident/select.ts'
import { random } from './generated-text.ts'

describe('leading units', () => {
  it('picks the k-th smallest value as a sort does', () => {
    const next = random(5)
    for (let round = 0; round < 2_000; round += 1) {
      const length = 1 + Math.floor(next() * 60)
      const spread = [1, 3, 1000][round % 3]!
      const drawn = Float64Array.from({ length }, () => Math.floor(next() * spread))
      // sorted and reversed inputs too (the worst cases of a naive pivot)
      const values = round % 7 === 0 ? drawn.toSorted() : round % 11 === 0 ? drawn.toSorted().toReversed() : drawn
      const k = Math.floor(next() * length)
      expect(kthSmallest(values.slice(), k), `${values.join(',')} k=${k}`).toBe(values.toSorted()[k])
    }
  })

  it('returns the first count of a full sort by the order, the key its leading part', () => {
    const next = random(6)
    for (let round = 0; round < 1_000; round += 1) {
      const length = 1 + Math.floor(next() * 200)
      const bucket = Array.from({ length }, () => Math.floor(next() * 3))
      const relevance = Array.from({ length }, () => Math.floor(next() * 4) / 2)
      const time = Array.from({ length }, () => Math.floor(next() * 50))
      const ids = Array.from({ length }, (_, id) => id)
      const order = (a: number, b: number): number => bucket[b]! - bucket[a]! || relevance[b]! - relevance[a]! || time[b]! - time[a]! || a - b
      const count = 1 + Math.floor(next() * 40)
      expect(leading(ids, count, id => bucket[id]! * 1_000 + relevance[id]!, order)).toEqual(ids.toSorted(order).slice(0, count))
    }
  })
})
