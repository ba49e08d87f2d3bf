/** Ascending lists of doc (or anchor) numbers, as a resident index keeps them. */
import { ENTRY_BYTES, KEY_BYTES } from './memory.ts'

/**
 * Lists up to this long are kept at their exact size. V8 gives an array pushed to room for 17
 * values or more (an empty one's first push, a full one's next): most keys and anchors stand in
 * one or two docs, and the room they did not use took a third of a session index's heap.
 */
export const EXACT_ENTRIES = 64

/** Intersection of two ascending lists (of `b`, its first `bLength` entries). */
export function intersect(a: readonly number[], b: readonly number[], bLength = b.length): number[] {
  const out: number[] = []
  for (let i = 0, j = 0; i < a.length && j < bLength;) {
    const x = a[i]!
    const y = b[j]!
    if (x === y) {
      out.push(x)
      i += 1
      j += 1
    } else if (x < y) i += 1
    else j += 1
  }
  return out
}

/**
 * Add a value to a key's list (once in a row); the bytes that took (an entry, and a key when new).
 * `fit`: a short list is kept at its exact size (EXACT_ENTRIES), as a new array in the map.
 */
export function listAdd<K>(map: Map<K, number[]>, key: K, value: number, fit = false): number {
  const list = map.get(key)
  if (list === undefined) {
    map.set(key, [value])
    return KEY_BYTES + ENTRY_BYTES
  }
  if (list.at(-1) === value) return 0
  list.push(value)
  // a short list is copied at its size (the map's entry replaced): not for lists held elsewhere too
  if (fit && list.length <= EXACT_ENTRIES) map.set(key, list.slice())
  return ENTRY_BYTES
}

/**
 * The records of data[0, length) (`width` values each, the first a key below `keys`) ordered by
 * key, as offsets into `data`: a counting sort, stable (records of one key keep their order).
 */
export function sortedBy(data: Int32Array, length: number, width: number, keys: number): Int32Array {
  const ends = new Int32Array(keys)
  for (let at = 0; at < length; at += width) ends[data[at]!] = ends[data[at]!]! + 1
  for (let key = 1; key < keys; key += 1) ends[key] = ends[key]! + ends[key - 1]!
  const order = new Int32Array(length / width)
  for (let at = length - width; at >= 0; at -= width) {
    const end = ends[data[at]!]! - 1
    ends[data[at]!] = end
    order[end] = at
  }
  return order
}
