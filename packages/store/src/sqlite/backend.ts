/**
 * The embedded backend: one `node:sqlite` database in WAL mode with two contentless FTS5 indexes.
 * All SQL of the project lives in this folder.
 */
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { ftsString } from '../analyzer.ts'
import type { CheckpointDerived, FrequencyQuery, IndexQuery, IndexResult, MessageFilter, MessageMark, PreparedMessage, ReadQuery, RetentionCandidate, RetentionUsage, ShadowBackend } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
import { failpoint } from '../failpoint.ts'
import type {
  AppendResult,
  CheckpointInput,
  ShadowCheckpoint,
  ShadowMessage,
  ShadowRecall,
  ShadowSession,
  ShadowSessionInput,
  RecallInput,
  StoreStats,
} from '../types.ts'
import { MIGRATIONS, SCHEMA_VERSION } from './schema.ts'

export interface SqliteBackendOptions {
  readonly readOnly?: boolean
  /** How long a writer waits for another connection's lock, ms. Default 5000. */
  readonly busyTimeoutMs?: number
  /** `normal` survives a process crash (WAL); `full` also survives power loss. Default normal. */
  readonly synchronous?: 'normal' | 'full'
  /**
   * Ceiling on the database file, bytes. Past it every write fails with FULL, exactly as on a
   * full disk (Shadow Context then fails closed). Default: none.
   */
  readonly maxBytes?: number
}

type Row = Record<string, unknown>

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

/** Stored bytes of one message row (what retention budgets count). */
const ROW_BYTES = 'length(CAST(m.text AS BLOB)) + length(CAST(m.event_json AS BLOB))'

const MESSAGE_COLUMNS = 'm.session_id, m.seq, m.shadow_id, m.event_type, m.role, m.source_kind, m.turn, m.step, m.tool_name, m.call_id, m.time, m.tokens, m.hash, m.event_json, m.text, m.elided_by, m.expired_at'
/** The same without the event JSON, for search candidates (most are ranked and dropped). */
const CANDIDATE_COLUMNS = MESSAGE_COLUMNS.replace('m.event_json', "'' AS event_json")

function toMessage(row: Row): ShadowMessage {
  return {
    sessionId: row['session_id'] as string,
    seq: row['seq'] as number,
    shadowId: row['shadow_id'] as string,
    eventType: row['event_type'] as ShadowMessage['eventType'],
    role: row['role'] as ShadowMessage['role'],
    sourceKind: row['source_kind'] as string,
    turn: row['turn'] as number | null,
    step: row['step'] as number | null,
    toolName: row['tool_name'] as string | null,
    callId: row['call_id'] as string | null,
    time: row['time'] as number,
    tokens: row['tokens'] as number,
    hash: row['hash'] as string,
    eventJson: row['event_json'] as string,
    text: decodeText(row['text']),
    elidedBy: row['elided_by'] as string | null,
    expiredAt: row['expired_at'] as number | null,
  }
}

// Text is stored as a UTF-8 BLOB: a bound JS string is cut at its first NUL, a blob is not.
function encodeText(text: string): Uint8Array {
  return Buffer.from(text, 'utf8')
}

function decodeText(value: unknown): string {
  if (typeof value === 'string') return value
  return Buffer.from(value as Uint8Array).toString('utf8')
}

function toSession(row: Row): ShadowSession {
  return {
    sessionId: row['session_id'] as string,
    tag: row['tag'] as string,
    parentSessionId: row['parent_session_id'] as string | null,
    forkSeq: row['fork_seq'] as number | null,
    workspace: row['workspace'] as string | null,
    createdAt: row['created_at'] as number | null,
    messageCount: row['message_count'] as number,
    lastSeq: row['last_seq'] as number,
    firstTime: row['first_time'] as number | null,
    lastTime: row['last_time'] as number | null,
  }
}

function toCheckpoint(row: Row): ShadowCheckpoint {
  return {
    checkpointId: row['checkpoint_id'] as string,
    sessionId: row['session_id'] as string,
    engine: row['engine'] as string,
    status: row['status'] as ShadowCheckpoint['status'],
    trigger: row['trigger'] as string | null,
    startSeq: row['start_seq'] as number | null,
    summarySeq: row['summary_seq'] as number | null,
    replaceSeq: row['replace_seq'] as number | null,
    shadowedSeqs: JSON.parse(row['shadowed_seqs'] as string) as number[],
    firstSeq: row['first_seq'] as number | null,
    lastSeq: row['last_seq'] as number | null,
    firstShadowId: row['first_shadow_id'] as string | null,
    lastShadowId: row['last_shadow_id'] as string | null,
    timeFrom: row['time_from'] as number | null,
    timeTo: row['time_to'] as number | null,
    messageCount: row['message_count'] as number,
    shadowedTokens: row['shadowed_tokens'] as number | null,
    summaryTokens: row['summary_tokens'] as number | null,
    footer: row['footer'] as string | null,
    error: row['error'] as string | null,
    createdAt: row['created_at'] as number,
    expiredAt: row['expired_at'] as number | null,
    expiredRows: row['expired_rows'] as number,
  }
}

function toRecall(row: Row): ShadowRecall {
  return {
    recallId: row['id'] as number,
    sessionId: row['session_id'] as string,
    seq: row['seq'] as number | null,
    time: row['time'] as number,
    kind: row['kind'] as ShadowRecall['kind'],
    query: row['query'] as string | null,
    shadowIds: JSON.parse(row['shadow_ids'] as string) as string[],
    checkpointIds: JSON.parse(row['checkpoint_ids'] as string) as string[],
  }
}

/** SQL for the filter part of a message query (always against alias `m`). */
function filterSql(filter: MessageFilter, params: unknown[], wholeStore = false): string {
  const clauses: string[] = []
  if (!wholeStore) {
    const lineage: string[] = []
    const open = filter.segments.filter(segment => !Number.isFinite(segment.belowSeq)).map(segment => segment.sessionId)
    if (open.length === 1) { lineage.push('m.session_id = ?'); params.push(open[0]) }
    if (open.length > 1) { lineage.push(`m.session_id IN (${open.map(() => '?').join(', ')})`); params.push(...open) }
    for (const segment of filter.segments) {
      if (!Number.isFinite(segment.belowSeq)) continue
      params.push(segment.sessionId, segment.belowSeq)
      lineage.push('(m.session_id = ? AND m.seq < ?)')
    }
    clauses.push(lineage.length === 0 ? '0' : `(${lineage.join(' OR ')})`)
  }
  if (filter.fromSeq !== undefined) { clauses.push('m.seq >= ?'); params.push(filter.fromSeq) }
  if (filter.toSeq !== undefined) { clauses.push('m.seq <= ?'); params.push(filter.toSeq) }
  if (filter.timeFrom !== undefined) { clauses.push('m.time >= ?'); params.push(filter.timeFrom) }
  if (filter.timeTo !== undefined) { clauses.push('m.time <= ?'); params.push(filter.timeTo) }
  if (filter.roles !== undefined && filter.roles.length > 0) {
    clauses.push(`m.role IN (${filter.roles.map(() => '?').join(', ')})`)
    params.push(...filter.roles)
  }
  if (filter.toolName !== undefined) {
    // tool_name holds one name for a result, or space-separated names for an assistant's calls
    clauses.push("(m.tool_name = ? OR ' ' || m.tool_name || ' ' LIKE ? ESCAPE '\\')")
    params.push(filter.toolName, `% ${filter.toolName.replace(/[\\%_]/g, char => `\\${char}`)} %`)
  }
  // the checkpoint's originals within the scope's history: a fork's checkpoint also covers rows it
  // inherited, which carry only their owner's marks (checkpoint marks belong to who compacted)
  if (filter.elidedBy !== undefined) { clauses.push('m.seq IN (SELECT value FROM json_each((SELECT shadowed_seqs FROM checkpoints WHERE checkpoint_id = ?)))'); params.push(filter.elidedBy) }
  if (filter.excludeSourceKinds !== undefined && filter.excludeSourceKinds.length > 0) {
    clauses.push(`m.source_kind NOT IN (${filter.excludeSourceKinds.map(() => '?').join(', ')})`)
    params.push(...filter.excludeSourceKinds)
  }
  if (filter.excludeToolNames !== undefined && filter.excludeToolNames.length > 0) {
    clauses.push(`coalesce(m.tool_name, '') NOT IN (${filter.excludeToolNames.map(() => '?').join(', ')})`)
    params.push(...filter.excludeToolNames)
  }
  return clauses.length === 0 ? '1' : clauses.join(' AND ')
}

/** Only the lineage part is set: nothing but sessions restricts the rows. */
function onlySegments(filter: MessageFilter): boolean {
  return filter.fromSeq === undefined && filter.toSeq === undefined && filter.timeFrom === undefined && filter.timeTo === undefined
    && (filter.roles === undefined || filter.roles.length === 0) && filter.toolName === undefined && filter.elidedBy === undefined
    && (filter.excludeSourceKinds === undefined || filter.excludeSourceKinds.length === 0)
    && (filter.excludeToolNames === undefined || filter.excludeToolNames.length === 0)
}

/** Prepared statements kept (most recently used); preparing costs as much as running a small query. */
const STATEMENT_CACHE = 256

/** Above this many sessions a scope is filtered on the joined row, not with scope tokens in the MATCH. */
const SCOPE_TOKEN_LIMIT = 8

export class SqliteBackend implements ShadowBackend {
  readonly path: string
  readonly schemaVersion = SCHEMA_VERSION
  private readonly db: DatabaseSync
  private readonly statements = new Map<string, StatementSync>()
  private readonly readOnly: boolean
  private readonly identity: string | undefined
  private closed = false

  /**
   * Open (creating if needed) a database. `node:sqlite` is loaded here, not at import time: a
   * process whose store lives in a worker thread never loads it on its main thread (it prints an
   * ExperimentalWarning on stderr, which a headless dsh run must keep clean).
   */
  static async open(path: string, options: SqliteBackendOptions = {}): Promise<SqliteBackend> {
    const { DatabaseSync: Database } = await import('node:sqlite')
    return new SqliteBackend(path, options, Database)
  }

  private constructor(path: string, options: SqliteBackendOptions, Database: typeof DatabaseSync) {
    this.path = path
    const readOnly = options.readOnly ?? false
    this.readOnly = readOnly
    if (path !== ':memory:') prepareFile(path, readOnly)
    try {
      this.db = new Database(path, { readOnly, enableForeignKeyConstraints: false })
    } catch (error) {
      throw sqliteError(error, `open ${path}`)
    }
    this.identity = path === ':memory:' ? undefined : fileIdentity(path)
    try {
      this.db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`)
      if (!readOnly) {
        this.db.exec('PRAGMA journal_mode = WAL')
        this.db.exec(`PRAGMA synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`)
        if (options.maxBytes !== undefined) {
          const pageSize = (this.db.prepare('PRAGMA page_size').get() as Row)['page_size'] as number
          // a limit below the current size is honoured too: every later write that grows the file fails
          this.db.exec(`PRAGMA max_page_count = ${Math.max(1, Math.floor(options.maxBytes / pageSize))}`)
        }
        this.migrate()
      } else {
        this.checkSchema()
      }
    } catch (error) {
      this.db.close()
      throw sqliteError(error, `open ${path}`)
    }
  }

  private migrate(): void {
    const current = this.currentVersion()
    if (current > SCHEMA_VERSION) {
      throw new ShadowStoreError('SCHEMA_TOO_NEW', `shadow store ${this.path} has schema v${current}; this code knows v${SCHEMA_VERSION}`)
    }
    if (current === SCHEMA_VERSION) return
    this.transaction(() => {
      for (const migration of MIGRATIONS) {
        if (migration.version <= current) continue
        this.db.exec(migration.sql)
      }
      this.db.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(String(SCHEMA_VERSION))
    })
  }

  private checkSchema(): void {
    const current = this.currentVersion()
    if (current === 0) throw new ShadowStoreError('CORRUPT', `${this.path} is not a shadow store (no schema)`)
    if (current > SCHEMA_VERSION) throw new ShadowStoreError('SCHEMA_TOO_NEW', `shadow store ${this.path} has schema v${current}; this code knows v${SCHEMA_VERSION}`)
    // reads use the current columns; a read-only connection cannot add them
    if (current < SCHEMA_VERSION) throw new ShadowStoreError('SCHEMA_TOO_OLD', `shadow store ${this.path} has schema v${current}; open it writable once to upgrade it to v${SCHEMA_VERSION}`)
  }

  private currentVersion(): number {
    const hasMeta = this.db.prepare("SELECT 1 AS ok FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get()
    if (hasMeta === undefined) {
      const tables = this.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as Row
      if ((tables['n'] as number) > 0) throw new ShadowStoreError('CORRUPT', `${this.path} is a SQLite database but not a shadow store`)
      return 0
    }
    const row = this.db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as Row | undefined
    return row === undefined ? 0 : Number(row['value'])
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

  private stmt(sql: string): StatementSync {
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

  private guard<T>(action: string, run: () => T): T {
    if (this.closed) throw new ShadowStoreError('CLOSED', 'shadow store is closed')
    try {
      return run()
    } catch (error) {
      throw sqliteError(error, action)
    }
  }

  private transaction<T>(run: () => T): T {
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

  upsertSession(input: ShadowSessionInput & { readonly tag: string }): void {
    this.guard('write session', () => {
      this.stmt(`
        INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, workspace, created_at)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(session_id) DO UPDATE SET
          parent_session_id = coalesce(excluded.parent_session_id, sessions.parent_session_id),
          fork_seq = coalesce(excluded.fork_seq, sessions.fork_seq),
          workspace = coalesce(excluded.workspace, sessions.workspace),
          created_at = coalesce(sessions.created_at, excluded.created_at)
      `).run(input.sessionId, input.tag, input.parentSessionId ?? null, input.forkSeq ?? null, input.workspace ?? null, input.createdAt ?? null)
    })
  }

  getSession(sessionId: string): ShadowSession | undefined {
    return this.guard('read session', () => {
      const row = this.stmt('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as Row | undefined
      return row === undefined ? undefined : toSession(row)
    })
  }

  getSessionByTag(tag: string): ShadowSession | undefined {
    return this.guard('read session', () => {
      const row = this.stmt('SELECT * FROM sessions WHERE tag = ?').get(tag) as Row | undefined
      return row === undefined ? undefined : toSession(row)
    })
  }

  listSessions(workspace?: string): ShadowSession[] {
    return this.guard('list sessions', () => {
      const rows = workspace === undefined
        ? this.stmt('SELECT * FROM sessions ORDER BY coalesce(last_time, created_at, 0) DESC').all()
        : this.stmt('SELECT * FROM sessions WHERE workspace = ? ORDER BY coalesce(last_time, created_at, 0) DESC').all(workspace)
      return (rows as Row[]).map(toSession)
    })
  }

  appendMessages(rows: readonly PreparedMessage[]): AppendResult {
    if (rows.length === 0) return { written: 0, unchanged: 0, replaced: 0 }
    return this.guard('append messages', () => this.transaction(() => {
      let written = 0
      let unchanged = 0
      let replaced = 0
      const touched = new Map<string, { added: number; maxSeq: number; minTime: number; maxTime: number }>()
      const find = this.stmt('SELECT id, hash FROM messages WHERE session_id = ? AND seq = ?')
      const insert = this.stmt(`
        INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, turn, step, tool_name, call_id, time, tokens, hash, event_json, text)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      `)
      const update = this.stmt(`
        UPDATE messages SET event_type = ?, role = ?, source_kind = ?, turn = ?, step = ?, tool_name = ?, call_id = ?, time = ?, tokens = ?, hash = ?, event_json = ?, text = ?, elided_by = NULL, expired_at = NULL
        WHERE id = ?
      `)
      const insertWords = this.stmt('INSERT INTO messages_words(rowid, body, scope) VALUES (?, ?, ?)')
      const insertGrams = this.stmt('INSERT INTO messages_grams(rowid, body, scope) VALUES (?, ?, ?)')
      const deleteWords = this.stmt('DELETE FROM messages_words WHERE rowid = ?')
      const deleteGrams = this.stmt('DELETE FROM messages_grams WHERE rowid = ?')
      const deleteCalls = this.stmt('DELETE FROM message_calls WHERE session_id = ? AND seq = ?')
      const insertCall = this.stmt('INSERT OR IGNORE INTO message_calls(session_id, call_id, seq) VALUES (?, ?, ?)')
      for (const row of rows) {
        const existing = find.get(row.sessionId, row.seq) as Row | undefined
        const scope = `s${row.tag}`
        let id: number
        if (existing !== undefined) {
          if (existing['hash'] === row.hash) {
            unchanged += 1
            continue
          }
          id = existing['id'] as number
          update.run(row.eventType, row.role, row.sourceKind, row.turn, row.step, row.toolName, row.callId, row.time, row.tokens, row.hash, row.eventJson, encodeText(row.text), id)
          deleteWords.run(id)
          deleteGrams.run(id)
          deleteCalls.run(row.sessionId, row.seq)
          replaced += 1
        } else {
          const result = insert.run(row.sessionId, row.seq, row.shadowId, row.eventType, row.role, row.sourceKind, row.turn, row.step, row.toolName, row.callId, row.time, row.tokens, row.hash, row.eventJson, encodeText(row.text))
          id = Number(result.lastInsertRowid)
          written += 1
        }
        insertWords.run(id, row.words, scope)
        if (row.grams.length > 0) insertGrams.run(id, row.grams, scope)
        if (row.role === 'assistant' && row.callId !== null) for (const call of row.callId.split(' ')) if (call.length > 0) insertCall.run(row.sessionId, call, row.seq)
        // a kill here leaves an open transaction: SQLite must roll all of it back
        if (written + replaced === 1) failpoint('store.mid-append')
        const entry = touched.get(row.sessionId) ?? { added: 0, maxSeq: -1, minTime: Number.POSITIVE_INFINITY, maxTime: Number.NEGATIVE_INFINITY }
        if (existing === undefined) entry.added += 1
        entry.maxSeq = Math.max(entry.maxSeq, row.seq)
        entry.minTime = Math.min(entry.minTime, row.time)
        entry.maxTime = Math.max(entry.maxTime, row.time)
        touched.set(row.sessionId, entry)
      }
      const bump = this.stmt(`
        UPDATE sessions SET
          message_count = message_count + ?,
          last_seq = max(last_seq, ?),
          first_time = min(coalesce(first_time, ?), ?),
          last_time = max(coalesce(last_time, ?), ?)
        WHERE session_id = ?
      `)
      for (const [sessionId, entry] of touched) {
        bump.run(entry.added, entry.maxSeq, entry.minTime, entry.minTime, entry.maxTime, entry.maxTime, sessionId)
      }
      return { written, unchanged, replaced }
    }))
  }

  getMessage(sessionId: string, seq: number): ShadowMessage | undefined {
    return this.guard('read message', () => {
      const row = this.stmt(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = ? AND m.seq = ?`).get(sessionId, seq) as Row | undefined
      return row === undefined ? undefined : toMessage(row)
    })
  }

  readMessages(query: ReadQuery): ShadowMessage[] {
    return this.guard('read messages', () => {
      const params: unknown[] = []
      const where = filterSql(query, params)
      params.push(Math.max(0, Math.floor(query.limit)))
      // Lineage segments are disjoint seq ranges of one history, so seq orders them globally.
      const order = query.descending === true ? 'DESC' : 'ASC'
      const rows = this.stmt(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE ${where} ORDER BY m.seq ${order} LIMIT ?`).all(...params as never[]) as Row[]
      return rows.map(toMessage)
    })
  }

  callRows(keys: ReadonlyArray<{ readonly sessionId: string; readonly callId: string }>): ShadowMessage[] {
    if (keys.length === 0) return []
    return this.guard('read calls', () => {
      const out: ShadowMessage[] = []
      // one statement per chunk: index lookups per pair, well under SQLite's parameter limit
      for (let start = 0; start < keys.length; start += 400) {
        const chunk = keys.slice(start, start + 400)
        const rows = this.stmt(`
          WITH wanted(session_id, call_id) AS (VALUES ${chunk.map(() => '(?, ?)').join(', ')})
          SELECT ${CANDIDATE_COLUMNS} FROM wanted w CROSS JOIN messages m ON m.session_id = w.session_id AND m.call_id = w.call_id AND m.role = 'tool'
          UNION ALL
          SELECT ${CANDIDATE_COLUMNS} FROM wanted w CROSS JOIN message_calls c ON c.session_id = w.session_id AND c.call_id = w.call_id
            CROSS JOIN messages m ON m.session_id = c.session_id AND m.seq = c.seq
        `).all(...chunk.flatMap(key => [key.sessionId, key.callId])) as Row[]
        out.push(...rows.map(toMessage))
      }
      return out
    })
  }

  messageTotal(): number {
    return this.guard('count messages', () => (this.stmt('SELECT coalesce(sum(message_count), 0) AS n FROM sessions').get() as Row)['n'] as number)
  }

  countMessages(filter: MessageFilter): number {
    return this.guard('count messages', () => {
      if (onlySegments(filter)) {
        // sessions.message_count is kept by every write; a fork's bounded segment is an index range count.
        if (this.wholeStore(filter.segments)) return ((this.stmt('SELECT coalesce(sum(message_count), 0) AS n FROM sessions').get() as Row)['n'] as number)
        let total = 0
        for (const segment of filter.segments) {
          total += Number.isFinite(segment.belowSeq)
            ? (this.stmt('SELECT count(*) AS n FROM messages WHERE session_id = ? AND seq < ?').get(segment.sessionId, segment.belowSeq) as Row)['n'] as number
            : ((this.stmt('SELECT message_count AS n FROM sessions WHERE session_id = ?').get(segment.sessionId) as Row | undefined)?.['n'] as number | undefined) ?? 0
        }
        return total
      }
      const params: unknown[] = []
      const where = filterSql(filter, params, this.wholeStore(filter.segments))
      const row = this.stmt(`SELECT count(*) AS n FROM messages m WHERE ${where}`).get(...params as never[]) as Row
      return row['n'] as number
    })
  }

  /** The segments are every session of the store, none bounded by a fork: no session filter is needed. */
  private wholeStore(segments: MessageFilter['segments']): boolean {
    if (segments.some(segment => Number.isFinite(segment.belowSeq))) return false
    const sessions = (this.stmt('SELECT count(*) AS n FROM sessions').get() as Row)['n'] as number
    return new Set(segments.map(segment => segment.sessionId)).size >= sessions
  }

  /** The MATCH expression: scope tokens only for a small scope (bm25 walks every phrase's whole doclist). */
  private matchOf(query: { terms: readonly string[]; operator: 'and' | 'or'; segments: MessageFilter['segments'] }, whole: boolean): string {
    const terms = query.terms.map(ftsString).join(query.operator === 'and' ? ' AND ' : ' OR ')
    const tags = [...new Set(query.segments.map(segment => segment.tag))]
    if (whole || tags.length > SCOPE_TOKEN_LIMIT) return `body : (${terms})`
    return `body : (${terms}) AND scope : (${tags.map(tag => ftsString(`s${tag}`)).join(' OR ')})`
  }

  messageHashes(sessionId: string): Array<{ seq: number; hash: string }> {
    return this.guard('read hashes', () => {
      const rows = this.stmt('SELECT seq, hash FROM messages WHERE session_id = ? ORDER BY seq').all(sessionId) as Row[]
      return rows.map(row => ({ seq: row['seq'] as number, hash: row['hash'] as string }))
    })
  }

  deleteMessages(sessionId: string, seqs: readonly number[]): number {
    if (seqs.length === 0) return 0
    return this.guard('delete messages', () => this.transaction(() => {
      const find = this.stmt('SELECT id FROM messages WHERE session_id = ? AND seq = ?')
      const remove = this.stmt('DELETE FROM messages WHERE id = ?')
      const removeCalls = this.stmt('DELETE FROM message_calls WHERE session_id = ? AND seq = ?')
      const deleteWords = this.stmt('DELETE FROM messages_words WHERE rowid = ?')
      const deleteGrams = this.stmt('DELETE FROM messages_grams WHERE rowid = ?')
      let removed = 0
      for (const seq of seqs) {
        const row = find.get(sessionId, seq) as Row | undefined
        if (row === undefined) continue
        const id = row['id'] as number
        deleteWords.run(id)
        deleteGrams.run(id)
        removeCalls.run(sessionId, seq)
        remove.run(id)
        removed += 1
      }
      this.stmt(`
        UPDATE sessions SET
          message_count = (SELECT count(*) FROM messages WHERE session_id = ?1),
          last_seq = coalesce((SELECT max(seq) FROM messages WHERE session_id = ?1), -1),
          first_time = (SELECT min(time) FROM messages WHERE session_id = ?1),
          last_time = (SELECT max(time) FROM messages WHERE session_id = ?1)
        WHERE session_id = ?1
      `).run(sessionId)
      return removed
    }))
  }

  markElided(sessionId: string, seqs: readonly number[], checkpointId: string): void {
    if (seqs.length === 0) return
    this.guard('mark elided', () => this.transaction(() => {
      const mark = this.stmt('UPDATE messages SET elided_by = ? WHERE session_id = ? AND seq = ?')
      for (const seq of seqs) mark.run(checkpointId, sessionId, seq)
    }))
  }

  putCheckpoint(input: CheckpointInput, derived: CheckpointDerived): void {
    this.guard('write checkpoint', () => {
      this.stmt(`
        INSERT INTO checkpoints(checkpoint_id, session_id, engine, status, trigger, start_seq, summary_seq, replace_seq, shadowed_seqs,
          first_seq, last_seq, first_shadow_id, last_shadow_id, time_from, time_to, message_count, shadowed_tokens, summary_tokens, footer, error, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(checkpoint_id) DO UPDATE SET
          engine = excluded.engine, status = excluded.status, trigger = coalesce(excluded.trigger, checkpoints.trigger),
          start_seq = coalesce(excluded.start_seq, checkpoints.start_seq), summary_seq = coalesce(excluded.summary_seq, checkpoints.summary_seq),
          replace_seq = coalesce(excluded.replace_seq, checkpoints.replace_seq), shadowed_seqs = excluded.shadowed_seqs,
          first_seq = excluded.first_seq, last_seq = excluded.last_seq, first_shadow_id = excluded.first_shadow_id, last_shadow_id = excluded.last_shadow_id,
          time_from = excluded.time_from, time_to = excluded.time_to, message_count = excluded.message_count,
          shadowed_tokens = coalesce(excluded.shadowed_tokens, checkpoints.shadowed_tokens),
          summary_tokens = coalesce(excluded.summary_tokens, checkpoints.summary_tokens),
          footer = coalesce(excluded.footer, checkpoints.footer), error = excluded.error
      `).run(
        input.checkpointId, input.sessionId, input.engine, input.status, input.trigger ?? null, input.startSeq ?? null, input.summarySeq ?? null,
        input.replaceSeq ?? null, JSON.stringify(input.shadowedSeqs), derived.firstSeq, derived.lastSeq, derived.firstShadowId, derived.lastShadowId,
        derived.timeFrom, derived.timeTo, derived.messageCount, input.shadowedTokens ?? null, input.summaryTokens ?? null, input.footer ?? null,
        input.error ?? null, input.createdAt,
      )
    })
  }

  getCheckpoint(checkpointId: string): ShadowCheckpoint | undefined {
    return this.guard('read checkpoint', () => {
      const row = this.stmt('SELECT * FROM checkpoints WHERE checkpoint_id = ?').get(checkpointId) as Row | undefined
      return row === undefined ? undefined : toCheckpoint(row)
    })
  }

  listCheckpoints(sessionIds: readonly string[]): ShadowCheckpoint[] {
    if (sessionIds.length === 0) return []
    return this.guard('list checkpoints', () => {
      const rows = this.db.prepare(`SELECT * FROM checkpoints WHERE session_id IN (${sessionIds.map(() => '?').join(', ')}) ORDER BY created_at, rowid`).all(...sessionIds) as Row[]
      return rows.map(toCheckpoint)
    })
  }

  addRecall(input: RecallInput): number {
    return this.guard('write recall', () => {
      const result = this.stmt('INSERT INTO recalls(session_id, seq, time, kind, query, shadow_ids, checkpoint_ids) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(input.sessionId, input.seq ?? null, input.time, input.kind, input.query ?? null, JSON.stringify(input.shadowIds), JSON.stringify(input.checkpointIds ?? []))
      return Number(result.lastInsertRowid)
    })
  }

  listRecalls(sessionId: string): ShadowRecall[] {
    return this.guard('list recalls', () => (this.stmt('SELECT * FROM recalls WHERE session_id = ? ORDER BY time, id').all(sessionId) as Row[]).map(toRecall))
  }

  searchIndex(query: IndexQuery): IndexResult {
    if (query.terms.length === 0 || query.segments.length === 0) return { hits: [], windowed: false }
    return this.guard('search', () => {
      const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
      const whole = this.wholeStore(query.segments)
      const match = this.matchOf(query, whole)
      const params: unknown[] = [match]
      const where = filterSql(query, params, whole)
      const limit = Math.max(1, Math.floor(query.limit))
      if (query.order === 'newest') {
        // FTS5 yields rowids newest first; the join stops after `limit` rows pass the filter. No bm25.
        params.push(limit)
        const rows = this.stmt(`
          SELECT ${query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS} FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid
          WHERE ${table} MATCH ? AND ${where} ORDER BY f.rowid DESC LIMIT ?
        `).all(...params as never[]) as Row[]
        return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
      }
      // FTS5 computes bm25 for every match before sorting; bound that work to the newest matches.
      let floor = 0
      // The window is counted on the MATCH alone: only sound when the MATCH itself is scoped (or the
      // scope is the whole store). Wide scopes rank every match; their rank lists hold rare words only.
      const scopedMatch = whole || new Set(query.segments.map(segment => segment.tag)).size <= SCOPE_TOKEN_LIMIT
      if (Number.isFinite(query.rankWindow) && scopedMatch) {
        const nth = this.stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`)
          .get(match, Math.max(0, Math.floor(query.rankWindow) - 1)) as Row | undefined
        if (nth !== undefined) floor = nth['rowid'] as number
      }
      params.splice(1, 0, floor)
      params.push(limit)
      // Rank ids first (no wide columns through the sorter), then read the winners. The join is only
      // there for the filter; CROSS JOIN keeps the full-text index the outer loop.
      const inner = where === '1'
        ? `SELECT f.rowid AS id, bm25(${table}, 1.0, 0.0) AS score FROM ${table} f WHERE ${table} MATCH ? AND f.rowid >= ? ORDER BY score LIMIT ?`
        : `SELECT f.rowid AS id, bm25(${table}, 1.0, 0.0) AS score FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid WHERE ${table} MATCH ? AND f.rowid >= ? AND ${where} ORDER BY score LIMIT ?`
      const rows = this.stmt(`SELECT ${query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS}, r.score AS score FROM (${inner}) r CROSS JOIN messages m ON m.id = r.id ORDER BY r.score`).all(...params as never[]) as Row[]
      return { hits: rows.map(row => ({ message: toMessage(row), score: -(row['score'] as number) })), windowed: floor > 0 }
    })
  }

  documentFrequencies(query: FrequencyQuery): number[] {
    if (query.segments.length === 0) return query.terms.map(() => 0)
    return this.guard('count terms', () => {
      const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
      const whole = query.global === true || this.wholeStore(query.segments)
      const count = this.stmt(`SELECT count(*) AS n FROM (SELECT rowid FROM ${table} WHERE ${table} MATCH ? LIMIT ?)`)
      return query.terms.map(term => (count.get(this.matchOf({ terms: [term], operator: 'or', segments: query.segments }, whole), Math.max(1, Math.floor(query.cap))) as Row)['n'] as number)
    })
  }

  reindex(analyze: (text: string) => { words: string; grams: string }, version: number, progress?: (done: number, total: number) => void): number {
    return this.guard('reindex', () => {
      const total = (this.db.prepare('SELECT count(*) AS n FROM messages').get() as Row)['n'] as number
      this.transaction(() => {
        this.db.exec("DELETE FROM messages_words; DELETE FROM messages_grams;")
      })
      const insertWords = this.stmt('INSERT INTO messages_words(rowid, body, scope) VALUES (?, ?, ?)')
      const insertGrams = this.stmt('INSERT INTO messages_grams(rowid, body, scope) VALUES (?, ?, ?)')
      const page = this.db.prepare('SELECT m.id, m.text, s.tag FROM messages m JOIN sessions s ON s.session_id = m.session_id WHERE m.id > ? ORDER BY m.id LIMIT 2000')
      let done = 0
      let after = 0
      for (;;) {
        const rows = page.all(after) as Row[]
        if (rows.length === 0) break
        this.transaction(() => {
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
      this.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
      this.setMeta('analyzer_version', String(version))
      return done
    })
  }

  setWritable(writable: boolean): void {
    this.guard('set writable', () => {
      this.db.exec(`PRAGMA query_only = ${writable ? 'OFF' : 'ON'}`)
    })
  }

  /** Merge FTS segments (makes rare-term lookups much faster after bulk ingest). */
  optimize(): void {
    this.guard('optimize', () => {
      this.db.exec("INSERT INTO messages_words(messages_words) VALUES ('optimize'); INSERT INTO messages_grams(messages_grams) VALUES ('optimize');")
    })
  }

  stats(): Omit<StoreStats, 'path'> {
    return this.guard('stats', () => {
      const count = (sql: string): number => ((this.db.prepare(sql).get() as Row)['n'] as number) ?? 0
      const pageSize = (this.db.prepare('PRAGMA page_size').get() as Row)['page_size'] as number
      const pageCount = (this.db.prepare('PRAGMA page_count').get() as Row)['page_count'] as number
      return {
        schemaVersion: SCHEMA_VERSION,
        analyzerVersion: Number(this.meta('analyzer_version') ?? 0),
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

  retentionUsage(): RetentionUsage[] {
    return this.guard('measure retention', () => (this.db.prepare(`
      SELECT s.session_id, s.workspace, coalesce(sum(${ROW_BYTES}), 0) AS bytes
      FROM sessions s LEFT JOIN messages m ON m.session_id = s.session_id AND m.expired_at IS NULL
      GROUP BY s.session_id
    `).all() as Row[]).map(row => ({ sessionId: row['session_id'] as string, workspace: row['workspace'] as string | null, bytes: row['bytes'] as number })))
  }

  retentionCandidates(): RetentionCandidate[] {
    return this.guard('list retention candidates', () => (this.db.prepare(`
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

  expireCheckpoint(checkpointId: string, time: number): { rows: number; bytes: number } {
    return this.guard('expire originals', () => this.transaction(() => {
      const rows = this.stmt(`SELECT m.id, ${ROW_BYTES} AS bytes FROM messages m WHERE m.elided_by = ? AND m.expired_at IS NULL`).all(checkpointId) as Row[]
      const clear = this.stmt("UPDATE messages SET text = X'', event_json = '', expired_at = ? WHERE id = ?")
      const deleteWords = this.stmt('DELETE FROM messages_words WHERE rowid = ?')
      const deleteGrams = this.stmt('DELETE FROM messages_grams WHERE rowid = ?')
      let bytes = 0
      for (const row of rows) {
        clear.run(time, row['id'] as number)
        deleteWords.run(row['id'] as number)
        deleteGrams.run(row['id'] as number)
        bytes += row['bytes'] as number
      }
      if (rows.length > 0) {
        this.stmt('UPDATE checkpoints SET expired_at = coalesce(expired_at, ?), expired_rows = expired_rows + ? WHERE checkpoint_id = ?').run(time, rows.length, checkpointId)
      }
      return { rows: rows.length, bytes }
    }))
  }

  vacuum(): void {
    this.guard('vacuum', () => {
      this.db.exec('VACUUM')
    })
  }

  assertInPlace(): void {
    if (this.identity === undefined) return
    const now = fileIdentity(this.path)
    if (now !== this.identity) {
      throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.path} was ${now === undefined ? 'deleted' : 'replaced'} while open; writes to it would be lost (restart dsh: the store is rebuilt from the dsh logs)`)
    }
  }

  integrityCheck(): string[] {
    return this.guard('integrity check', () => {
      const problems: string[] = []
      for (const row of this.db.prepare('PRAGMA quick_check').all() as Row[]) {
        const value = String(Object.values(row)[0])
        if (value !== 'ok') problems.push(value)
      }
      // FTS5's integrity check is issued as a write statement; a read-only connection skips it.
      for (const table of this.readOnly ? [] : ['messages_words', 'messages_grams']) {
        try {
          this.db.exec(`INSERT INTO ${table}(${table}, rank) VALUES ('integrity-check', 0)`)
        } catch (error) {
          problems.push(`${table}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
      return problems
    })
  }

  messageHashesFor(sessionId: string, seqs: readonly number[]): MessageMark[] {
    if (seqs.length === 0) return []
    return this.guard('read hashes', () => {
      // one indexed lookup per seq, without the row's text or event JSON
      const find = this.stmt('SELECT seq, hash, elided_by, expired_at FROM messages WHERE session_id = ? AND seq = ?')
      const marks: MessageMark[] = []
      for (const seq of seqs) {
        const row = find.get(sessionId, seq) as Row | undefined
        if (row !== undefined) marks.push({ seq: row['seq'] as number, hash: row['hash'] as string, elidedBy: row['elided_by'] as string | null, expiredAt: row['expired_at'] as number | null })
      }
      return marks
    })
  }
}

/** Create the folder (0700) and file (0600) before SQLite does, so the WAL and SHM inherit 0600. */
/** Device and inode of a file, or undefined when it does not exist. */
function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path)
    return `${stat.dev}:${stat.ino}`
  } catch {
    return undefined
  }
}

function prepareFile(path: string, readOnly: boolean): void {
  if (readOnly) {
    if (!existsSync(path)) throw new ShadowStoreError('NOT_FOUND', `shadow store ${path} does not exist`)
    return
  }
  const folder = dirname(path)
  if (!existsSync(folder)) mkdirSync(folder, { recursive: true, mode: 0o700 })
  try {
    if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600))
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
  } catch (error) {
    throw new ShadowStoreError('UNAVAILABLE', `cannot create shadow store ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
  // SQLite would quietly open a read-only file read-only and fail every later write; say it now,
  // so the caller keeps retrying the open and picks the file up once it is writable again.
  for (const target of [path, folder]) {
    try {
      accessSync(target, constants.W_OK)
    } catch (error) {
      throw new ShadowStoreError('UNAVAILABLE', `shadow store ${path} is read-only (${target === path ? 'file' : 'folder'}: ${error instanceof Error ? error.message : String(error)})`, { cause: error })
    }
  }
}
