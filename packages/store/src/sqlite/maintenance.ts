/** Maintenance SQL: index rebuilds, stats, retention, vacuum, integrity. */
import { VACUUM_DUE_META, type IndexViews, type RetentionCandidate, type RetentionUsage } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
import type { StoreStats } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { packEventJson, unpackEventJson } from '../event-json.ts'
import { indexMessage, type IndexTables, unindexMessage } from './index-rows.ts'
import { Revisions } from './revisions.ts'
import { decodeText, encodeText, type Row } from './rows.ts'
import { indexTablesSql, SCHEMA_VERSION } from './schema.ts'

/** Bytes of one message row as given, UTF-8 text and event JSON (what retention budgets count). */
const ROW_BYTES = 'length(CAST(m.text AS BLOB)) + m.event_bytes'

/** Meta key of an index rebuild in progress: `{ pid, startedAt }` of the process building it. */
const REBUILD_META = 'reindex_build'
const REBUILD_TABLES = ['messages_words_next', 'messages_grams_next'] as const
const REBUILD_INDEX: IndexTables = { words: REBUILD_TABLES[0], grams: REBUILD_TABLES[1] }
const REBUILD_BATCH = 2_000

/** An index rebuild that is not finished: running in a live process, or left by a killed one. */
export function pendingRebuild(conn: SqliteConnection): { pid: number; startedAt: number; alive: boolean } | undefined {
  const saved = conn.meta(REBUILD_META)
  if (saved === undefined) return undefined
  let pid = 0
  let startedAt = 0
  try {
    ({ pid, startedAt } = JSON.parse(saved) as { pid: number; startedAt: number })
  } catch {
    // unreadable: treat as left behind
  }
  let alive = pid === process.pid
  if (!alive && Number.isSafeInteger(pid) && pid > 0) {
    try {
      process.kill(pid, 0)
      alive = true
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  return { pid, startedAt, alive }
}

/** Drop what an interrupted rebuild left (its half-built tables and change triggers); the live index never depended on it. */
export function dropRebuild(conn: SqliteConnection): void {
  conn.transaction(() => {
    conn.db.exec(`
      DROP TRIGGER IF EXISTS reindex_dirty_insert; DROP TRIGGER IF EXISTS reindex_dirty_update; DROP TRIGGER IF EXISTS reindex_dirty_delete;
      DROP TABLE IF EXISTS reindex_dirty; ${REBUILD_TABLES.map(table => `DROP TABLE IF EXISTS ${table};`).join(' ')}
    `)
    conn.stmt('DELETE FROM meta WHERE key = ?').run(REBUILD_META)
  })
}

/**
 * Rebuild both indexes beside the live ones and swap them in one transaction. Searches (in any
 * process) use the complete old index until the swap; a kill part-way leaves it untouched (the
 * half-built tables are dropped at the next open or rebuild). Rows other connections write while
 * it runs are noted by triggers and indexed afresh in the swap.
 */
export function reindex(conn: SqliteConnection, analyze: (text: string, time: number) => IndexViews, version: number, progress?: (done: number, total: number) => void): number {
  return conn.guard('reindex', () => {
    const pending = pendingRebuild(conn)
    if (pending?.alive === true && pending.pid !== process.pid) {
      throw new ShadowStoreError('UNAVAILABLE', `another process (pid ${pending.pid}) is rebuilding the index; try again when it is done`)
    }
    if (pending !== undefined) dropRebuild(conn)
    const total = (conn.db.prepare('SELECT count(*) AS n FROM messages').get() as Row)['n'] as number
    conn.transaction(() => {
      conn.db.exec(`
        ${indexTablesSql(REBUILD_TABLES[0], REBUILD_TABLES[1])}
        CREATE TABLE reindex_dirty (id INTEGER PRIMARY KEY);
        CREATE TRIGGER reindex_dirty_insert AFTER INSERT ON messages BEGIN INSERT OR IGNORE INTO reindex_dirty(id) VALUES (new.id); END;
        CREATE TRIGGER reindex_dirty_update AFTER UPDATE OF text ON messages BEGIN INSERT OR IGNORE INTO reindex_dirty(id) VALUES (new.id); END;
        CREATE TRIGGER reindex_dirty_delete AFTER DELETE ON messages BEGIN INSERT OR IGNORE INTO reindex_dirty(id) VALUES (old.id); END;
      `)
      conn.setMeta(REBUILD_META, JSON.stringify({ pid: process.pid, startedAt: Date.now() }))
    })
    const index = (row: Row): void => {
      indexMessage(conn, row['id'] as number, analyze(decodeText(row['text']), row['time'] as number), row['tag'] as string, REBUILD_INDEX)
    }
    const rowsSql = 'SELECT m.id, m.text, m.time, s.tag FROM messages m JOIN sessions s ON s.session_id = m.session_id'
    const page = conn.db.prepare(`${rowsSql} WHERE m.id > ? ORDER BY m.id LIMIT ${REBUILD_BATCH}`)
    let done = 0
    let after = 0
    for (;;) {
      const rows = page.all(after) as Row[]
      if (rows.length === 0) break
      conn.transaction(() => {
        for (const row of rows) index(row)
      })
      done += rows.length
      after = rows.at(-1)!['id'] as number
      progress?.(done, total)
    }
    conn.transaction(() => {
      // rows written by other connections meanwhile: index them as they are now
      const one = conn.db.prepare(`${rowsSql} WHERE m.id = ?`)
      for (const dirty of conn.db.prepare('SELECT id FROM reindex_dirty').all() as Row[]) {
        const id = dirty['id'] as number
        if (id > after) continue // not indexed yet, and not in the new tables either
        unindexMessage(conn, id, REBUILD_INDEX)
        const row = one.get(id) as Row | undefined
        if (row !== undefined) index(row)
      }
      const late = conn.db.prepare(`${rowsSql} WHERE m.id > ? ORDER BY m.id`).all(after) as Row[]
      for (const row of late) index(row)
      done += late.length
      conn.db.exec(`
        DROP TRIGGER reindex_dirty_insert; DROP TRIGGER reindex_dirty_update; DROP TRIGGER reindex_dirty_delete; DROP TABLE reindex_dirty;
        DROP TABLE messages_words; DROP TABLE messages_grams;
        ALTER TABLE ${REBUILD_TABLES[0]} RENAME TO messages_words; ALTER TABLE ${REBUILD_TABLES[1]} RENAME TO messages_grams;
      `)
      conn.stmt('DELETE FROM meta WHERE key = ?').run(REBUILD_META)
      conn.setMeta('analyzer_version', String(version))
    })
    conn.clearStatements()
    conn.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
    return done
  })
}

/** How a redaction pass rewrites stored text (a store's redactor and its row hash). */
export interface StoredRedaction {
  text(text: string): string
  json(json: string): string
  hash(storedJson: string): string
}

const REDACT_PASS_META = 'redact_pass'
/** What row hashes are of: `stored` (the stored, possibly redacted, event JSON), or older: the original. */
const ROW_HASH_META = 'row_hash'
const ROW_HASH_STORED = 'stored'
const REDACT_BATCH = 500

/** Whether a redaction pass over the stored rows is due or was interrupted. */
export function redactionPending(conn: SqliteConnection): boolean {
  return conn.meta(REDACT_PASS_META) !== undefined
}

/** Whether every row's hash is of its stored form (a store from before that rule needs a pass). */
export function rowHashesCurrent(conn: SqliteConnection): boolean {
  return conn.meta(ROW_HASH_META) === ROW_HASH_STORED
}

/** Mark a redaction pass due (in the same breath as the policy change that needs it); see ShadowBackend. */
export function markRedactionPending(conn: SqliteConnection, restart: boolean): void {
  conn.setMeta(REDACT_PASS_META, restart ? '0' : conn.meta(REDACT_PASS_META) ?? '0')
}

/**
 * Redact what is already stored: message text and event JSON (with their hashes and index
 * entries), checkpoint footers and errors, recall queries. Resumable: the last row done is kept in
 * meta, so a kill part-way continues at the next open. The old text must not linger in the file
 * either: the file is vacuumed (rebuilt from live content, old pages gone) and the WAL truncated.
 * A vacuum that cannot run now (another connection reading, no room for the copy) does not fail
 * the open: it stays due, `integrityCheck` says so, and the next `vacuum()` does it.
 */
export function redactStored(conn: SqliteConnection, redaction: StoredRedaction, analyze: (text: string, time: number) => IndexViews, progress?: (done: number, total: number) => void): { rows: number; changed: number } {
  return conn.guard('redact stored rows', () => {
    const total = (conn.db.prepare('SELECT count(*) AS n FROM messages').get() as Row)['n'] as number
    let after = Number(conn.meta(REDACT_PASS_META) ?? 0)
    let done = (conn.db.prepare('SELECT count(*) AS n FROM messages WHERE id <= ?').get(after) as Row)['n'] as number
    let changed = 0
    const page = conn.db.prepare(`SELECT m.id, m.session_id, m.time, m.text, m.event_json, m.hash, m.expired_at, s.tag FROM messages m JOIN sessions s ON s.session_id = m.session_id WHERE m.id > ? ORDER BY m.id LIMIT ${REDACT_BATCH}`)
    const rehash = conn.db.prepare('UPDATE messages SET hash = ?, rev = ? WHERE id = ?')
    const update = conn.stmt('UPDATE messages SET text = ?, event_json = ?, event_bytes = ?, hash = ?, rev = ? WHERE id = ?')
    for (;;) {
      // read under the write lock: a row another process replaced between a read outside it and
      // the write was written back from its old version (the writer's replacement lost)
      const rows = conn.transaction(() => {
        const batch = page.all(after) as Row[]
        // a rehashed row changed too (its hash is read back): its session's revision moves
        const revisions = new Revisions(conn)
        for (const row of batch) {
          const id = row['id'] as number
          const sessionId = row['session_id'] as string
          const text = decodeText(row['text'])
          // stored packed (v4, event-json.ts): the hash is of the JSON as read back
          const json = unpackEventJson(row['event_json'], text, row['time'] as number)
          const redactedText = redaction.text(text)
          const redactedJson = json.length === 0 ? json : redaction.json(json)
          if (redactedText === text && redactedJson === json) {
            // a row kept by an older version has the hash of its unredacted event: replace it
            // (a row retention emptied keeps its hash, the only trace of its identity)
            const hash = redaction.hash(json)
            if (json.length > 0 && row['hash'] !== hash) rehash.run(hash, revisions.change(sessionId), id)
            continue
          }
          const packed = redactedJson.length === 0 ? redactedJson : packEventJson(redactedJson, redactedText, row['time'] as number)
          update.run(encodeText(redactedText), packed, Buffer.byteLength(redactedJson, 'utf8'), redaction.hash(redactedJson), revisions.change(sessionId), id)
          unindexMessage(conn, id)
          if (row['expired_at'] === null) indexMessage(conn, id, analyze(redactedText, row['time'] as number), row['tag'] as string)
          changed += 1
        }
        revisions.commit()
        if (batch.length > 0) {
          after = batch.at(-1)!['id'] as number
          conn.setMeta(REDACT_PASS_META, String(after))
        }
        return batch
      })
      if (rows.length === 0) break
      done += rows.length
      progress?.(done, total)
    }
    conn.transaction(() => {
      const redactColumn = (value: unknown): unknown => (typeof value === 'string' ? redaction.text(value) : value)
      for (const row of conn.db.prepare('SELECT checkpoint_id, footer, error FROM checkpoints').all() as Row[]) {
        const footer = redactColumn(row['footer'])
        const error = redactColumn(row['error'])
        if (footer !== row['footer'] || error !== row['error']) conn.stmt('UPDATE checkpoints SET footer = ?, error = ? WHERE checkpoint_id = ?').run(footer as string | null, error as string | null, row['checkpoint_id'] as string)
      }
      for (const row of conn.db.prepare('SELECT id, query FROM recalls WHERE query IS NOT NULL').all() as Row[]) {
        const query = redactColumn(row['query'])
        if (query !== row['query']) conn.stmt('UPDATE recalls SET query = ? WHERE id = ?').run(query as string, row['id'] as number)
      }
    })
    // merge the index segments (old entries go), then rebuild the file without the old pages
    conn.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
    conn.stmt('DELETE FROM meta WHERE key = ?').run(REDACT_PASS_META)
    conn.setMeta(ROW_HASH_META, ROW_HASH_STORED)
    conn.setMeta(VACUUM_DUE_META, 'redaction')
    try {
      vacuum(conn)
    } catch {
      // stays due (see above)
    }
    return { rows: done, changed }
  })
}

export function setWritable(conn: SqliteConnection, writable: boolean): void {
  conn.guard('set writable', () => {
    conn.db.exec(`PRAGMA query_only = ${writable ? 'OFF' : 'ON'}`)
  })
}

/** Merge FTS segments (makes rare-term lookups much faster after bulk ingest). */
export function optimize(conn: SqliteConnection): void {
  conn.guard('optimize', () => {
    conn.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
  })
}

export function stats(conn: SqliteConnection): Omit<StoreStats, 'path'> {
  return conn.guard('stats', () => {
    const count = (sql: string): number => ((conn.db.prepare(sql).get() as Row)['n'] as number) ?? 0
    const pageSize = (conn.db.prepare('PRAGMA page_size').get() as Row)['page_size'] as number
    const pageCount = (conn.db.prepare('PRAGMA page_count').get() as Row)['page_count'] as number
    return {
      schemaVersion: SCHEMA_VERSION,
      analyzerVersion: Number(conn.meta('analyzer_version') ?? 0),
      sessions: count('SELECT count(*) AS n FROM sessions'),
      messages: count('SELECT count(*) AS n FROM messages'),
      checkpoints: count('SELECT count(*) AS n FROM checkpoints'),
      recalls: count('SELECT count(*) AS n FROM recalls'),
      bytes: pageSize * pageCount,
      textBytes: count('SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) AS n FROM messages'),
      expired: count('SELECT count(*) AS n FROM messages WHERE expired_at IS NOT NULL'),
    }
  })
}

export function retentionUsage(conn: SqliteConnection): RetentionUsage[] {
  return conn.guard('measure retention', () => (conn.db.prepare(`
    SELECT s.session_id, s.workspace, coalesce(sum(${ROW_BYTES}), 0) AS bytes
    FROM sessions s LEFT JOIN messages m ON m.session_id = s.session_id AND m.expired_at IS NULL
    GROUP BY s.session_id
  `).all() as Row[]).map(row => ({ sessionId: row['session_id'] as string, workspace: row['workspace'] as string | null, bytes: row['bytes'] as number })))
}

/** A fork sees its parent's rows below the fork point on its own surface: never drop those (row alias m). */
const NO_FORK_SEES = 'NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = m.session_id AND m.seq < coalesce(c.fork_seq, 9223372036854775807))'

export function retentionCandidates(conn: SqliteConnection): RetentionCandidate[] {
  return conn.guard('list retention candidates', () => (conn.db.prepare(`
    SELECT m.session_id, m.elided_by, count(*) AS n, sum(${ROW_BYTES}) AS bytes, max(m.time) AS newest
    FROM messages m WHERE m.elided_by IS NOT NULL AND m.expired_at IS NULL
      -- a fork sees its parent's rows below the fork point on its own surface: never drop those
      AND ${NO_FORK_SEES}
    GROUP BY m.session_id, m.elided_by ORDER BY newest, m.elided_by
  `).all() as Row[]).map(row => ({
    sessionId: row['session_id'] as string,
    checkpointId: row['elided_by'] as string,
    rows: row['n'] as number,
    bytes: row['bytes'] as number,
    newest: row['newest'] as number,
  })))
}

export function expireCheckpoint(conn: SqliteConnection, checkpointId: string, time: number): { rows: number; bytes: number } {
  return expireCheckpoints(conn, [checkpointId], time)[0]!
}

export function expireCheckpoints(conn: SqliteConnection, checkpointIds: readonly string[], time: number): Array<{ rows: number; bytes: number }> {
  return conn.guard('expire originals', () => conn.transaction(() => {
    const revisions = new Revisions(conn)
    const results = checkpointIds.map(checkpointId => expireRows(conn, checkpointId, time, revisions))
    revisions.commit()
    return results
  }))
}

/** One checkpoint's stored originals emptied, in the caller's transaction. */
function expireRows(conn: SqliteConnection, checkpointId: string, time: number, revisions: Revisions): { rows: number; bytes: number } {
  // the fork check again, in the dropping transaction: a fork registered since the candidates
  // were listed sees these rows on its surface
  const rows = conn.stmt(`SELECT m.id, m.session_id, ${ROW_BYTES} AS bytes FROM messages m WHERE m.elided_by = ? AND m.expired_at IS NULL AND ${NO_FORK_SEES}`).all(checkpointId) as Row[]
  const clear = conn.stmt("UPDATE messages SET text = X'', event_json = '', event_bytes = 0, expired_at = ?, rev = ? WHERE id = ?")
  let bytes = 0
  for (const row of rows) {
    clear.run(time, revisions.change(row['session_id'] as string), row['id'] as number)
    unindexMessage(conn, row['id'] as number)
    bytes += row['bytes'] as number
  }
  if (rows.length > 0) {
    conn.stmt('UPDATE checkpoints SET expired_at = coalesce(expired_at, ?), expired_rows = expired_rows + ? WHERE checkpoint_id = ?').run(time, rows.length, checkpointId)
  }
  return { rows: rows.length, bytes }
}


export function vacuumDue(conn: SqliteConnection): boolean {
  return conn.meta(VACUUM_DUE_META) !== undefined
}

export function vacuum(conn: SqliteConnection): void {
  conn.guard('vacuum', () => {
    // deleted index entries stay in FTS5 segments (tombstoned) until a merge: merge first, so a
    // vacuum after forget or redaction leaves no piece of the old text in the index either
    conn.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
    conn.db.exec('VACUUM')
    conn.stmt('DELETE FROM meta WHERE key = ?').run(VACUUM_DUE_META)
    // the WAL holds the pages the vacuum wrote until a checkpoint: truncate it too
    conn.db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  })
}

export function integrityCheck(conn: SqliteConnection): string[] {
  return conn.guard('integrity check', () => {
    const problems: string[] = []
    const rebuild = pendingRebuild(conn)
    if (conn.meta(VACUUM_DUE_META) !== undefined) problems.push('text redacted or forgotten may remain in free pages of the file until the store is vacuumed (its vacuum() method; the capture retries at every open)')
    if (rebuild?.alive === false) problems.push(`an interrupted index rebuild (pid ${rebuild.pid}) left half-built tables behind; the live index is intact (the next writable open drops them)`)
    for (const row of conn.db.prepare('PRAGMA quick_check').all() as Row[]) {
      const value = String(Object.values(row)[0])
      if (value !== 'ok') problems.push(value)
    }
    // FTS5's integrity check is issued as a write statement; a read-only connection skips it.
    for (const table of conn.readOnly ? [] : ['messages_words', 'messages_grams']) {
      try {
        conn.db.exec(`INSERT INTO ${table}(${table}, rank) VALUES ('integrity-check', 0)`)
      } catch (error) {
        problems.push(`${table}: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
    return problems
  })
}
