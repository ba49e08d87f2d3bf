/** Human sizes and durations for command options ("50MB", "1.5GiB", "30d"). */
import { CliError, EXIT } from './format.ts'

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1,
  k: 1_000, kb: 1_000, kib: 1_024,
  m: 1_000_000, mb: 1_000_000, mib: 1_048_576,
  g: 1_000_000_000, gb: 1_000_000_000, gib: 1_073_741_824,
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/** Bytes from `123`, `50MB`, `1.5GiB` (decimal k/M/G, binary KiB/MiB/GiB). */
export function parseSize(value: string, option: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value)
  const unit = match === null ? undefined : SIZE_UNITS[match[2]!.toLowerCase()]
  if (match === null || unit === undefined) throw new CliError(`${option} must be a size like 500MB, 2GiB or 1048576 (got ${JSON.stringify(value.slice(0, 40))})`, EXIT.usage)
  const bytes = Math.floor(Number(match[1]) * unit)
  if (!Number.isSafeInteger(bytes)) throw new CliError(`${option} is too large`, EXIT.usage)
  return bytes
}

/** Milliseconds from `90m`, `12h`, `30d`, `2w`. */
export function parseDuration(value: string, option: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i.exec(value)
  const unit = match === null ? undefined : DURATION_UNITS[match[2]!.toLowerCase()]
  if (match === null || unit === undefined) throw new CliError(`${option} must be a duration like 90m, 12h, 30d or 2w (got ${JSON.stringify(value.slice(0, 40))})`, EXIT.usage)
  const ms = Math.floor(Number(match[1]) * unit)
  if (!Number.isSafeInteger(ms)) throw new CliError(`${option} is too large`, EXIT.usage)
  return ms
}
