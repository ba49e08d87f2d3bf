/** Terminal output: aligned tables, times, and the JSON mode every command has. */
import { formatUtc } from '@dsh-shadow/store'

export interface Output {
  readonly json: boolean
  out(text: string): void
  err(text: string): void
  /** Progress on stderr for long work; silent when stderr is not a terminal unless forced. */
  progress(label: string, done: number, total: number): void
}

/** Where one run writes: the process streams for the binary, buffers for in-process callers (tests). */
export interface CliIo {
  stdout(text: string): void
  stderr(text: string): void
  /** Progress redraws one line in place only on a terminal. */
  readonly stderrIsTTY: boolean
}

export const PROCESS_IO: CliIo = {
  stdout: text => void process.stdout.write(text),
  stderr: text => void process.stderr.write(text),
  get stderrIsTTY() {
    return process.stderr.isTTY === true
  },
}

export function consoleOutput(json: boolean, io: CliIo = PROCESS_IO): Output {
  let last = 0
  return {
    json,
    out: text => io.stdout(`${text}\n`),
    err: text => io.stderr(`${text}\n`),
    progress: (label, done, total) => {
      const now = Date.now()
      if (done < total && now - last < 250) return
      last = now
      const line = `${label}: ${done}/${total}${total > 0 ? ` (${Math.floor((done / total) * 100)}%)` : ''}`
      if (io.stderrIsTTY) io.stderr(`\r${line}${done >= total ? '\n' : ''}`)
      else if (done >= total || done % 1_000 === 0) io.stderr(`${line}\n`)
    },
  }
}

export function time(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-'
  return formatUtc(value)
}

export function table(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [header.map(String), ...rows.map(row => row.map(value => (value === null || value === undefined ? '-' : String(value))))]
  const widths = header.map((_, column) => Math.max(...cells.map(row => Math.min(60, row[column]!.length))))
  const fit = (value: string, width: number): string => (value.length > width ? `${value.slice(0, width - 1)}…` : value.padEnd(width))
  return cells.map((row, index) => {
    const line = row.map((value, column) => fit(value, widths[column]!)).join('  ').trimEnd()
    return index === 0 ? `${line}\n${widths.map(width => '─'.repeat(width)).join('  ')}` : line
  }).join('\n')
}

/** An error the CLI reports in one line with a specific exit code. */
export class CliError extends Error {
  override readonly name = 'CliError'
  readonly exitCode: number

  constructor(message: string, exitCode: number) {
    super(message)
    this.exitCode = exitCode
  }
}

/** Exit codes (also in the CLI README). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  unavailable: 3,
  notFound: 4,
  /** verify: base 8, plus 1 for lost rows, 2 for mismatched rows, 4 for stale (extra) rows. */
  verify: 8,
} as const
