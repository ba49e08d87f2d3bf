/** Maintenance SQL: index rebuilds, stats, retention, vacuum, integrity. */
import type { RetentionCandidate, RetentionUsage } from '../backend.ts'
import type { StoreStats } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { decodeText, type Row } from './rows.ts'
import { SCHEMA_VERSION } from './schema.ts'

/** Stored bytes of one message row (what retention budgets count). */
const ROW_BYTES = 'length(CAST(m.text AS BLOB)) + length(CAST(m.event_json AS BLOB))'

export function reindex(conn: SqliteConnection, analyze: (text: string) => { words: string; grams: string }, version: number, progress?: (done: number, total: number) => void): number {
  return conn.guard('reindex', () => {
    const total = (conn.db.prepare('SELECT count(*) AS n FROM messages').get() as Row)['n'] as number
    conn.transaction(() => {
      conn.db.exec("DELETE FROM messages_words; DELETE FROM messages_grams;")
    })
    const insertWords = conn.stmt('INSERT INTO messages_words(rowid, body, scope) VALUES (?, ?, ?)')
    const insertGrams = conn.stmt('INSERT INTO messages_grams(rowid, body, scope) VALUES (?, ?, ?)')
    const page = conn.db.prepare('SELECT m.id, m.text, s.tag FROM messages m JOIN sessions s ON s.session_id = m.session_id WHERE m.id > ? ORDER BY m.id LIMIT 2000')
    let done = 0
    let after = 0
    for (;;) {
      const rows = page.all(after) as Row[]
      if (rows.length === 0) break
      conn.transaction(() => {
        for (const row of rows) {
          const views = analyze(decodeText(row['text']))
          const scope = `s${row['tag'] as string}`
          insertWords.run(row['id'] as number, views.words, scope)
          if (views.grams.length > 0) insertGrams.run(row['id'] as number, views.grams, scope)
        }
      })
      done += rows.length
      after = rows.at(-1)!['id'] as number
      progress?.(done, total)
    }
    conn.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
    conn.setMeta('analyzer_version', String(version))
    return done
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

export function retentionCandidates(conn: SqliteConnection): RetentionCandidate[] {
  return conn.guard('list retention candidates', () => (conn.db.prepare(`
    SELECT m.session_id, m.elided_by, count(*) AS n, sum(${ROW_BYTES}) AS bytes, max(m.time) AS newest
    FROM messages m WHERE m.elided_by IS NOT NULL AND m.expired_at IS NULL
      -- a fork sees its parent's rows below the fork point on its own surface: never drop those
      AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = m.session_id AND m.seq < coalesce(c.fork_seq, 9223372036854775807))
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
  return conn.guard('expire originals', () => conn.transaction(() => {
    const rows = conn.stmt(`SELECT m.id, ${ROW_BYTES} AS bytes FROM messages m WHERE m.elided_by = ? AND m.expired_at IS NULL`).all(checkpointId) as Row[]
    const clear = conn.stmt("UPDATE messages SET text = X'', event_json = '', expired_at = ? WHERE id = ?")
    const deleteWords = conn.stmt('DELETE FROM messages_words WHERE rowid = ?')
    const deleteGrams = conn.stmt('DELETE FROM messages_grams WHERE rowid = ?')
    let bytes = 0
    for (const row of rows) {
      clear.run(time, row['id'] as number)
      deleteWords.run(row['id'] as number)
      deleteGrams.run(row['id'] as number)
      bytes += row['bytes'] as number
    }
    if (rows.length > 0) {
      conn.stmt('UPDATE checkpoints SET expired_at = coalesce(expired_at, ?), expired_rows = expired_rows + ? WHERE checkpoint_id = ?').run(time, rows.length, checkpointId)
    }
    return { rows: rows.length, bytes }
  }))
}

export function vacuum(conn: SqliteConnection): void {
  conn.guard('vacuum', () => {
    conn.db.exec('VACUUM')
  })
}

export function integrityCheck(conn: SqliteConnection): string[] {
  return conn.guard('integrity check', () => {
    const problems: string[] = []
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
