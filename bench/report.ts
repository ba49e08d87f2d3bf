/** Small statistics and output helpers shared by the benchmarks. */

export function median(values: readonly number[]): number {
  return percentile(values, 0.5)
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = values.toSorted((a, b) => a - b)
  const rank = (sorted.length - 1) * p
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low)
}

function cell(value: unknown): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(3)
  return String(value)
}

export function printTable(title: string, header: readonly string[], rows: readonly (readonly unknown[])[]): void {
  const table = [header.map(cell), ...rows.map(row => row.map(cell))]
  const widths = header.map((_, column) => Math.max(...table.map(row => row[column]!.length)))
  console.log(`\n${title}`)
  for (const [index, row] of table.entries()) {
    console.log(row.map((value, column) => (column === 0 ? value.padEnd(widths[column]!) : value.padStart(widths[column]!))).join('  '))
    if (index === 0) console.log(widths.map(width => '-'.repeat(width)).join('  '))
  }
}

/** The one machine-readable last line every benchmark ends with. */
export function result(name: string, values: Record<string, string | number>): void {
  console.log(`RESULT ${name} ${Object.entries(values).map(([key, value]) => `${key}=${value}`).join(' ')}`)
}
