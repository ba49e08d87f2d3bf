/**
 * The embedded backend: one `node:sqlite` database in WAL mode with two contentless FTS5 indexes.
 * All SQL of the project lives in this folder: `writes`, `reads`, `search` (FTS5) and
 * `maintenance` hold it by concern; this class opens the file and dispatches.
 */
import type { DatabaseSync } from 'node:sqlite'
import type { ChangesRequest, CheckpointDerived, ForgetCounts, FrequencyQuery, IndexQuery, IndexResult, IndexViews, MessageFilter, MessageMark, PreparedMessage, ReadQuery, RetentionCandidate, RetentionUsage, SessionChanges, SessionLink, ShadowBackend, WideScope } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
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
import { sessionChanges } from './changes.ts'
import { SqliteConnection, sqliteError } from './connection.ts'
import { fileIdentity, prepareFile } from './file.ts'
import * as maintenance from './maintenance.ts'
import { checkSchema, migrate } from './migrate.ts'
import * as reads from './reads.ts'
import type { Row } from './rows.ts'
import { SCHEMA_VERSION } from './schema.ts'
import * as search from './search.ts'
import * as writes from './writes.ts'

export { sqliteError }

/** SQLite's result code for a lock another connection holds. */
const SQLITE_BUSY = 5
/** Pause between two tries of switching a new file to WAL (walMode). */
const WAL_RETRY_MS = 10

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

export class SqliteBackend implements ShadowBackend {
  readonly path: string
  readonly schemaVersion = SCHEMA_VERSION
  private readonly conn: SqliteConnection
  private readonly identity: string | undefined
  /** Identities of the -wal and -shm files: committed rows live in the WAL until a checkpoint. */
  private readonly companions = new Map<string, string | undefined>()

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
    if (path !== ':memory:') prepareFile(path, readOnly)
    let db: DatabaseSync
    try {
      db = new Database(path, { readOnly, enableForeignKeyConstraints: false })
    } catch (error) {
      throw sqliteError(error, `open ${path}`)
    }
    this.conn = new SqliteConnection(db, path, readOnly)
    this.identity = path === ':memory:' ? undefined : fileIdentity(path)
    try {
      const busyTimeout = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))
      db.exec(`PRAGMA busy_timeout = ${busyTimeout}`)
      if (!readOnly) {
        // A new file takes 16 KB pages: message rows of ~1 KB leave a sixth of a 4 KB page unused
        // (bench:search: 1068 vs 922 B a message). Set before the first write; WAL fixes it after.
        if ((db.prepare('PRAGMA page_count').get() as Row)['page_count'] === 0) db.exec('PRAGMA page_size = 16384')
        walMode(db, busyTimeout)
        db.exec(`PRAGMA synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`)
        if (options.maxBytes !== undefined) {
          const pageSize = (db.prepare('PRAGMA page_size').get() as Row)['page_size'] as number
          // a limit below the current size is honoured too: every later write that grows the file fails
          db.exec(`PRAGMA max_page_count = ${Math.max(1, Math.floor(options.maxBytes / pageSize))}`)
        }
        migrate(this.conn)
        // a killed rebuild's tables and triggers would slow every write: drop them
        if (maintenance.pendingRebuild(this.conn)?.alive === false) maintenance.dropRebuild(this.conn)
      } else {
        checkSchema(this.conn)
      }
    } catch (error) {
      db.close()
      throw sqliteError(error, `open ${path}`)
    }
    if (this.identity !== undefined && !readOnly) for (const suffix of ['-wal', '-shm']) this.companions.set(suffix, fileIdentity(`${path}${suffix}`))
  }

  meta(key: string): string | undefined { return this.conn.meta(key) }
  setMeta(key: string, value: string): void { this.conn.setMeta(key, value) }
  close(): void { this.conn.close() }

  upsertSession(input: ShadowSessionInput & { readonly tag: string }): void { writes.upsertSession(this.conn, input) }
  getSession(sessionId: string): ShadowSession | undefined { return reads.getSession(this.conn, sessionId) }
  getSessionByTag(tag: string): ShadowSession | undefined { return reads.getSessionByTag(this.conn, tag) }
  getSessions(sessionIds: readonly string[]): ShadowSession[] { return reads.sessionsBy(this.conn, 'session_id', sessionIds) }
  getSessionsByTags(tags: readonly string[]): ShadowSession[] { return reads.sessionsBy(this.conn, 'tag', tags) }
  addSessions(sessions: ReadonlyArray<{ readonly sessionId: string; readonly tag: string }>): void { writes.addSessions(this.conn, sessions) }
  ancestry(sessionId: string, limit: number): SessionLink[] { return reads.ancestry(this.conn, sessionId, limit) }
  listSessions(workspace?: string, limit?: number): ShadowSession[] { return reads.listSessions(this.conn, workspace, limit) }
  someSessions(scope: WideScope, limit: number): Array<Pick<ShadowSession, 'sessionId' | 'tag'>> { return reads.someSessions(this.conn, scope, limit) }

  appendMessages(rows: readonly PreparedMessage[]): AppendResult { return writes.appendMessages(this.conn, rows) }
  getMessage(sessionId: string, seq: number): ShadowMessage | undefined { return reads.getMessage(this.conn, sessionId, seq) }
  getMessages(keys: ReadonlyArray<{ readonly sessionId: string; readonly seq: number }>): Array<ShadowMessage | undefined> { return reads.getMessages(this.conn, keys) }
  readMessages(query: ReadQuery): ShadowMessage[] { return reads.readMessages(this.conn, query) }
  callRows(keys: ReadonlyArray<{ readonly sessionId: string; readonly callId: string }>): ShadowMessage[] { return reads.callRows(this.conn, keys) }
  messageTotal(): number { return reads.messageTotal(this.conn) }
  countMessages(filter: MessageFilter): number { return reads.countMessages(this.conn, filter) }
  messageHashes(sessionId: string): Array<{ seq: number; hash: string }> { return reads.messageHashes(this.conn, sessionId) }
  messageHashesFor(sessionId: string, seqs: readonly number[]): MessageMark[] { return reads.messageHashesFor(this.conn, sessionId, seqs) }
  sessionChanges(requests: readonly ChangesRequest[]): Array<SessionChanges | undefined> { return sessionChanges(this.conn, requests) }
  changeMark(): string { return this.conn.changeMark() }
  deleteMessages(sessionId: string, seqs: readonly number[]): number { return writes.deleteMessages(this.conn, sessionId, seqs) }
  markElided(sessionId: string, seqs: readonly number[], checkpointId: string): void { writes.markElided(this.conn, sessionId, seqs, checkpointId) }
  forgetSessions(sessionIds: readonly string[], options: { readonly vacuumDue?: boolean } = {}): ForgetCounts { return writes.forgetSessions(this.conn, sessionIds, options) }

  putCheckpoint(input: CheckpointInput, derived: CheckpointDerived): void { writes.putCheckpoint(this.conn, input, derived) }
  getCheckpoint(checkpointId: string): ShadowCheckpoint | undefined { return reads.getCheckpoint(this.conn, checkpointId) }
  listCheckpoints(sessionIds: readonly string[]): ShadowCheckpoint[] { return reads.listCheckpoints(this.conn, sessionIds) }
  addRecall(input: RecallInput): number { return writes.addRecall(this.conn, input) }
  listRecalls(sessionId: string): ShadowRecall[] { return reads.listRecalls(this.conn, sessionId) }

  searchIndex(query: IndexQuery): IndexResult { return search.searchIndex(this.conn, query) }
  searchIndexes(queries: readonly IndexQuery[]): IndexResult[] { return search.searchIndexes(this.conn, queries) }
  listIds(queries: readonly IndexQuery[]): number[][] { return search.listIds(this.conn, queries) }
  candidateRows(ids: readonly number[]): Array<ShadowMessage | undefined> { return search.candidateRows(this.conn, ids) }
  documentFrequencies(query: FrequencyQuery): number[] { return search.documentFrequencies(this.conn, query) }

  reindex(analyze: (text: string, time: number) => IndexViews, version: number, progress?: (done: number, total: number) => void): number {
    return maintenance.reindex(this.conn, analyze, version, progress)
  }
  redactionPending(): boolean { return maintenance.redactionPending(this.conn) }
  markRedactionPending(restart: boolean): void { maintenance.markRedactionPending(this.conn, restart) }
  rowHashesCurrent(): boolean { return maintenance.rowHashesCurrent(this.conn) }
  redactStored(redaction: maintenance.StoredRedaction, analyze: (text: string, time: number) => IndexViews, progress?: (done: number, total: number) => void): { rows: number; changed: number } {
    return maintenance.redactStored(this.conn, redaction, analyze, progress)
  }
  setWritable(writable: boolean): void { maintenance.setWritable(this.conn, writable) }
  /** Merge FTS segments (makes rare-term lookups much faster after bulk ingest). */
  optimize(): void { maintenance.optimize(this.conn) }
  stats(): Omit<StoreStats, 'path'> { return maintenance.stats(this.conn) }
  retentionUsage(): RetentionUsage[] { return maintenance.retentionUsage(this.conn) }
  retentionCandidates(): RetentionCandidate[] { return maintenance.retentionCandidates(this.conn) }
  expireCheckpoint(checkpointId: string, time: number): { rows: number; bytes: number } { return maintenance.expireCheckpoint(this.conn, checkpointId, time) }
  expireCheckpoints(checkpointIds: readonly string[], time: number): Array<{ rows: number; bytes: number }> { return maintenance.expireCheckpoints(this.conn, checkpointIds, time) }
  vacuum(): void { maintenance.vacuum(this.conn) }
  /** A vacuum is owed (text was redacted in place and may sit in free pages). */
  vacuumDue(): boolean { return maintenance.vacuumDue(this.conn) }
  integrityCheck(): string[] { return maintenance.integrityCheck(this.conn) }

  /**
   * The file, its -wal and its -shm are the ones this connection opened. SQLite keeps writing to a
   * deleted WAL through its open handle: those commits vanish at the next restart, so a deleted or
   * replaced WAL fails closed like a deleted database. (SQLite never removes the WAL while a
   * connection, this one, is open.)
   */
  assertInPlace(): void {
    if (this.identity === undefined) return
    const now = fileIdentity(this.path)
    if (now !== this.identity) {
      throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.path} was ${now === undefined ? 'deleted' : 'replaced'} while open; writes to it would be lost (restart dsh: the store is rebuilt from the dsh logs)`)
    }
    for (const [suffix, known] of this.companions) {
      const current = fileIdentity(`${this.path}${suffix}`)
      if (known === undefined) {
        this.companions.set(suffix, current)
        continue
      }
      if (current !== known) {
        throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.path}${suffix} was ${current === undefined ? 'deleted' : 'replaced'} while open; recent writes to it would be lost (restart dsh: the store is rebuilt from the dsh logs)`)
      }
    }
  }
}

/**
 * `PRAGMA journal_mode = WAL`, tried again while another connection holds the lock it needs:
 * SQLite answers SQLITE_BUSY there without waiting on the busy timeout, so six processes opening
 * one new store at once failed with "database is locked" about one run in three (tests/fresh-open).
 */
function walMode(db: DatabaseSync, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (;;) {
    try {
      db.exec('PRAGMA journal_mode = WAL')
      return
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== SQLITE_BUSY || Date.now() >= deadline) throw error
      Atomics.wait(pause, 0, 0, WAL_RETRY_MS)
    }
  }
}
