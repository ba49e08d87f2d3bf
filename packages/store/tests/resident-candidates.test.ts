/**
 * A resident search's candidates walk the matches, not the scope (resident/candidates.ts): the
 * union of doc lists is the docs of any of them, ascending, each once; the newest `window` of a
 * list that pass a filter are taken, each slotted once, in the order they came.
 */
import { describe, expect, it } from 'vitest'
import { unionOf } from '../src/resident/candidates.ts'
import { random } from './generated-text.ts'

describe('resident candidates', () => {
  it('unites ascending doc lists as a set of their docs would', () => {
    const next = random(11)
    for (let round = 0; round < 1_000; round += 1) {
      const lists = Array.from({ length: 1 + Math.floor(next() * 4) }, () => {
        const size = Math.floor(next() * 40)
        const gids = [...new Set(Array.from({ length: size }, () => Math.floor(next() * (round % 2 === 0 ? 50 : 5_000))))].toSorted((a, b) => a - b)
        // a list read to its first `length` entries only (view.ts Holders: rows appended past it)
        const length = Math.floor(next() * (gids.length + 1))
        return { gids: [...gids, 1e6, 2e6], length }
      })
      const union = unionOf(lists)
      const expected = [...new Set(lists.flatMap(list => list.gids.slice(0, list.length)))].toSorted((a, b) => a - b)
      expect(Array.from({ length: union.length }, (_, at) => union.gids[at]), JSON.stringify(lists)).toEqual(expected)
    }
  })
})
