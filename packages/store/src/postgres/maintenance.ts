/** Retention, vacuum, reindex, stats and the self-check on PostgreSQL. */
import type pg from 'pg'
import { VACUUM_DUE_META, type IndexViews, type RetentionCandidate, type RetentionUsage } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
import type { StoreStats } from '../types.ts'
import type { PgConnection } from './connection.ts'
import { eventJsonOf, ROW_BYTES, storedEventJson } from './rows.ts'
import { PgRevisions } from './revisions.ts'
import { PG_SCHEMA_VERSION, PG_TABLES } from './schema.ts'
import { gramsText, tsvectorText } from './tokens.ts'

export async function retentionUsage(connection: PgConnection): Promise<RetentionUsage[]> {
  const rows = await connection.query<{ session_id: string; workspace: string | null; bytes: number }>('measure retention', `
    SELECT s.session_id, s.workspace, coalesce(sum(${ROW_BYTES}), 0)::bigint AS bytes
    FROM sessions s LEFT JOIN messages m ON m.session_id = s.session_id AND m.expired_at IS NULL
    GROUP BY s.session_id, s.workspace ORDER BY s.session_id`)
  return rows.map(row => ({ sessionId: row.session_id, workspace: row.workspace, bytes: row.bytes }))
}

/** A fork sees its parent's rows below the fork point on its own surface: never drop those (row alias m). */
const NO_FORK_SEES = 'NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = m.session_id AND m.seq < coalesce(c.fork_seq, 9223372036854775807))'

export async function retentionCandidates(connection: PgConnection): Promise<RetentionCandidate[]> {
  const rows = await connection.query<{ session_id: string; elided_by: string; n: number; bytes: number; newest: number }>('list retention candidates', `
    SELECT m.session_id, m.elided_by, count(*)::bigint AS n, sum(${ROW_BYTES})::bigint AS bytes, max(m.time) AS newest
    FROM messages m WHERE m.elided_by IS NOT NULL AND m.expired_at IS NULL
      -- a fork sees its parent's rows below the fork point on its own surface: never drop those
      AND ${NO_FORK_SEES}
    GROUP BY m.session_id, m.elided_by ORDER BY newest, m.elided_by`)
  return rows.map(row => ({ sessionId: row.session_id, checkpointId: row.elided_by, rows: row.n, bytes: row.bytes, newest: row.newest }))
}

export async function expireCheckpoints(connection: PgConnection, checkpointIds: readonly string[], time: number): Promise<Array<{ rows: number; bytes: number }>> {
  if (checkpointIds.length === 0) return []
  return connection.transaction('expire originals', async db => {
    // the fork check again, in the dropping transaction: a fork registered since the candidates
    // were listed sees these rows on its surface
    const found = await db.query<{ id: number; session_id: string; seq: number; elided_by: string; bytes: number }>(`SELECT m.id, m.session_id, m.seq, m.elided_by, ${ROW_BYTES} AS bytes FROM messages m WHERE m.elided_by = ANY($1::text[]) AND m.expired_at IS NULL AND ${NO_FORK_SEES} ORDER BY m.id FOR UPDATE OF m`, [checkpointIds])
    const counts = new Map<string, { rows: number; bytes: number }>()
    for (const row of found.rows) {
      const count = counts.get(row.elided_by) ?? { rows: 0, bytes: 0 }
      count.rows += 1
      count.bytes += Number(row.bytes)
      counts.set(row.elided_by, count)
    }
    if (found.rows.length > 0) {
      // content and index entries go; identity and hash stay (the log still verifies)
      const revisions = await PgRevisions.read(db, found.rows.map(row => row.session_id))
      await db.query("UPDATE messages m SET text = ''::bytea, event_json = ''::bytea, words = ''::tsvector, grams = '', expired_at = $1, rev = r.rev FROM unnest($2::bigint[], $3::bigint[]) AS r(id, rev) WHERE m.id = r.id",
        [time, found.rows.map(row => row.id), found.rows.map(row => revisions.of(row.session_id))])
      for (const row of found.rows) revisions.change(row.session_id, [row.seq])
      await db.query('UPDATE checkpoints c SET expired_at = coalesce(c.expired_at, $1), expired_rows = c.expired_rows + e.n FROM unnest($2::text[], $3::bigint[]) AS e(id, n) WHERE c.checkpoint_id = e.id',
        [time, [...counts.keys()], [...counts.values()].map(count => count.rows)])
      // sessions last, as every writer locks them
      await revisions.bump(db)
    }
    // a checkpoint named twice expired once: its first mention has the rows (as SQLite's, one by one)
    const seen = new Set<string>()
    return checkpointIds.map(id => {
      const first = !seen.has(id)
      seen.add(id)
      return { ...(first ? counts.get(id) ?? { rows: 0, bytes: 0 } : { rows: 0, bytes: 0 }) }
    })
  })
}

/**
 * VACUUM (ANALYZE) every table; while a scrub is owed (a redaction pass, a forget with vacuum),
 * VACUUM FULL instead. A plain VACUUM only marks dead row versions free: their bytes, and GIN keys
 * of deleted words, stay in the files until overwritten. FULL rewrites each table and its indexes
 * (an exclusive lock while it runs: writers and searches wait, up to their lock timeout).
 */
export async function vacuum(connection: PgConnection): Promise<void> {
  const scrub = (await connection.query('vacuum', 'SELECT 1 FROM meta WHERE key = $1', [VACUUM_DUE_META])).length > 0
  // no statement guard: cleaning a 10M-row table's indexes of dead rows takes minutes
  await connection.unguarded('vacuum', async db => {
    for (const table of PG_TABLES) await connection.query('vacuum', `VACUUM (${scrub ? 'FULL, ' : ''}ANALYZE) ${table}`, [], db)
  })
  if (scrub) await connection.query('vacuum', 'DELETE FROM meta WHERE key = $1', [VACUUM_DUE_META])
}

const REINDEX_PAGE = 2_000

export async function reindex(connection: PgConnection, analyze: (text: string, time: number) => IndexViews, progress?: (done: number, total: number) => void): Promise<number> {
  const total = (await connection.query<{ n: number }>('reindex', 'SELECT count(*)::bigint AS n FROM messages'))[0]?.n ?? 0
  let done = 0
  let after = 0
  for (;;) {
    const rows = await connection.query<{ id: number; text: Buffer; time: number; hash: string; tag: string; expired_at: number | null }>('reindex',
      'SELECT m.id, m.text, m.time, m.hash, s.tag, m.expired_at FROM messages m JOIN sessions s ON s.session_id = m.session_id WHERE m.id > $1 ORDER BY m.id LIMIT $2', [after, REINDEX_PAGE])
    if (rows.length === 0) break
    const live = rows.filter(row => row.expired_at === null)
    const views = live.map(row => analyze(Buffer.from(row.text).toString('utf8'), Number(row.time)))
    // only rows still as read: one a writer replaced meanwhile was indexed by that writer (from
    // its new text), one retention expired has no index entries any more
    await connection.query('reindex', `
      UPDATE messages m SET words = r.words::tsvector, grams = r.grams FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS r(id, words, grams, hash)
      WHERE m.id = r.id AND m.hash = r.hash AND m.expired_at IS NULL`,
    [live.map(row => row.id), views.map((view, index) => tsvectorText(view.words, live[index]!.tag, view.days)), views.map(view => gramsText(view.grams)), live.map(row => row.hash)])
    done += rows.length
    after = rows.at(-1)!.id
    progress?.(done, total)
  }
  return done
}

/** Bytes of the store's tables with their indexes and TOAST ($1 schema, $2 table names): maxBytes and stats() measure alike. */
const STORE_BYTES_SQL = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $1 AND c.relname = ANY($2::text[])`

export async function storeBytes(connection: PgConnection): Promise<number> {
  const [row] = await connection.query<{ bytes: number }>('measure store', `SELECT (${STORE_BYTES_SQL})::bigint AS bytes`, [connection.location.schema, [...PG_TABLES]])
  return row?.bytes ?? 0
}

export async function stats(connection: PgConnection, analyzerVersion: number): Promise<Omit<StoreStats, 'path'>> {
  const [row] = await connection.query<Record<string, number>>('stats', `
    SELECT (SELECT count(*) FROM sessions)::bigint AS sessions, (SELECT count(*) FROM messages)::bigint AS messages,
      (SELECT count(*) FROM checkpoints)::bigint AS checkpoints, (SELECT count(*) FROM recalls)::bigint AS recalls,
      (SELECT coalesce(sum(octet_length(text)), 0) FROM messages)::bigint AS text_bytes,
      (SELECT count(*) FROM messages WHERE expired_at IS NOT NULL)::bigint AS expired,
      (${STORE_BYTES_SQL})::bigint AS bytes`, [connection.location.schema, [...PG_TABLES]])
  return {
    schemaVersion: PG_SCHEMA_VERSION,
    analyzerVersion,
    sessions: row!['sessions']!,
    messages: row!['messages']!,
    checkpoints: row!['checkpoints']!,
    recalls: row!['recalls']!,
    bytes: row!['bytes']!,
    textBytes: row!['text_bytes']!,
    expired: row!['expired']!,
  }
}

/** Counters agree with the rows; every live row is in its session's scope; every row's session exists. */
export async function integrityCheck(connection: PgConnection): Promise<string[]> {
  const problems: string[] = []
  const counters = await connection.query<{ session_id: string; stored: number; counted: number }>('integrity check', `
    SELECT s.session_id, s.message_count AS stored, coalesce(c.n, 0)::bigint AS counted FROM sessions s
    LEFT JOIN (SELECT session_id, count(*) AS n FROM messages GROUP BY session_id) c ON c.session_id = s.session_id
    WHERE s.message_count <> coalesce(c.n, 0) LIMIT 20`)
  for (const row of counters) problems.push(`session ${row.session_id}: message_count ${row.stored} but ${row.counted} rows`)
  const orphans = await connection.query<{ n: number }>('integrity check', 'SELECT count(*)::bigint AS n FROM messages m WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = m.session_id)')
  if ((orphans[0]?.n ?? 0) > 0) problems.push(`${orphans[0]!.n} messages belong to no session`)
  const unscoped = await connection.query<{ n: number }>('integrity check', `
    SELECT count(*)::bigint AS n FROM messages m JOIN sessions s ON s.session_id = m.session_id
    WHERE m.expired_at IS NULL AND NOT (m.words @@ ('''~s:' || s.tag || '''')::tsquery)`)
  if ((unscoped[0]?.n ?? 0) > 0) problems.push(`${unscoped[0]!.n} live messages are missing from their session's index scope`)
  const due = await connection.query('integrity check', 'SELECT 1 FROM meta WHERE key = $1', [VACUUM_DUE_META])
  if (due.length > 0) problems.push('text redacted or forgotten may remain in old row versions of the tables until the store is vacuumed (its vacuum() method; the capture retries at every open)')
  return problems
}

/** How a redaction pass rewrites stored text (the store's redactor and its row hash). */
export interface StoredRedaction {
  text(text: string): string
  json(json: string): string
  hash(storedJson: string): string
}

export const REDACT_PASS_META = 'redact_pass'
export const ROW_HASH_META = 'row_hash'
export const ROW_HASH_STORED = 'stored'
const REDACT_BATCH = 500

async function setMeta(connection: PgConnection, key: string, value: string): Promise<void> {
  await connection.query('write meta', 'INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value])
}

interface RedactRow { id: number; session_id: string; seq: number; text: Buffer; time: number; event_json: Buffer; hash: string; expired_at: number | null; tag: string }

/** A row that changes under the pass this many times in a row stops it (resumable). */
const REDACT_ATTEMPTS = 20

/**
 * Redact one row as read, in the caller's transaction, only if it is still as read (same hash,
 * same expiry), stamped with `rev`: 'stale' when a writer or retention changed it since,
 * 'rehashed' when only its hash was rewritten.
 */
async function redactRow(db: pg.PoolClient, row: RedactRow, rev: number, redaction: StoredRedaction, analyze: (text: string, time: number) => IndexViews): Promise<'kept' | 'rehashed' | 'changed' | 'stale'> {
  const text = Buffer.from(row.text).toString('utf8')
  const json = eventJsonOf(row.event_json, text)
  const redactedText = redaction.text(text)
  const redactedJson = json.length === 0 ? json : redaction.json(json)
  const unchanged = 'AND hash = $2 AND expired_at IS NOT DISTINCT FROM $3'
  if (redactedText === text && redactedJson === json) {
    // a row kept by an older version may have the hash of its unredacted event: replace it
    const hash = redaction.hash(json)
    if (json.length === 0 || row.hash === hash) return 'kept'
    const updated = await db.query(`UPDATE messages SET hash = $4, rev = $5 WHERE id = $1 ${unchanged}`, [row.id, row.hash, row.expired_at, hash, rev])
    return updated.rowCount === 0 ? 'stale' : 'rehashed'
  }
  const views: IndexViews = row.expired_at === null ? analyze(redactedText, Number(row.time)) : { words: '', grams: '' }
  const updated = await db.query(`UPDATE messages SET text = $4, event_json = $5, event_bytes = $6, hash = $7, words = $8::tsvector, grams = $9, rev = $10 WHERE id = $1 ${unchanged}`, [
    row.id, row.hash, row.expired_at, Buffer.from(redactedText, 'utf8'), redactedJson.length === 0 ? Buffer.alloc(0) : storedEventJson(redactedJson, redactedText),
    Buffer.byteLength(redactedJson, 'utf8'), redaction.hash(redactedJson), row.expired_at === null ? tsvectorText(views.words, row.tag, views.days) : '', gramsText(views.grams), rev])
  return updated.rowCount === 0 ? 'stale' : 'changed'
}

/**
 * Redact what is already stored: message text and event JSON (with their hashes and index
 * entries), checkpoint footers and errors, recall queries. Resumable: the last row done is kept in
 * meta with each batch. VACUUM afterwards (old row versions hold the old text until it runs).
 */
export async function redactStored(connection: PgConnection, redaction: StoredRedaction, analyze: (text: string, time: number) => IndexViews, progress?: (done: number, total: number) => void): Promise<{ rows: number; changed: number }> {
  const total = (await connection.query<{ n: number }>('redact stored rows', 'SELECT count(*)::bigint AS n FROM messages'))[0]?.n ?? 0
  let after = Number((await connection.query<{ value: string }>('redact stored rows', 'SELECT value FROM meta WHERE key = $1', [REDACT_PASS_META]))[0]?.value ?? 0)
  let done = (await connection.query<{ n: number }>('redact stored rows', 'SELECT count(*)::bigint AS n FROM messages WHERE id <= $1', [after]))[0]?.n ?? 0
  let changed = 0
  const select = 'SELECT m.id, m.session_id, m.seq, m.text, m.time, m.event_json, m.hash, m.expired_at, s.tag FROM messages m JOIN sessions s ON s.session_id = m.session_id'
  for (;;) {
    const rows = await connection.query<RedactRow>('redact stored rows', `${select} WHERE m.id > $1 ORDER BY m.id LIMIT $2`, [after, REDACT_BATCH])
    if (rows.length === 0) break
    // A row a writer replaced (or retention expired) between our read and our write is read again:
    // writing back the redacted old version would undo the writer's replacement.
    let pending = rows
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt >= REDACT_ATTEMPTS) throw new ShadowStoreError('CONFLICT', `redaction pass: rows ${pending.map(row => row.id).slice(0, 5).join(', ')} keep changing under it; the pass resumes at the next open`)
      const outcome = await connection.transaction('redact stored rows', async db => {
        const stale: number[] = []
        let count = 0
        // a rehashed row changed too (its hash is read back): its session's revision moves
        const revisions = await PgRevisions.read(db, pending.map(row => row.session_id))
        for (const row of pending) {
          const result = await redactRow(db, row, revisions.of(row.session_id), redaction, analyze)
          if (result === 'stale') stale.push(row.id)
          if (result === 'changed' || result === 'rehashed') revisions.change(row.session_id, [row.seq])
          if (result === 'changed') count += 1
        }
        await revisions.bump(db)
        if (stale.length === 0) await db.query('INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [REDACT_PASS_META, String(rows.at(-1)!.id)])
        return { stale, count }
      })
      changed += outcome.count
      pending = outcome.stale.length === 0 ? [] : await connection.query<RedactRow>('redact stored rows', `${select} WHERE m.id = ANY($1::bigint[]) ORDER BY m.id`, [outcome.stale])
    }
    after = rows.at(-1)!.id
    done += rows.length
    progress?.(done, total)
  }
  await connection.transaction('redact stored rows', async db => {
    for (const row of (await db.query<{ checkpoint_id: string; footer: string | null; error: string | null }>('SELECT checkpoint_id, footer, error FROM checkpoints')).rows) {
      const footer = row.footer === null ? null : redaction.text(row.footer)
      const error = row.error === null ? null : redaction.text(row.error)
      if (footer !== row.footer || error !== row.error) await db.query('UPDATE checkpoints SET footer = $1, error = $2 WHERE checkpoint_id = $3', [footer, error, row.checkpoint_id])
    }
    for (const row of (await db.query<{ id: number; query: string }>('SELECT id, query FROM recalls WHERE query IS NOT NULL')).rows) {
      const query = redaction.text(row.query)
      if (query !== row.query) await db.query('UPDATE recalls SET query = $1 WHERE id = $2', [query, row.id])
    }
    await db.query('DELETE FROM meta WHERE key = $1', [REDACT_PASS_META])
  })
  await setMeta(connection, ROW_HASH_META, ROW_HASH_STORED)
  await setMeta(connection, VACUUM_DUE_META, 'redaction')
  try {
    await vacuum(connection)
  } catch {
    // stays due: the next vacuum() does it
  }
  return { rows: done, changed }
}
