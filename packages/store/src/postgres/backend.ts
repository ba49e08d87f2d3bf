/**
 * The PostgreSQL backend: one store per schema of a PostgreSQL database, for team dsh servers and
 * several dsh processes or hosts writing one store. Selected by a `postgres://` location; every
 * PostgreSQL dialect detail lives in this folder.
 */
import { VACUUM_DUE_META, type ChangesRequest, type CheckpointDerived, type ForgetCounts, type FrequencyQuery, type IndexQuery, type IndexResult, type IndexViews, type MessageFilter, type MessageMark, type PreparedMessage, type ReadQuery, type RetentionCandidate, type RetentionUsage, type SessionChanges, type SessionLink, type ShadowBackend, type WideScope } from '../backend.ts'
import { sessionConflict, ShadowStoreError } from '../errors.ts'
import { deepLineage, onlySegments, splitLineage, unboundedSessions, wideWholeStore } from '../filter.ts'
import type { AppendResult, CheckpointInput, RecallInput, ShadowCheckpoint, ShadowMessage, ShadowRecall, ShadowSession, ShadowSessionInput, StoreStats } from '../types.ts'
import { BulkLoad } from './bulk.ts'
import { sessionChanges } from './changes.ts'
import { migrate, parseLocation, PgConnection, type PostgresBackendOptions } from './connection.ts'
import { expireCheckpoints, integrityCheck, redactStored, REDACT_PASS_META, reindex, retentionCandidates, retentionUsage, ROW_HASH_META, ROW_HASH_STORED, stats, storeBytes, vacuum, type StoredRedaction } from './maintenance.ts'
import { CANDIDATE_COLUMNS, completeLight, filterSql, lineageFrom, Params, toCheckpoint, toMessage, toRecall, toSession, type Row, type WholeStore } from './rows.ts'
import { MessageReads } from './reads.ts'
import { PgRevisions, REVISION_FLOOR } from './revisions.ts'
import { PG_SCHEMA_VERSION } from './schema.ts'
import { candidateRows, documentFrequencies, listIds, searchIndex, searchIndexes } from './search.ts'
import { appendRows, forgetRows, recountSession } from './writes.ts'

/** How long a measured store size is trusted (maxBytes). */
const SIZE_TTL_MS = 1_000

export class PostgresBackend implements ShadowBackend {
  readonly path: string
  readonly schemaVersion = PG_SCHEMA_VERSION
  readonly connection: PgConnection
  private writable = true
  private readonly maxBytes: number | undefined
  /** The store's size as last measured, plus what this process added since (maxBytes only). */
  private size: { read: number; bytes: number } | undefined
  private readonly wholeAnswers = new WeakMap<object, Promise<WholeStore>>()
  private readonly reads: MessageReads

  private constructor(connection: PgConnection, maxBytes: number | undefined) {
    this.connection = connection
    this.path = connection.location.display
    this.maxBytes = maxBytes
    this.reads = new MessageReads(connection)
  }

  /** Connect, then create or upgrade the schema (writable) or check it (read-only). */
  static async open(location: string, options: PostgresBackendOptions = {}): Promise<PostgresBackend> {
    const connection = new PgConnection(parseLocation(location), options)
    try {
      await migrate(connection)
    } catch (error) {
      await connection.close()
      throw error
    }
    return new PostgresBackend(connection, options.maxBytes)
  }

  private async query<R extends Row = Row>(action: string, sql: string, params: unknown[] = []): Promise<R[]> {
    return this.connection.query<R>(action, sql, params)
  }

  private assertWritable(action: string): void {
    if (this.connection.readOnly) throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.path} is open read-only (${action})`)
    if (!this.writable) throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.path} is frozen for writes (${action})`)
  }

  async close(): Promise<void> {
    await this.connection.close()
  }

  async meta(key: string): Promise<string | undefined> {
    return (await this.query<{ value: string }>('read meta', 'SELECT value FROM meta WHERE key = $1', [key]))[0]?.value
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.assertWritable('write meta')
    await this.query('write meta', 'INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value])
  }

  /**
   * Insert-then-update, not one ON CONFLICT (session_id) upsert: when two writers insert a new session
   * at the same instant, the tag's unique index is not an arbiter of that upsert and the loser would
   * fail with a unique violation. DO NOTHING without a target arbitrates on every unique index; the
   * update then runs on a fresh snapshot and finds the winner's row.
   */
  async upsertSession(input: ShadowSessionInput & { readonly tag: string }): Promise<void> {
    this.assertWritable('write session')
    const inserted = await this.query('write session', `
      INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, workspace, created_at, revision, removed_rev) VALUES ($1, $2, $3, $4, $5, $6, ${REVISION_FLOOR}, ${REVISION_FLOOR})
      ON CONFLICT DO NOTHING RETURNING 1 AS one`,
    [input.sessionId, input.tag, input.parentSessionId ?? null, input.forkSeq ?? null, input.workspace ?? null, input.createdAt ?? null])
    if (inserted.length > 0) return
    const updated = await this.query('write session', `
      UPDATE sessions SET
        parent_session_id = coalesce($2, parent_session_id),
        fork_seq = coalesce($3, fork_seq),
        workspace = coalesce($4, workspace),
        created_at = coalesce(created_at, $5)
      WHERE session_id = $1 RETURNING tag`,
    [input.sessionId, input.parentSessionId ?? null, input.forkSeq ?? null, input.workspace ?? null, input.createdAt ?? null])
    // the tag went to another session between our lookup and this insert; nothing was written
    if (updated.length === 0) throw sessionConflict(this.path, input, undefined)
  }

  /**
   * Inserted in session order (as every writer inserts them, so two registering the same new sessions
   * cannot deadlock); DO NOTHING without a target arbitrates on both unique indexes, as upsertSession's.
   */
  async addSessions(sessions: ReadonlyArray<{ readonly sessionId: string; readonly tag: string }>): Promise<void> {
    if (sessions.length === 0) return
    this.assertWritable('write session')
    const wanted = new Map(sessions.map(session => [session.sessionId, session.tag]))
    const inserted = await this.query<{ session_id: string }>('write session', `
      INSERT INTO sessions(session_id, tag, revision, removed_rev)
      SELECT session_id, tag, ${REVISION_FLOOR}, ${REVISION_FLOOR} FROM unnest($1::text[], $2::text[]) AS s(session_id, tag) ORDER BY session_id
      ON CONFLICT DO NOTHING RETURNING session_id`, [[...wanted.keys()], [...wanted.values()]])
    const done = new Set(inserted.map(row => row.session_id))
    const rest = [...wanted.keys()].filter(id => !done.has(id))
    if (rest.length === 0) return
    const stored = new Map((await this.getSessions(rest)).map(session => [session.sessionId, session.tag]))
    for (const sessionId of rest) {
      const tag = wanted.get(sessionId)!
      if (stored.get(sessionId) !== tag) throw sessionConflict(this.path, { sessionId, tag }, stored.get(sessionId))
    }
  }

  getSessions(sessionIds: readonly string[]): Promise<ShadowSession[]> {
    return this.sessionsBy('session_id', sessionIds)
  }

  getSessionsByTags(tags: readonly string[]): Promise<ShadowSession[]> {
    return this.sessionsBy('tag', tags)
  }

  private async sessionsBy(column: 'session_id' | 'tag', values: readonly string[]): Promise<ShadowSession[]> {
    if (values.length === 0) return []
    return (await this.query('read session', `SELECT * FROM sessions WHERE ${column} = ANY($1::text[])`, [[...new Set(values)]])).map(toSession)
  }

  async getSession(sessionId: string): Promise<ShadowSession | undefined> {
    const [row] = await this.query('read session', 'SELECT * FROM sessions WHERE session_id = $1', [sessionId])
    return row === undefined ? undefined : toSession(row)
  }

  /** Labelled as the session reads it replaces: a capture reports a failing store once per distinct message. */
  async ancestry(sessionId: string, limit: number): Promise<SessionLink[]> {
    const rows = await this.query<{ session_id: string; tag: string; parent: string | null; fork_seq: number | null; workspace: string | null }>('read session', `
      WITH RECURSIVE chain(session_id, tag, parent, fork_seq, workspace, depth) AS (
        SELECT session_id, tag, parent_session_id, fork_seq, workspace, 1 FROM sessions WHERE session_id = $1
        UNION ALL
        SELECT s.session_id, s.tag, s.parent_session_id, s.fork_seq, s.workspace, c.depth + 1 FROM chain c JOIN sessions s ON s.session_id = c.parent WHERE c.depth < $2
      )
      SELECT session_id, tag, parent, fork_seq, workspace FROM chain ORDER BY depth`, [sessionId, Math.max(1, Math.floor(limit))])
    return rows.map(row => ({ sessionId: row.session_id, tag: row.tag, parentSessionId: row.parent, forkSeq: row.fork_seq === null ? null : Number(row.fork_seq), workspace: row.workspace }))
  }

  async someSessions(scope: WideScope, limit: number): Promise<Array<Pick<ShadowSession, 'sessionId' | 'tag'>>> {
    const rows = scope.of === 'store'
      ? await this.query<{ session_id: string; tag: string }>('list sessions', 'SELECT session_id, tag FROM sessions LIMIT $1', [limit])
      : await this.query<{ session_id: string; tag: string }>('list sessions', 'SELECT session_id, tag FROM sessions WHERE workspace = $1 LIMIT $2', [scope.workspace, limit])
    return rows.map(row => ({ sessionId: row.session_id, tag: row.tag }))
  }

  async getSessionByTag(tag: string): Promise<ShadowSession | undefined> {
    const [row] = await this.query('read session', 'SELECT * FROM sessions WHERE tag = $1', [tag])
    return row === undefined ? undefined : toSession(row)
  }

  async listSessions(workspace?: string, limit?: number): Promise<ShadowSession[]> {
    // LIMIT NULL: no limit
    const rows = workspace === undefined
      ? await this.query('list sessions', 'SELECT * FROM sessions ORDER BY coalesce(last_time, created_at, 0) DESC, session_id LIMIT $1', [limit ?? null])
      : await this.query('list sessions', 'SELECT * FROM sessions WHERE workspace = $1 ORDER BY coalesce(last_time, created_at, 0) DESC, session_id LIMIT $2', [workspace, limit ?? null])
    return rows.map(toSession)
  }

  /**
   * maxBytes: refuse a write that would take the store past its ceiling. The size is measured at
   * most once a second (tables and indexes, every writer's rows) and grown by this process's own
   * writes in between; a row's cost is counted as its text, JSON and index views.
   */
  private async assertRoom(action: string, adding: number): Promise<void> {
    if (this.maxBytes === undefined) return
    if (this.size === undefined || Date.now() - this.size.read > SIZE_TTL_MS || this.size.bytes + adding > this.maxBytes) {
      this.size = { read: Date.now(), bytes: await storeBytes(this.connection) }
    }
    if (this.size.bytes + adding > this.maxBytes) {
      throw new ShadowStoreError('FULL', `shadow store ${this.path} ${action}: the store is full (its maxBytes limit of ${this.maxBytes} bytes; ${this.size.bytes} used, ${adding} more asked)`)
    }
    this.size = { read: this.size.read, bytes: this.size.bytes + adding }
  }

  async appendMessages(rows: readonly PreparedMessage[]): Promise<AppendResult> {
    if (rows.length === 0) return { written: 0, unchanged: 0, replaced: 0 }
    this.assertWritable('append messages')
    await this.assertRoom('append messages', rows.reduce((sum, row) => sum + row.text.length + row.eventJson.length + row.words.length + row.grams.length, 0))
    return this.connection.transaction('append messages', db => appendRows(db, rows))
  }

  /** Calls in one tick are answered by one statement (reads.ts). */
  getMessage(sessionId: string, seq: number): Promise<ShadowMessage | undefined> {
    return this.reads.read(sessionId, seq)
  }

  /** Calls in one tick are answered by one statement (reads.ts). */
  readMessages(query: ReadQuery): Promise<ShadowMessage[]> {
    return this.reads.readRange(query)
  }

  async callRows(keys: ReadonlyArray<{ readonly sessionId: string; readonly callId: string }>): Promise<ShadowMessage[]> {
    if (keys.length === 0) return []
    const rows = await this.query('read calls', `
      WITH wanted AS (SELECT * FROM unnest($1::text[], $2::text[]) AS w(session_id, call_id))
      SELECT ${CANDIDATE_COLUMNS} FROM wanted w JOIN messages m ON m.session_id = w.session_id AND m.call_id = w.call_id AND m.role = 'tool'
      UNION ALL
      SELECT ${CANDIDATE_COLUMNS} FROM wanted w JOIN message_calls c ON c.session_id = w.session_id AND c.call_id = w.call_id
        JOIN messages m ON m.session_id = c.session_id AND m.seq = c.seq`,
    [keys.map(key => key.sessionId), keys.map(key => key.callId)])
    return (await completeLight((sql, params) => this.query('read calls', sql, params), rows)).map(toMessage)
  }

  async messageTotal(): Promise<number> {
    return (await this.query<{ n: number }>('count messages', 'SELECT coalesce(sum(message_count), 0)::bigint AS n FROM sessions'))[0]?.n ?? 0
  }

  async countMessages(filter: MessageFilter): Promise<number> {
    const whole = await this.wholeStore(filter)
    if (onlySegments(filter)) {
      // sessions.message_count is kept by every write; a fork's bounded segment is an index range count.
      if (whole !== false) return this.messageTotal()
      // every segment in one statement (a workspace of 33k sessions was 33k round trips, 1.6 s); a
      // wide scope's unnamed sessions by their counters, found through the workspace index
      const { open, bounded } = splitLineage(filter.segments)
      const inWide = filter.wide?.of === 'workspace' ? ' AND workspace = $5' : ''
      // the provenance's sum less the named sessions' part of it (a `<> ALL` checked every session against the list)
      const wide = filter.wide === undefined ? '0'
        : `(SELECT coalesce(sum(message_count), 0) FROM sessions WHERE true${inWide}) - (SELECT coalesce(sum(message_count), 0) FROM sessions WHERE session_id = ANY($4::text[])${inWide})`
      const [row] = await this.query<{ n: number }>('count messages', `
        SELECT ((SELECT coalesce(sum(message_count), 0) FROM sessions WHERE session_id = ANY($1::text[]))
          + (SELECT count(*) FROM unnest($2::text[], $3::bigint[]) AS b(session_id, below) JOIN messages m ON m.session_id = b.session_id AND m.seq < b.below)
          + ${wide})::bigint AS n`,
      [open, bounded.map(segment => segment.sessionId), bounded.map(segment => segment.belowSeq),
        ...(filter.wide === undefined ? [] : [[...new Set(filter.segments.map(segment => segment.sessionId))], ...(filter.wide.of === 'workspace' ? [filter.wide.workspace] : [])])])
      return row?.n ?? 0
    }
    const params = new Params()
    // a deep lineage: its rows joined against the bound list (each session one index range)
    const deep = whole === false && filter.wide === undefined && deepLineage(filter.segments)
    const from = deep ? lineageFrom(filter.segments, params) : 'messages m'
    const where = filterSql(filter, params, deep ? 'joined' : whole)
    return (await this.query<{ n: number }>('count messages', `SELECT count(*)::bigint AS n FROM ${from} WHERE ${where}`, params.values))[0]?.n ?? 0
  }

  /**
   * The segments are every session of the store, none bounded by a fork: no session filter is needed.
   * Answered once per segments list: one search passes the same list to every index call.
   */
  private wholeStore(filter: Pick<MessageFilter, 'segments' | 'wide'>): Promise<WholeStore> {
    const { segments, wide } = filter
    // a wide scope's answer is its own (the same segments may be asked without it)
    const key: object = wide ?? segments
    const known = this.wholeAnswers.get(key)
    if (known !== undefined) return known
    const answer = (async () => {
      if (wide !== undefined) {
        // said by the scope itself; as of the newest row, as below
        if (!wideWholeStore(wide, segments)) return false as const
        const [newest] = await this.query<{ newest: number }>('count sessions', 'SELECT coalesce(max(id), 0)::bigint AS newest FROM messages')
        return { newest: newest?.newest ?? 0 }
      }
      const distinct = unboundedSessions(segments)
      if (distinct === undefined || distinct <= 1) return false as const
      // no stored session outside the named ones (not counts of them, which walked every session
      // of the store): a session of the scope forgotten since it was read leaves room for one outside it
      const named = [...new Set(segments.map(segment => segment.sessionId))]
      // and answered as of the newest row: the answer is used by later statements, after a session
      // outside the scope may have begun (its rows come after that row)
      const [counts] = await this.query<{ other: boolean; newest: number }>('count sessions', `
        SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id <> ALL($1::text[])) AS other,
          (SELECT coalesce(max(id), 0) FROM messages)::bigint AS newest`, [named])
      return counts !== undefined && !counts.other ? { newest: counts.newest } : false
    })()
    this.wholeAnswers.set(key, answer)
    return answer
  }

  async messageHashes(sessionId: string): Promise<Array<{ seq: number; hash: string }>> {
    return this.query<{ seq: number; hash: string }>('read hashes', 'SELECT seq, hash FROM messages WHERE session_id = $1 ORDER BY seq', [sessionId])
  }

  /** Hash and marks of these seqs of a session's own rows, in one indexed query (the calls of one tick in one: reads.ts); no text is read. */
  messageHashesFor(sessionId: string, seqs: readonly number[]): Promise<MessageMark[]> {
    return this.reads.marks(sessionId, seqs)
  }

  async deleteMessages(sessionId: string, seqs: readonly number[]): Promise<number> {
    if (seqs.length === 0) return 0
    this.assertWritable('delete messages')
    return this.connection.transaction('delete messages', async db => {
      const removed = await db.query('DELETE FROM messages WHERE session_id = $1 AND seq = ANY($2::bigint[]) RETURNING seq', [sessionId, seqs])
      await db.query('DELETE FROM message_calls WHERE session_id = $1 AND seq = ANY($2::bigint[])', [sessionId, seqs])
      // Recount only once the session row is ours (rows first, then the session: the order appends
      // lock in): an append that bumped the counter but has not committed yet would otherwise be
      // overwritten by a count taken before its rows were visible.
      await db.query('SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE', [sessionId])
      await recountSession(db, sessionId)
      if ((removed.rowCount ?? 0) > 0) {
        const revisions = PgRevisions.none()
        revisions.remove(sessionId)
        await revisions.bump(db)
      }
      return removed.rowCount ?? 0
    })
  }

  /** One statement: one snapshot (changes.ts). */
  sessionChanges(requests: readonly ChangesRequest[]): Promise<Array<SessionChanges | undefined>> {
    return sessionChanges(this.connection, requests)
  }

  async forgetSessions(sessionIds: readonly string[], options: { readonly vacuumDue?: boolean } = {}): Promise<ForgetCounts> {
    this.assertWritable('forget sessions')
    return this.connection.transaction('forget sessions', async db => {
      const counts = await forgetRows(db, sessionIds)
      if (options.vacuumDue === true) await db.query("INSERT INTO meta(key, value) VALUES ($1, 'forget') ON CONFLICT (key) DO UPDATE SET value = excluded.value", [VACUUM_DUE_META])
      return counts
    })
  }

  async markElided(sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
    if (seqs.length === 0) return
    this.assertWritable('mark elided')
    await this.connection.transaction('mark elided', async db => {
      // rows first, then the session (the order appends lock in); a row marked so already is no change
      const revisions = await PgRevisions.read(db, [sessionId])
      const marked = await db.query<{ seq: number }>('UPDATE messages SET elided_by = $1, rev = $4 WHERE session_id = $2 AND seq = ANY($3::bigint[]) AND elided_by IS DISTINCT FROM $1 RETURNING seq',
        [checkpointId, sessionId, seqs, revisions.of(sessionId)])
      revisions.change(sessionId, marked.rows.map(row => row.seq))
      await revisions.bump(db)
    })
  }

  async putCheckpoint(input: CheckpointInput, derived: CheckpointDerived): Promise<void> {
    this.assertWritable('write checkpoint')
    await this.query('write checkpoint', `
      INSERT INTO checkpoints(checkpoint_id, session_id, engine, status, "trigger", start_seq, summary_seq, replace_seq, shadowed_seqs,
        first_seq, last_seq, first_shadow_id, last_shadow_id, time_from, time_to, message_count, shadowed_tokens, summary_tokens, footer, error, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
      ON CONFLICT (checkpoint_id) DO UPDATE SET
        engine = excluded.engine, status = excluded.status, "trigger" = coalesce(excluded."trigger", checkpoints."trigger"),
        start_seq = coalesce(excluded.start_seq, checkpoints.start_seq), summary_seq = coalesce(excluded.summary_seq, checkpoints.summary_seq),
        replace_seq = coalesce(excluded.replace_seq, checkpoints.replace_seq), shadowed_seqs = excluded.shadowed_seqs,
        first_seq = excluded.first_seq, last_seq = excluded.last_seq, first_shadow_id = excluded.first_shadow_id, last_shadow_id = excluded.last_shadow_id,
        time_from = excluded.time_from, time_to = excluded.time_to, message_count = excluded.message_count,
        shadowed_tokens = coalesce(excluded.shadowed_tokens, checkpoints.shadowed_tokens),
        summary_tokens = coalesce(excluded.summary_tokens, checkpoints.summary_tokens),
        footer = coalesce(excluded.footer, checkpoints.footer), error = excluded.error`,
    [input.checkpointId, input.sessionId, input.engine, input.status, input.trigger ?? null, input.startSeq ?? null, input.summarySeq ?? null,
      input.replaceSeq ?? null, JSON.stringify(input.shadowedSeqs), derived.firstSeq, derived.lastSeq, derived.firstShadowId, derived.lastShadowId,
      derived.timeFrom, derived.timeTo, derived.messageCount, input.shadowedTokens ?? null, input.summaryTokens ?? null, input.footer ?? null,
      input.error ?? null, input.createdAt])
  }

  async getCheckpoint(checkpointId: string): Promise<ShadowCheckpoint | undefined> {
    const [row] = await this.query('read checkpoint', 'SELECT * FROM checkpoints WHERE checkpoint_id = $1', [checkpointId])
    return row === undefined ? undefined : toCheckpoint(row)
  }

  async listCheckpoints(sessionIds: readonly string[]): Promise<ShadowCheckpoint[]> {
    if (sessionIds.length === 0) return []
    return (await this.query('list checkpoints', 'SELECT * FROM checkpoints WHERE session_id = ANY($1::text[]) ORDER BY created_at, id', [sessionIds])).map(toCheckpoint)
  }

  async addRecall(input: RecallInput): Promise<number> {
    this.assertWritable('write recall')
    const [row] = await this.query<{ id: number }>('write recall', 'INSERT INTO recalls(session_id, seq, time, kind, query, shadow_ids, checkpoint_ids) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id',
      [input.sessionId, input.seq ?? null, input.time, input.kind, input.query ?? null, JSON.stringify(input.shadowIds), JSON.stringify(input.checkpointIds ?? [])])
    return row!.id
  }

  async listRecalls(sessionId: string): Promise<ShadowRecall[]> {
    return (await this.query('list recalls', 'SELECT * FROM recalls WHERE session_id = $1 ORDER BY time, id', [sessionId])).map(toRecall)
  }

  async searchIndex(query: IndexQuery): Promise<IndexResult> {
    return searchIndex(this.connection, query, await this.wholeStore(query), () => this.messageTotal())
  }

  /** Every light newest-first list in one statement (search.ts searchIndexes). */
  async searchIndexes(queries: readonly IndexQuery[]): Promise<IndexResult[]> {
    return searchIndexes(this.connection, queries, query => this.wholeStore(query), () => this.messageTotal())
  }

  /** The ids of newest-first lists, in one statement (search.ts listIds). */
  async listIds(queries: readonly IndexQuery[]): Promise<number[][]> {
    return listIds(this.connection, queries, query => this.wholeStore(query))
  }

  async candidateRows(ids: readonly number[]): Promise<Array<ShadowMessage | undefined>> {
    return candidateRows(this.connection, ids)
  }

  async documentFrequencies(query: FrequencyQuery): Promise<number[]> {
    return documentFrequencies(this.connection, query, query.global === true || (await this.wholeStore(query)) !== false)
  }

  async retentionUsage(): Promise<RetentionUsage[]> {
    return retentionUsage(this.connection)
  }

  async retentionCandidates(): Promise<RetentionCandidate[]> {
    return retentionCandidates(this.connection)
  }

  async expireCheckpoint(checkpointId: string, time: number): Promise<{ rows: number; bytes: number }> {
    return (await this.expireCheckpoints([checkpointId], time))[0]!
  }

  async expireCheckpoints(checkpointIds: readonly string[], time: number): Promise<Array<{ rows: number; bytes: number }>> {
    this.assertWritable('expire originals')
    return expireCheckpoints(this.connection, checkpointIds, time)
  }

  /** Drop the text indexes for a bulk import (bulk.ts); `end()` of the answer rebuilds them. */
  async beginBulkLoad(): Promise<BulkLoad> {
    this.assertWritable('bulk load')
    return BulkLoad.begin(this.connection)
  }

  async vacuum(): Promise<void> {
    this.assertWritable('vacuum')
    await vacuum(this.connection)
  }

  async reindex(analyze: (text: string, time: number) => IndexViews, version: number, progress?: (done: number, total: number) => void): Promise<number> {
    this.assertWritable('reindex')
    const done = await reindex(this.connection, analyze, progress)
    await this.setMeta('analyzer_version', String(version))
    return done
  }

  async stats(): Promise<Omit<StoreStats, 'path'>> {
    return stats(this.connection, Number((await this.meta('analyzer_version')) ?? 0))
  }

  async redactionPending(): Promise<boolean> {
    return (await this.meta(REDACT_PASS_META)) !== undefined
  }

  async markRedactionPending(restart: boolean): Promise<void> {
    await this.setMeta(REDACT_PASS_META, restart ? '0' : (await this.meta(REDACT_PASS_META)) ?? '0')
  }

  /** Every row's hash is of its stored form (PostgreSQL stores were created under that rule). */
  async rowHashesCurrent(): Promise<boolean> {
    return (await this.meta(ROW_HASH_META)) === ROW_HASH_STORED
  }

  async vacuumDue(): Promise<boolean> {
    return (await this.meta(VACUUM_DUE_META)) !== undefined
  }

  async redactStored(redaction: StoredRedaction, analyze: (text: string, time: number) => IndexViews, progress?: (done: number, total: number) => void): Promise<{ rows: number; changed: number }> {
    this.assertWritable('redact stored rows')
    return redactStored(this.connection, redaction, analyze, progress)
  }

  setWritable(writable: boolean): void {
    this.writable = writable
  }

  /** A server-side store cannot be deleted from under a connection unnoticed: a dropped table fails every statement. */
  assertInPlace(): void {}

  async integrityCheck(): Promise<string[]> {
    return integrityCheck(this.connection)
  }
}
