/**
 * Bulk loading (a first import, the scale benchmark's corpus): the two text indexes are dropped
 * while rows stream in through the ordinary idempotent append, then built once, sorted, which is
 * several times cheaper than keeping GIN indexes up to date row by row. Searches are slow and
 * see nothing new until `end`. The loader holds an advisory lock on its own connection; a loader
 * killed in between leaves the mark in meta, and the next writable open rebuilds the indexes.
 */
import type pg from 'pg'
import { BULK_LOAD_META, bulkLockKey, pgError, SCHEMA_NAME, trgmSchema, type PgConnection } from './connection.ts'
import { ShadowStoreError } from '../errors.ts'
import { DAY_PREFIX, tsvectorText } from './tokens.ts'
import { PgRevisions } from './revisions.ts'
import { migrationSql, PG_TABLES, TEXT_INDEX_NAMES, TEXT_INDEXES_SQL } from './schema.ts'
import { recountSession } from './writes.ts'

export class BulkLoad {
  private readonly connection: PgConnection
  private readonly holder: pg.PoolClient

  private constructor(connection: PgConnection, holder: pg.PoolClient) {
    this.connection = connection
    this.holder = holder
  }

  static async begin(connection: PgConnection): Promise<BulkLoad> {
    let holder: pg.PoolClient
    try {
      holder = await connection.maintenancePool.connect()
    } catch (error) {
      throw pgError(error, 'begin bulk load', connection.location.display)
    }
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [bulkLockKey(connection.location.schema)])
      await holder.query('BEGIN')
      await holder.query("INSERT INTO meta(key, value) VALUES ($1, 'text indexes dropped') ON CONFLICT (key) DO NOTHING", [BULK_LOAD_META])
      for (const name of TEXT_INDEX_NAMES) await holder.query(`DROP INDEX IF EXISTS ${name}`)
      await holder.query('COMMIT')
    } catch (error) {
      await holder.query('ROLLBACK').catch(() => {})
      holder.release(true)
      throw pgError(error, 'begin bulk load', connection.location.display)
    }
    return new BulkLoad(connection, holder)
  }

  /**
   * Copy every row of session `from` (of this store, or of the store in schema `fromSchema` on the
   * same database) into session `to` (registered by the store beforehand, with no rows yet),
   * server-side: seqs and content as they are, times shifted by `shiftDays` whole days, the scope
   * lexeme, the referred-day lexemes (shifted with the times) and shadow ids rewritten for `to`.
   * What grows a benchmark corpus past what the analyzer can produce in reasonable time (the rows
   * are the same text, so term rates stay).
   */
  async copySession(from: string, to: string, shiftDays: number, fromSchema?: string): Promise<number> {
    if (!Number.isInteger(shiftDays)) throw new ShadowStoreError('INVALID_INPUT', `copySession shifts by whole days (the referred-day lexemes move with the times), not ${shiftDays}`)
    if (fromSchema !== undefined && !SCHEMA_NAME.test(fromSchema)) throw new ShadowStoreError('INVALID_INPUT', `schema ${JSON.stringify(fromSchema)} must be a lowercase SQL identifier`)
    const source = fromSchema === undefined ? '' : `${fromSchema}.`
    try {
      await this.holder.query('BEGIN')
      const tagOf = async (table: string, id: string): Promise<string> => {
        const found = (await this.holder.query<{ tag: string }>(`SELECT tag FROM ${table} WHERE session_id = $1`, [id])).rows[0]
        if (found === undefined) throw new ShadowStoreError('NOT_FOUND', `session ${id} is not in the shadow store`)
        return found.tag
      }
      await tagOf(`${source}sessions`, from) // the source must exist: NOT_FOUND, not an empty copy
      const toTag = await tagOf('sessions', to)
      // the copied rows are a change of `to` like any append: stamped with its next revision
      const revisions = await PgRevisions.read(this.holder, [to])
      const inserted = await this.holder.query<{ seq: number }>(`
        INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, turn, step, tool_name, call_id, time, tokens, hash, event_json, event_bytes, text, words, grams, rev)
        SELECT $2, m.seq, $3 || '.' || m.seq, m.event_type, m.role, m.source_kind, m.turn, m.step, m.tool_name, m.call_id, m.time + $4::bigint * 86400000, m.tokens, m.hash, m.event_json, m.event_bytes, m.text,
          ts_delete(m.words, ARRAY(SELECT u.lexeme FROM unnest(m.words) u WHERE u.lexeme LIKE '~%')) || $5::tsvector
            || coalesce((SELECT array_to_tsvector(array_agg('${DAY_PREFIX}' || to_char(to_date(substr(u.lexeme, ${DAY_PREFIX.length + 1}), 'YYYYMMDD') + $4::int, 'YYYYMMDD')))
              FROM unnest(m.words) u WHERE u.lexeme LIKE '${DAY_PREFIX}%'), ''::tsvector),
          m.grams, $6::bigint
        FROM ${source}messages m WHERE m.session_id = $1 ORDER BY m.seq
        ON CONFLICT (session_id, seq) DO NOTHING RETURNING seq`,
      [from, to, toTag, shiftDays, tsvectorText('', toTag), revisions.of(to)])
      revisions.change(to, inserted.rows.map(row => row.seq))
      await this.holder.query(`INSERT INTO message_calls(session_id, call_id, seq) SELECT $2, call_id, seq FROM ${source}message_calls WHERE session_id = $1 ON CONFLICT DO NOTHING`, [from, to])
      await recountSession(this.holder, to)
      await revisions.bump(this.holder)
      await this.holder.query('COMMIT')
      return inserted.rowCount ?? 0
    } catch (error) {
      await this.holder.query('ROLLBACK').catch(() => {})
      throw pgError(error, 'copy session', this.connection.location.display)
    }
  }

  /**
   * Build the text indexes, each on its own connection at the same time (PostgreSQL 15 builds a
   * GIN index in one process; two builds use two cores), sorting in `memory` each, with no
   * statement timeout: minutes for millions of rows. Then VACUUM ANALYZE. A loader killed in
   * between leaves the meta mark: the next writable open builds what is missing.
   */
  async end(memory = '512MB'): Promise<void> {
    const builders: pg.PoolClient[] = []
    try {
      const trgm = await trgmSchema(this.holder)
      const statements = migrationSql(TEXT_INDEXES_SQL, trgm).split(';').map(sql => sql.trim()).filter(sql => sql.length > 0)
      for (const _ of statements) builders.push(await this.connection.maintenancePool.connect())
      await Promise.all(statements.map(async (sql, index) => {
        const db = builders[index]!
        await db.query(`SET maintenance_work_mem = '${memory.replace(/[^0-9A-Za-z]/g, '')}'`)
        await db.query('SET statement_timeout = 0')
        await db.query(sql)
      }))
      await this.holder.query('DELETE FROM meta WHERE key = $1', [BULK_LOAD_META])
      await this.holder.query('SET statement_timeout = 0')
      for (const table of PG_TABLES) await this.holder.query(`VACUUM (ANALYZE) ${table}`)
      await this.holder.query('SELECT pg_advisory_unlock($1)', [bulkLockKey(this.connection.location.schema)])
    } catch (error) {
      throw pgError(error, 'end bulk load', this.connection.location.display)
    } finally {
      for (const db of builders) db.release(true)
      this.holder.release(true)
    }
  }
}
