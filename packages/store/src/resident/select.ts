/** Partial ordering for a search's leading units: only what can reach the result is sorted. */

/**
 * The first `count` of `ids` in `order`, where `key` is a number that order sorts descending
 * (ties left to `order`): only the ids at or above the count-th key are sorted.
 */
export function leading(ids: readonly number[], count: number, key: (id: number) => number, order: (a: number, b: number) => number): number[] {
  if (ids.length <= count) return ids.toSorted(order)
  const keys = new Float64Array(ids.length)
  for (let at = 0; at < ids.length; at += 1) keys[at] = key(ids[at]!)
  const threshold = kthSmallest(keys.slice(), ids.length - count)
  const kept: number[] = []
  for (let at = 0; at < ids.length; at += 1) if (keys[at]! >= threshold) kept.push(ids[at]!)
  return kept.toSorted(order).slice(0, count)
}

/** The k-th smallest value (0-based) of `values`, which it reorders (quickselect, median of three). */
export function kthSmallest(values: Float64Array, k: number): number {
  let low = 0
  let high = values.length - 1
  while (low < high) {
    const middle = (low + high) >> 1
    const a = values[low]!
    const b = values[middle]!
    const c = values[high]!
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b)
    let i = low
    let j = high
    while (i <= j) {
      while (values[i]! < pivot) i += 1
      while (values[j]! > pivot) j -= 1
      if (i <= j) {
        const swap = values[i]!
        values[i] = values[j]!
        values[j] = swap
        i += 1
        j -= 1
      }
    }
    if (k <= j) high = j
    else if (k >= i) low = i
    else return values[k]!
  }
  return values[k]!
}

