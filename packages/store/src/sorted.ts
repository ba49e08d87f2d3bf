/** Sorted arrays of numbers: the one binary search the resident indexes and the value statements share. */

/** First position in an ascending list whose value is at or above `bound` (its length when none is). */
export function firstAtOrAbove(list: ArrayLike<number>, bound: number): number {
  let low = 0
  let high = list.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (list[middle]! < bound) low = middle + 1
    else high = middle
  }
  return low
}
