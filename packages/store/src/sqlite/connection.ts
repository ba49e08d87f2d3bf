/**
 * One open `node:sqlite` database: the statement cache, error mapping, transactions and the meta
 * table every SQLite module shares.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { ShadowStoreError } from '../errors.ts'
import { registerLineageFunction } from './lineage.ts'
import type { Row } from './rows.ts'
import { registerTermsFunction } from './terms.ts'

/** Map a node:sqlite failure to a typed store error. */
export function sqliteError(error: unknown, action: string): ShadowStoreError {
  if (error instanceof ShadowStoreError) return error
  const errcode = typeof error === 'object' && error !== null ? (error as { errcode?: number }).errcode : undefined
  const primary = errcode === undefined ? undefined : errcode & 0xff
  const detail = error instanceof Error ? error.message : String(error)
  switch (primary) {
    case 11: // SQLITE_CORRUPT
    case 26: // SQLITE_NOTADB
      return new ShadowStoreError('CORRUPT', `shadow store ${action}: database is corrupt or not a shadow store (${detail})`, { cause: error })
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
    case 8: // SQLITE_READONLY
    case 10: // SQLITE_IOERR
    case 14: // SQLITE_CANTOPEN
    case 23: // SQLITE_AUTH
      return new ShadowStoreError('UNAVAILABLE', `shadow store ${action}: ${detail}`, { cause: error })
    case 13: // SQLITE_FULL
      return new ShadowStoreError('FULL', `shadow store ${action}: the store is full (its maxBytes limit or the disk): ${detail}`, { cause: error })
    default:
      return new ShadowStoreError('UNAVAILABLE', `shadow store ${action} failed: ${detail}`, { cause: error })
  }
}

/** Prepared statements kept (most recently used); preparing costs as much as running a small query. */
const STATEMENT_CACHE = 256

export class SqliteConnection {
  private readonly statements = new Map<string, StatementSync>()
  private closed = false

  readonly db: DatabaseSync
  readonly path: string
  readonly readOnly: boolean

  constructor(db: DatabaseSync, path: string, readOnly: boolean) {
    this.db = db
    this.path = path
    this.readOnly = readOnly
    registerLineageFunction(db)
    registerTermsFunction(db)
  }

  meta(key: string): string | undefined {
    const row = this.stmt('SELECT value FROM meta WHERE key = ?').get(key) as Row | undefined
    return row?.['value'] as string | undefined
  }

  setMeta(key: string, value: string): void {
    this.guard('write meta', () => {
      this.stmt('INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value)
    })
  }

  stmt(sql: string): StatementSync {
    if (this.closed) throw new ShadowStoreError('CLOSED', 'shadow store is closed')
    let statement = this.statements.get(sql)
    if (statement === undefined) {
      statement = this.db.prepare(sql)
      // Search SQL varies in shape (filters, scope sizes): keep the recently used ones only.
      if (this.statements.size >= STATEMENT_CACHE) this.statements.delete(this.statements.keys().next().value!)
    } else {
      this.statements.delete(sql)
    }
    this.statements.set(sql, statement)
    return statement
  }

  /**
   * ShadowBackend.changeMark: `PRAGMA data_version` (it changes when another connection commits,
   * in this process or another) with `total_changes()` (rows this connection inserted, updated or
   * deleted since it opened). One statement, a few microseconds; a session search's three probes
   * of the registry and the lineage were a read transaction each.
   */
  changeMark(): string {
    return this.guard('read the change mark', () => {
      const row = this.stmt('SELECT data_version AS version, total_changes() AS changes FROM pragma_data_version').get() as { version: number; changes: number }
      return `${row.version} ${row.changes}`
    })
  }

  /** Forget prepared statements (after tables they name were dropped and renamed). */
  clearStatements(): void {
    this.statements.clear()
  }

  guard<T>(action: string, run: () => T): T {
    if (this.closed) throw new ShadowStoreError('CLOSED', 'shadow store is closed')
    try {
      return run()
    } catch (error) {
      throw sqliteError(error, action)
    }
  }

  /**
   * `guard`, with every statement of `run` reading one snapshot (a deferred transaction): a check
   * (is the scope the whole store?) and the queries it shapes see the same rows, whatever another
   * process commits between them. Inside a transaction already, that one's snapshot.
   */
  read<T>(action: string, run: () => T): T {
    return this.guard(action, () => {
      if (this.db.isTransaction) return run()
      this.db.exec('BEGIN')
      let result: T
      try {
        result = run()
      } catch (error) {
        try {
          this.db.exec('ROLLBACK')
        } catch {
          // a read transaction the failure ended already
        }
        throw error
      }
      this.db.exec('COMMIT')
      return result
    })
  }

  transaction<T>(run: () => T): T {
    this.db.exec('BEGIN IMMEDIATE')
    try {
      const result = run()
      this.db.exec('COMMIT')
      return result
    } catch (error) {
      try {
        this.db.exec('ROLLBACK')
      } catch {
        // the failed statement may already have rolled the transaction back
      }
      throw error
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.statements.clear()
    try {
      this.db.close()
    } catch {
      // closing twice or after an I/O failure must not throw at shutdown
    }
  }
}
