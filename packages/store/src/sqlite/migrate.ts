/** Schema upgrades on a writable open, and the version check of a read-only one. */
import { ANALYZER_VERSION } from '../analyzer.ts'
import { ShadowStoreError } from '../errors.ts'
import type { SqliteConnection } from './connection.ts'
import { referredDays } from '../days.ts'
import { packEventJson } from '../event-json.ts'
import { decodeText, type Row } from './rows.ts'
import { ADDED_INDEXES, MIGRATIONS, SCHEMA_VERSION } from './schema.ts'

export function migrate(conn: SqliteConnection): void {
  migrateSchema(conn)
  // looked up first: an open that has nothing to build must not wait for another writer's lock
  for (const index of ADDED_INDEXES) {
    if (conn.db.prepare("SELECT 1 AS ok FROM sqlite_master WHERE type = 'index' AND name = ?").get(index.name) === undefined) conn.db.exec(index.sql)
  }
}

function migrateSchema(conn: SqliteConnection): void {
  const tooNew = (current: number): ShadowStoreError => new ShadowStoreError('SCHEMA_TOO_NEW', `shadow store ${conn.path} has schema v${current}; this code knows v${SCHEMA_VERSION}`)
  const seen = currentVersion(conn)
  if (seen > SCHEMA_VERSION) throw tooNew(seen)
  if (seen === SCHEMA_VERSION) return
  // v4 packs each event JSON in SQL while it copies the rows
  conn.db.function('compact_event', { deterministic: true }, (json, text) => {
    const plain = typeof json === 'string' ? json : decodeText(json)
    return plain.length === 0 ? '' : packEventJson(plain, decodeText(text))
  })
  // v5 fills message_days from each message's text and time
  conn.db.function('referred_days', { deterministic: true }, (text, time) => JSON.stringify(referredDays(decodeText(text), Number(time))))
  conn.transaction(() => {
    // read again under the write lock: another process opening the same new file may have
    // migrated it since (its migration ran twice: "table meta already exists")
    const current = currentVersion(conn)
    if (current > SCHEMA_VERSION) throw tooNew(current)
    if (current === SCHEMA_VERSION) return
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue
      conn.db.exec(migration.sql)
    }
    conn.db.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(String(SCHEMA_VERSION))
    // a new store has nothing to index: made with the current analyzer, its first open rebuilds
    // nothing (an empty rebuild made other processes opening it at that instant fail)
    if (current === 0) conn.setMeta('analyzer_version', String(ANALYZER_VERSION))
  })
}

export function checkSchema(conn: SqliteConnection): void {
  const current = currentVersion(conn)
  if (current === 0) throw new ShadowStoreError('CORRUPT', `${conn.path} is not a shadow store (no schema)`)
  if (current > SCHEMA_VERSION) throw new ShadowStoreError('SCHEMA_TOO_NEW', `shadow store ${conn.path} has schema v${current}; this code knows v${SCHEMA_VERSION}`)
  // reads use the current columns; a read-only connection cannot add them
  if (current < SCHEMA_VERSION) throw new ShadowStoreError('SCHEMA_TOO_OLD', `shadow store ${conn.path} has schema v${current}; open it writable once to upgrade it to v${SCHEMA_VERSION}`)
}

export function currentVersion(conn: SqliteConnection): number {
  const hasMeta = conn.db.prepare("SELECT 1 AS ok FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get()
  if (hasMeta === undefined) {
    const tables = conn.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as Row
    if ((tables['n'] as number) > 0) throw new ShadowStoreError('CORRUPT', `${conn.path} is a SQLite database but not a shadow store`)
    return 0
  }
  const row = conn.db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as Row | undefined
  return row === undefined ? 0 : Number(row['value'])
}

