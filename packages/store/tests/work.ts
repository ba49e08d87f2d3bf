/**
 * The work a store call does, counted at the drivers (node:sqlite statements, node-postgres
 * queries), for tests that assert work instead of wall-clock time: statements run, SQL characters
 * sent, characters of the parameters bound, rows returned, write transactions begun. Importing
 * this module wraps the drivers' prototypes for the test file (restore them in its afterAll);
 * nothing is counted outside `measured` / `counted`.
 */
import { DatabaseSync, StatementSync } from 'node:sqlite'
import pg from 'pg'

export interface Work {
  statements: number
  sqlChars: number
  /** A string's or a list's length (a list of ids grows with them); a number is one. */
  paramChars: number
  /** Rows returned (an iterated statement's are not counted: they are pulled one by one). */
  rows: number
  /** SQLite `BEGIN IMMEDIATE`, PostgreSQL `BEGIN`. */
  writeTransactions: number
}

const counting: { current: Work | undefined } = { current: undefined }
const restores: Array<() => void> = []

function size(value: unknown): number {
  if (value === null || value === undefined) return 0
  if (typeof value === 'string') return value.length
  if (value instanceof Uint8Array) return value.byteLength
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + size(item), 0)
  return 1
}

function wrap(target: object, method: string, around: (original: (...args: unknown[]) => unknown, self: unknown, args: unknown[], work: Work) => unknown): void {
  const host = target as Record<string, (...args: unknown[]) => unknown>
  const original = host[method]!
  host[method] = function (this: unknown, ...args: unknown[]) {
    const work = counting.current
    return work === undefined ? original.apply(this, args) : around(original, this, args, work)
  }
  restores.push(() => { host[method] = original })
}

for (const method of ['all', 'get', 'run', 'iterate']) {
  wrap(StatementSync.prototype, method, (original, self, args, work) => {
    work.statements += 1
    work.sqlChars += (self as StatementSync).sourceSQL.length
    work.paramChars += size(args)
    const result = original.apply(self, args)
    if (method !== 'iterate') work.rows += Array.isArray(result) ? result.length : result === undefined ? 0 : 1
    return result
  })
}
wrap(DatabaseSync.prototype, 'exec', (original, self, args, work) => {
  if (typeof args[0] === 'string' && /^\s*BEGIN IMMEDIATE\b/i.test(args[0])) work.writeTransactions += 1
  return original.apply(self, args)
})
// a pool passes a callback (the rows come to it); a client called directly returns a promise
wrap(pg.Client.prototype, 'query', (original, self, args, work) => {
  const first = args[0] as { text?: unknown; values?: unknown[] } | string | undefined
  const sql = typeof first === 'string' ? first : typeof first?.text === 'string' ? first.text : undefined
  if (sql === undefined) return original.apply(self, args)
  work.statements += 1
  work.sqlChars += sql.length
  work.paramChars += size(typeof first === 'string' ? args[1] : (first as { values?: unknown[] }).values)
  if (/^\s*BEGIN\b/i.test(sql)) work.writeTransactions += 1
  const last = args.at(-1)
  if (typeof last === 'function') {
    args[args.length - 1] = (error: unknown, result: { rows?: unknown[] } | undefined) => {
      work.rows += result?.rows?.length ?? 0
      return (last as (...a: unknown[]) => unknown)(error, result)
    }
    return original.apply(self, args)
  }
  const result = original.apply(self, args)
  if (typeof (result as { then?: unknown } | undefined)?.then === 'function') {
    void (result as Promise<{ rows?: unknown[] } | undefined>).then(answer => { work.rows += answer?.rows?.length ?? 0 }, () => {})
  }
  return result
})

/** The work of one run of `run`. */
export async function counted(run: () => Promise<unknown>): Promise<Work> {
  const done: Work = { statements: 0, sqlChars: 0, paramChars: 0, rows: 0, writeTransactions: 0 }
  counting.current = done
  try {
    await run()
  } finally {
    counting.current = undefined
  }
  return done
}

/** The work of a second run of `run`, after one that warms statement caches, pool connections and statistics. */
export async function measured(run: () => Promise<unknown>): Promise<Work> {
  await run()
  return counted(run)
}

/** Put the drivers' methods back (a test file's afterAll). */
export function restoreDrivers(): void {
  for (const restore of restores.splice(0)) restore()
}
