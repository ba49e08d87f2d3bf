/**
 * A resident index's packed tokens (resident/tokens.ts): every triple read back as it was packed,
 * in order, whatever its values (positions that step back, zero, the largest int32), in a chunk
 * after other docs' tokens or in an array of their own.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_TRIPLE_BYTES, NO_TOKENS, packedCopy, packTriples, TokenReader } from '../src/resident/tokens.ts'

function readAll(bytes: Uint8Array): number[] {
  const reader = new TokenReader()
  reader.start(bytes)
  const out: number[] = []
  while (reader.next()) out.push(reader.code, reader.at, reader.length)
  return out
}

describe('packed tokens', () => {
  it('reads back every triple packed, at any value an int32 triple holds', () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(0, 1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 31 - 1))
    fc.assert(fc.property(fc.array(fc.tuple(value, value, value), { maxLength: 200 }), fc.integer({ min: 0, max: 64 }), (triples, offset) => {
      const flat = Int32Array.from(triples.flat())
      const copy = packedCopy(flat, flat.length)
      expect(readAll(copy)).toEqual([...flat])
      // into a shared chunk after other bytes: the view reads the same
      const chunk = new Uint8Array(offset + triples.length * MAX_TRIPLE_BYTES).fill(0xff)
      const end = packTriples(flat, flat.length, chunk, offset)
      expect(end - offset).toBe(copy.length)
      expect(readAll(chunk.subarray(offset, end))).toEqual([...flat])
    }), { numRuns: 500 })
  })

  it('takes a few bytes a token where three int32 took 12, and none for a doc without', () => {
    // a text's tokens: key codes in the thousands, positions a few characters apart, short lengths
    const triples = Int32Array.from(Array.from({ length: 1_000 }, (_, index) => [(index % 5_000) * 2, index * 7, 5]).flat())
    expect(packedCopy(triples, triples.length).length).toBeLessThanOrEqual(1_000 * 4)
    expect(packedCopy(triples, 0)).toBe(NO_TOKENS)
    expect(readAll(NO_TOKENS)).toEqual([])
  })
})
