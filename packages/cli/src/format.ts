/** Terminal output: aligned tables, times, and the JSON mode every command has. */
import { formatUtc } from '@dsh-shadow/store'

export interface Output {
  readonly json: boolean
  out(text: string): void
  err(text: string): void
  /** Progress on stderr for long work; silent when stderr is not a terminal unless forced. */
  progress(label: string, done: number, total: number): void
  /** Terminal width when stdout is a terminal (tables use all of it), else undefined. */
  readonly columns: number | undefined
  /** A snippet's `**matched**` words: bold yellow on a colour terminal, plain words otherwise. */
  highlight(snippet: string): string
}

/** Where one run writes: the process streams for the binary, buffers for in-process callers (tests). */
export interface CliIo {
  stdout(text: string): void
  stderr(text: string): void
  /** Progress redraws one line in place only on a terminal. */
  readonly stderrIsTTY: boolean
  /** Width of the terminal stdout is, when it is one. */
  readonly stdoutColumns?: number | undefined
  /** Colour highlights (a terminal, and NO_COLOR unset). */
  readonly color?: boolean
}

/** Set once the reader of our stdout went away (`| head`): the rest of the output is dropped, the command still finishes and closes the store. */
let stdoutClosed = false
let stdoutWatched = false

export const PROCESS_IO: CliIo = {
  stdout: text => {
    if (!stdoutWatched) {
      stdoutWatched = true
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') stdoutClosed = true
        else throw error
      })
    }
    if (!stdoutClosed) process.stdout.write(text)
  },
  stderr: text => void process.stderr.write(text),
  get stderrIsTTY() {
    return process.stderr.isTTY === true
  },
  get stdoutColumns() {
    return process.stdout.isTTY === true ? process.stdout.columns : undefined
  },
  get color() {
    return process.stdout.isTTY === true && (process.env['NO_COLOR'] ?? '') === ''
  },
}

const HIGHLIGHT = /\*\*([^*]+?)\*\*/g

export function consoleOutput(json: boolean, io: CliIo = PROCESS_IO): Output {
  let last = 0
  const color = io.color === true
  return {
    json,
    columns: io.stdoutColumns,
    highlight: snippet => safe(snippet).replace(HIGHLIGHT, (_, word: string) => (color ? `\u001b[1;33m${word}\u001b[0m` : word)),
    // under --json every line out is JSON (the error path too): no raw C1 control reaches the terminal
    out: text => io.stdout(`${json ? jsonSafe(text) : text}\n`),
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

/**
 * Stored text for a terminal: control characters (C0 but newline and tab, DEL, C1) are shown
 * escaped, so a stored OSC 52 clipboard write or screen clear is text, never a terminal command.
 */
export function safe(text: string): string {
  let out = ''
  let from = 0
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f)) {
      out += `${text.slice(from, index)}\\u${code.toString(16).padStart(4, '0')}`
      from = index + 1
    }
  }
  return from === 0 ? text : out + text.slice(from)
}

/**
 * JSON for a terminal: JSON.stringify escapes C0 controls but leaves DEL and C1 raw (U+009B is a
 * one-character CSI to a terminal that honours C1). They can only sit inside JSON strings, so
 * writing them as `\u00XX` keeps the same JSON value.
 */
export function jsonSafe(json: string): string {
  return json.replace(/[\u007f-\u009f]/g, char => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function time(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-'
  return formatUtc(value)
}

/**
 * An aligned table. Columns are capped at 60 characters; on a terminal of `width` columns the last
 * column takes whatever width is left, so long details are not cut on a wide screen.
 */
export function table(header: readonly string[], rows: readonly (readonly unknown[])[], width?: number): string {
  const cells = [header.map(String), ...rows.map(row => row.map(value => (value === null || value === undefined ? '-' : safe(String(value)).replace(/[\n\t]/g, ' '))))]
  const natural = header.map((_, column) => Math.max(...cells.map(row => row[column]!.length)))
  const widths = natural.map(value => Math.min(60, value))
  if (width !== undefined && widths.length > 0) {
    const used = widths.slice(0, -1).reduce((sum, value) => sum + value + 2, 0)
    widths[widths.length - 1] = Math.max(widths.at(-1)!, Math.min(natural.at(-1)!, width - used))
  }
  const fit = (value: string, columnWidth: number): string => (value.length > columnWidth ? `${value.slice(0, columnWidth - 1)}…` : value.padEnd(columnWidth))
  return cells.map((row, index) => {
    const line = row.map((value, column) => fit(value, widths[column]!)).join('  ').trimEnd()
    return index === 0 ? `${line}\n${widths.map(columnWidth => '─'.repeat(columnWidth)).join('  ')}` : line
  }).join('\n')
}

/** Labelled values, one a line, the labels padded to one width: a table without a header (it would be empty). */
export function fields(rows: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(0, ...rows.map(([label]) => label.length))
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value === null || value === undefined ? '-' : safe(String(value)).replace(/[\n\t]/g, ' ')}`.trimEnd()).join('\n')
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
