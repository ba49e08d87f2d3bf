/**
 * Smallest and largest of many numbers. `Math.min(...values)` passes every value as an argument
 * and overflows the stack past ~125k of them (a 100k-message checkpoint); this is a loop.
 */
export function extent(values: Iterable<number>): { readonly min: number; readonly max: number } | undefined {
  let min = Number.POSITIVE_INFINITY
  let max = Number.NEGATIVE_INFINITY
  let any = false
  for (const value of values) {
    any = true
    if (value < min) min = value
    if (value > max) max = value
  }
  return any ? { min, max } : undefined
}
