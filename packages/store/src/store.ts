/**
 * ShadowStore: the domain API over a backend, a thin facade. Sessions, ids and checkpoints are
 * here; scope and lineage in `scope`, row preparation in `messages`, capture batches in `ingest`,
 * search in `search/`, retention in `maintenance`. Usable as a plain library:
 * `const store = await ShadowStore.open(path)`.
 */
import { ANALYZER_VERSION } from './analyzer.ts'
import type { Awaitable, PreparedMessage, ShadowBackend } from './backend.ts'
import { invalid, isShadowStoreError, ShadowStoreError } from './errors.ts'
import { forgetSession, type ForgetOptions, type ForgetReport } from './forget.ts'
import { parseShadowId, shadowId, tagCandidates } from './ids.ts'
import { applyIngest, type IngestOp, type IngestReport } from './ingest.ts'
import { applyRetention } from './maintenance.ts'
import { checkMessage, hashEventJson, messageViews, prepareMessage, redactEventJson, rowHash } from './messages.ts'
import { Redactor, type RedactionOptions } from './redact.ts'
import { viewElision } from './elision-view.ts'
import { extent } from './extent.ts'
import { checkpointScope, lineage, lookupAllInLineage, lookupInLineage, marksInLineage, messageFilter, scopeAndLineage, scopeBounds, scopeSegments, type ReadOptions, type ScopeOptions } from './scope.ts'
import { search } from './search/search.ts'
import { deepLineage } from './filter.ts'
import { SessionIndexRegistry, type ResidentOptions } from './resident/registry.ts'
import type { SearchOptions, SearchResult } from './search/types.ts'
import { isPostgresLocation, locationProblem, type PostgresBackendOptions } from './postgres/connection.ts'
import { PostgresBackend } from './postgres/backend.ts'
import { SqliteBackend, type SqliteBackendOptions } from './sqlite/backend.ts'
import type {
  AppendResult,
  CheckpointInput,
  LineageSegment,
  RecallInput,
  ReconcileReport,
  RetentionPolicy,
  RetentionReport,
  ShadowCheckpoint,
  ShadowMessage,
  ShadowMessageInput,
  ShadowRecall,
  ShadowSession,
  ShadowSessionInput,
  StoreStats,
} from './types.ts'
import { assertArray, assertOptionalInt, assertOptionalSeq, assertSeq, assertString, assertTime, columnText, MAX_WORKSPACE_CHARS, optionalColumnText, optionalId } from './validate.ts'

export { hashEventJson, redactEventJson, rowHash }
export type { ForgetOptions, ForgetReport, IngestOp, IngestReport, ReadOptions, ScopeOptions }
export type { SearchHit, SearchOptions, SearchResult } from './search/types.ts'

export interface ShadowStoreOptions extends SqliteBackendOptions, PostgresBackendOptions {
  /**
   * Redact secrets from stored text and event JSON (and so from the search index). The policy is
   * kept in the store: later opens without this option (the CLI's repair, another process) apply
   * it too; `false` turns it off. Default: whatever the store was last opened with (off if never).
   */
  readonly redact?: RedactionOptions | false
  /**
   * Progress of the long work an open may do: redacting the stored rows when redaction was turned
   * on (or its patterns changed), rebuilding the index for a new analyzer.
   */
  readonly onProgress?: (task: 'redact' | 'reindex', done: number, total: number) => void
  /**
   * Resident search (resident/): a lineage scope (a session and its fork ancestors, the recall
   * tools' default) is searched in memory, every match ranked. `maxBytes` bounds the memory (default
   * 256 MiB, least recently searched sessions leave first; 0 turns it off), `maxMessages` the scope
   * (default 200,000 messages; larger ones read the index lists). `false`: off.
   */
  readonly resident?: ResidentOptions | false
}

/** Where a store keeps its redaction policy, so every writer applies the same one. */
const REDACT_META = 'redact'
/**
 * What a redaction of stored rows takes out, as a number: 2 also takes a secret out of the event
 * JSON when its name and value sit in two content blocks (redactEventJson); 3 a `name: value`
 * whose quotes are escaped (JSON inside a JSON string: a tool call writing a config file); 4 an
 * env-style name ending in a secret word (`DB_PASSWORD=…`, `jwtSecret: "…"`: redact-names.ts).
 */
const REDACTION_VERSION = 4
const REDACTION_VERSION_META = 'redaction_version'

/** Resident search limits, checked (off: maxBytes 0). */
function residentOptions(given: ResidentOptions | false | undefined): ResidentOptions {
  if (given === undefined) return {}
  if (given === false) return { maxBytes: 0 }
  if (typeof given !== 'object' || given === null) throw invalid('resident must be an object or false')
  for (const name of ['maxBytes', 'maxMessages'] as const) {
    const value = given[name]
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) throw invalid(`resident.${name} must be a non-negative integer`)
  }
  return given
}

function savedRedactor(saved: string | undefined): Redactor | undefined {
  if (saved === undefined || saved === 'off') return undefined
  try {
    return new Redactor(JSON.parse(saved) as RedactionOptions)
  } catch (error) {
    throw new ShadowStoreError('CORRUPT', `the store's saved redaction policy is unreadable: ${error instanceof Error ? error.message : String(error)}`)
  }
}

export class ShadowStore {
  readonly backend: ShadowBackend
  private readonly tags = new Map<string, string>()
  /** Tags handed out by this store object, so two new sessions of one batch never share one. */
  private readonly tagHolders = new Map<string, string>()
  private readonly redactor: Redactor | undefined
  private readonly policy: RedactionOptions | null
  private readonly resident: SessionIndexRegistry

  constructor(backend: ShadowBackend, options: Pick<ShadowStoreOptions, 'redact' | 'resident'> & { readonly redactor?: Redactor } = {}) {
    this.backend = backend
    this.resident = new SessionIndexRegistry(residentOptions(options.resident))
    this.redactor = options.redactor ?? (options.redact === undefined || options.redact === false ? undefined : new Redactor(options.redact))
    this.policy = this.redactor?.options ?? null
  }

  /** The redaction policy this store applies (null: off). A verifier redacts log events alike. */
  redactionPolicy(): RedactionOptions | null {
    return this.policy
  }

  /** `redactionPolicy` through any store API (the worker client too): readers redact queries alike. */
  async redactionPolicyOf(): Promise<RedactionOptions | null> {
    return this.policy
  }

  /** The hash a row of this log event has in this store (see `rowHash`). */
  hashOf(eventJson: string): string {
    return rowHash(eventJson, this.redactor)
  }

  /** `hashOf` for many events, through any store API (the worker client too). */
  async hashesOf(eventJsons: readonly string[]): Promise<string[]> {
    return eventJsons.map(json => this.hashOf(json))
  }

  /**
   * Open (creating if needed) a shadow store: a SQLite file at `path`, or a PostgreSQL store when
   * `path` is a `postgres://` (or `postgresql://`) connection string.
   */
  static async open(path: string, options: ShadowStoreOptions = {}): Promise<ShadowStore> {
    assertString(path, 'store path', 4096)
    const problem = locationProblem(path)
    if (problem !== undefined) throw invalid(`the shadow store location ${problem}`)
    // bad redaction patterns and resident limits fail before any file is touched
    residentOptions(options.resident)
    const given = options.redact === undefined || options.redact === false ? undefined : new Redactor(options.redact)
    const backend: ShadowBackend = isPostgresLocation(path) ? await PostgresBackend.open(path, options) : await SqliteBackend.open(path, options)
    try {
      let redactor = given
      if (options.redact === undefined) {
        redactor = savedRedactor(await backend.meta(REDACT_META))
      } else if (options.readOnly !== true) {
        // write only a change: an open must not need the write lock another process may hold
        const policy = options.redact === false ? 'off' : JSON.stringify(options.redact)
        if (((await backend.meta(REDACT_META)) ?? 'off') !== policy) {
          // rows stored under the old policy are redacted now (pass marked before the policy, so a
          // kill between the two still leaves it due)
          // from the first row: an interrupted pass's rows were redacted under the old policy only
          if (given !== undefined) await backend.markRedactionPending(true)
          await backend.setMeta(REDACT_META, policy)
        }
      }
      const store = new ShadowStore(backend, { ...(redactor === undefined ? {} : { redactor }), ...(options.resident === undefined ? {} : { resident: options.resident }) })
      if (options.readOnly !== true) {
        // a redacting store from before row hashes were of the stored form: one pass rehashes it
        // (the old hash of the unredacted event is what a dictionary attack needs)
        if (redactor !== undefined && !(await backend.rowHashesCurrent())) await backend.markRedactionPending(false)
        // rows a redacting store kept before its redaction took what it does now (REDACTION_VERSION):
        // one pass redacts them again (marked before the version, so a kill between leaves it due)
        if (redactor !== undefined && (await backend.meta(REDACTION_VERSION_META)) !== String(REDACTION_VERSION)) {
          await backend.markRedactionPending(true)
          await backend.setMeta(REDACTION_VERSION_META, String(REDACTION_VERSION))
        }
        if (redactor !== undefined && (await backend.redactionPending())) await store.redactStored((done, total) => options.onProgress?.('redact', done, total))
        if (await backend.vacuumDue()) {
          try {
            await backend.vacuum()
          } catch {
            // still owed: integrityCheck says so, the next open tries again
          }
        }
        if ((await backend.meta('analyzer_version')) !== String(ANALYZER_VERSION)) {
          await backend.reindex(messageViews, ANALYZER_VERSION, (done, total) => options.onProgress?.('reindex', done, total))
        }
      }
      return store
    } catch (error) {
      await backend.close()
      throw error
    }
  }

  get path(): string {
    return this.backend.path
  }

  async close(): Promise<void> {
    await this.backend.close()
  }

  // ---- sessions -------------------------------------------------------------------------------

  async registerSession(input: ShadowSessionInput): Promise<ShadowSession> {
    const sessionId = assertString(input?.sessionId, 'sessionId')
    const parentSessionId = input.parentSessionId === undefined || input.parentSessionId === null ? null : assertString(input.parentSessionId, 'parentSessionId')
    if (parentSessionId === sessionId) throw invalid('a session cannot be its own parent')
    const forkSeq = assertOptionalInt(input.forkSeq, 'forkSeq')
    if (forkSeq !== null && forkSeq < 0) throw invalid('forkSeq must be non-negative')
    const workspace = optionalId(input.workspace, 'workspace', MAX_WORKSPACE_CHARS)
    const createdAt = assertOptionalInt(input.createdAt, 'createdAt')
    const tag = await this.ensureTag(sessionId)
    // a scope boundary: refused, never merged into another workspace (SQLite read a NUL as its end)
    await this.forgettingTagsOnConflict([sessionId], () => this.backend.upsertSession({ sessionId, tag, parentSessionId, forkSeq, workspace, createdAt }))
    return (await this.backend.getSession(sessionId))!
  }

  async session(sessionId: string): Promise<ShadowSession | undefined> {
    return this.backend.getSession(assertString(sessionId, 'sessionId'))
  }

  /** Newest first; `limit`: only that many (the newest session, without every session's row built). */
  async sessions(workspace?: string, options: { readonly limit?: number } = {}): Promise<ShadowSession[]> {
    const limit = options.limit
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw invalid('limit must be a positive integer')
    return this.backend.listSessions(workspace === undefined ? undefined : assertString(workspace, 'workspace', MAX_WORKSPACE_CHARS), limit)
  }

  /** The session and its fork ancestors, each with the seq bound below which its rows are visible. */
  async lineage(sessionId: string): Promise<LineageSegment[]> {
    return lineage(this.backend, sessionId)
  }

  private async ensureTag(sessionId: string): Promise<string> {
    const cached = this.tags.get(sessionId)
    if (cached !== undefined) return cached
    const existing = await this.backend.getSession(sessionId)
    if (existing !== undefined) {
      this.tags.set(sessionId, existing.tag)
      return existing.tag
    }
    // a collision takes the next longer prefix of the session's own digest (see ids.ts)
    for (const tag of tagCandidates(sessionId)) {
      const reserved = this.tagHolders.get(tag)
      if (reserved !== undefined && reserved !== sessionId) continue
      const holder = await this.backend.getSessionByTag(tag)
      if (holder !== undefined && holder.sessionId !== sessionId) continue
      this.tags.set(sessionId, tag)
      this.tagHolders.set(tag, sessionId)
      return tag
    }
    throw new ShadowStoreError('CONFLICT', `every tag of session ${sessionId} is already used by another session`)
  }

  // ---- messages -------------------------------------------------------------------------------

  /**
   * Write messages idempotently: a row that exists with the same content is left alone, one with
   * different content is replaced (the log is the authority). Sessions are registered on the fly.
   * All rows are validated before anything is written.
   */
  async append(rows: readonly ShadowMessageInput[]): Promise<AppendResult> {
    if (!Array.isArray(rows)) throw invalid('append takes an array of messages')
    // every row checked before the store is asked anything
    const checked = rows.map(checkMessage)
    const sessionIds = [...new Set(checked.map(fields => fields.sessionId))]
    const { tags, absent } = sessionIds.length === 0 ? { tags: new Map<string, string>(), absent: [] } : await this.resolveTags(sessionIds)
    const prepared: PreparedMessage[] = rows.map((row, at) => prepareMessage(row, checked[at]!, tags.get(checked[at]!.sessionId)!, this.redactor))
    if (absent.length > 0) await this.forgettingTagsOnConflict(absent, () => this.backend.addSessions(absent.map(sessionId => ({ sessionId, tag: tags.get(sessionId)! }))))
    return this.backend.appendMessages(prepared)
  }

  /**
   * A CONFLICT (another writer took a tag this store chose, or registered the session under another)
   * forgets these sessions' chosen tags, so the retry the error asks for looks again: a cached tag
   * was tried again by every later write of the session, each refused the same way.
   */
  private async forgettingTagsOnConflict<T>(sessionIds: readonly string[], write: () => Awaitable<T>): Promise<T> {
    try {
      return await write()
    } catch (error) {
      if (isShadowStoreError(error, 'CONFLICT')) {
        for (const sessionId of sessionIds) {
          const tag = this.tags.get(sessionId)
          this.tags.delete(sessionId)
          if (tag !== undefined && this.tagHolders.get(tag) === sessionId) this.tagHolders.delete(tag)
        }
      }
      throw error
    }
  }

  /**
   * Each session's tag, and which sessions are not stored yet: one read of the sessions and one of
   * new sessions' first tags, whatever their number (an append spanning 2,000 new sessions made
   * three round trips per session, 3.4 s on PostgreSQL). A tag another session holds sends that
   * session the long way (ensureTag: the next longer prefixes, one lookup each).
   */
  private async resolveTags(sessionIds: readonly string[]): Promise<{ tags: Map<string, string>; absent: string[] }> {
    const tags = new Map<string, string>()
    // the stored tag wins over a cached one: another writer may have registered the session
    for (const session of await this.backend.getSessions(sessionIds)) {
      this.tags.set(session.sessionId, session.tag)
      tags.set(session.sessionId, session.tag)
    }
    const absent = sessionIds.filter(sessionId => !tags.has(sessionId))
    const fresh = absent.filter(sessionId => !this.tags.has(sessionId))
    const firsts = fresh.map(sessionId => tagCandidates(sessionId)[0]!)
    const holders = new Map(firsts.length === 0 ? [] : (await this.backend.getSessionsByTags(firsts)).map(session => [session.tag, session.sessionId]))
    for (const [index, sessionId] of fresh.entries()) {
      const tag = firsts[index]!
      const holder = this.tagHolders.get(tag) ?? holders.get(tag)
      if (holder === undefined || holder === sessionId) {
        this.tags.set(sessionId, tag)
        this.tagHolders.set(tag, sessionId)
      } else {
        await this.ensureTag(sessionId)
      }
    }
    for (const sessionId of absent) tags.set(sessionId, this.tags.get(sessionId)!)
    return { tags, absent }
  }

  /** Apply a capture batch in order (what the capture plugin sends). */
  async ingest(ops: readonly IngestOp[]): Promise<IngestReport> {
    return applyIngest(this, ops)
  }

  /**
   * Which of these (seq, hash) pairs of a session's visible history are not durably stored as
   * given: the write-ahead check before anything leaves the surface. A row retention emptied counts
   * as missing, unless `allowExpired` (verification: the row is accounted for, by policy).
   */
  async confirm(sessionId: string, entries: ReadonlyArray<{ seq: number; hash: string }>, options: { readonly allowExpired?: boolean } = {}): Promise<{ missing: number[]; mismatched: number[] }> {
    // rows in a deleted file are not durable, however present they look through the old handle
    await this.backend.assertInPlace()
    const segments = await this.lineage(assertString(sessionId, 'sessionId'))
    // only seq, hash and marks are read: the check's cost does not grow with the rows' text
    const rows = await marksInLineage(this.backend, segments, assertArray(entries, 'entries').map(entry => assertSeq((entry as { seq?: unknown } | null)?.seq, 'seq')))
    const missing: number[] = []
    const mismatched: number[] = []
    for (const entry of entries) {
      const row = rows.get(entry.seq)
      // a row retention emptied keeps its hash, but its original is no longer here
      if (row === undefined || (row.expiredAt !== null && options.allowExpired !== true)) missing.push(entry.seq)
      else if (row.hash !== entry.hash) mismatched.push(entry.seq)
    }
    return { missing, mismatched }
  }

  /** One message by shadow id, or undefined when it does not exist. */
  async message(id: string): Promise<ShadowMessage | undefined> {
    const { tag, seq } = parseShadowId(id)
    const session = await this.backend.getSessionByTag(tag)
    if (session === undefined) return undefined
    return this.backend.getMessage(session.sessionId, seq)
  }

  /**
   * The assistant message that called the tool whose result `result` is (same session, its call
   * id), without event JSON; undefined for other rows or when the call is not stored.
   */
  async callOf(result: Pick<ShadowMessage, 'sessionId' | 'role' | 'callId' | 'seq'>): Promise<ShadowMessage | undefined> {
    if (result.role !== 'tool' || result.callId === null || result.callId.includes(' ')) return undefined
    const rows = await this.backend.callRows([{ sessionId: assertString(result.sessionId, 'sessionId'), callId: result.callId }])
    return rows.filter(row => row.role === 'assistant' && row.seq < result.seq).toSorted((a, b) => b.seq - a.seq)[0]
  }

  async messageAt(sessionId: string, seq: number): Promise<ShadowMessage | undefined> {
    return this.backend.getMessage(assertString(sessionId, 'sessionId'), assertSeq(seq, 'seq'))
  }

  /** Resolve which session's history the scope covers, as lineage segments (a wide scope lists every session it holds). */
  async scopeSegments(scope: ScopeOptions): Promise<LineageSegment[]> {
    return scopeSegments(this.backend, scope)
  }

  /** Messages of a session's visible history (its own rows and its ancestors' below each fork). */
  async read(scope: ScopeOptions, options: ReadOptions = {}): Promise<ShadowMessage[]> {
    // the lineage read once: it bounds the scope and views the rows' elision (a deep chain's is 20k sessions)
    const scoped = await scopeAndLineage(this.backend, scope)
    const rows = await checkpointScope(this.backend, scoped, options.elidedBy)
    const limit = options.limit ?? 200
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) throw invalid('limit must be an integer from 1 to 100000')
    const found = await this.backend.readMessages({ ...messageFilter(rows, options), limit, ...(options.descending === undefined ? {} : { descending: options.descending }) })
    return viewElision(this.backend, scoped.lineage, found)
  }

  async count(scope: ScopeOptions, options: ReadOptions = {}): Promise<number> {
    return this.backend.countMessages(messageFilter(await checkpointScope(this.backend, await scopeAndLineage(this.backend, scope), options.elidedBy), options))
  }

  /**
   * Per session id, the seq below which the scope sees its rows (null: outside it), and whether
   * the scope holds no session: a row or checkpoint checked against a scope without listing a
   * workspace of many sessions (what `scopeSegments` does).
   */
  async scopeBounds(scope: ScopeOptions, sessionIds: readonly string[]): Promise<{ empty: boolean; bounds: Array<number | null> }> {
    return scopeBounds(this.backend, scope, assertArray(sessionIds, 'sessionIds') as string[])
  }

  /** (seq, hash) of every row stored for a session itself (not its ancestors). */
  async hashes(sessionId: string): Promise<Array<{ seq: number; hash: string }>> {
    return this.backend.messageHashes(assertString(sessionId, 'sessionId'))
  }

  /** Compare a session's own rows with an authoritative (seq, hash) list; writes nothing. */
  async reconcile(sessionId: string, authority: ReadonlyArray<{ seq: number; hash: string }>): Promise<ReconcileReport> {
    for (const entry of assertArray(authority, 'authority')) {
      const given = entry as { seq?: unknown; hash?: unknown } | null
      assertSeq(given?.seq, 'seq')
      if (typeof given?.hash !== 'string') throw invalid('hash must be a string')
    }
    const stored = await this.hashes(sessionId)
    const storedBySeq = new Map<number, string>()
    let duplicated = 0
    for (const row of stored) {
      if (storedBySeq.has(row.seq)) duplicated += 1
      storedBySeq.set(row.seq, row.hash)
    }
    const missing: number[] = []
    const mismatched: number[] = []
    const wanted = new Set<number>()
    for (const entry of authority) {
      wanted.add(entry.seq)
      const hash = storedBySeq.get(entry.seq)
      if (hash === undefined) missing.push(entry.seq)
      else if (hash !== entry.hash) mismatched.push(entry.seq)
    }
    const extra = [...storedBySeq.keys()].filter(seq => !wanted.has(seq))
    return { missing, mismatched, extra, duplicated }
  }

  async remove(sessionId: string, seqs: readonly number[]): Promise<number> {
    return this.backend.deleteMessages(assertString(sessionId, 'sessionId'), assertArray(seqs, 'seqs').map(seq => assertSeq(seq, 'seq')))
  }

  async markElided(sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
    await this.backend.markElided(assertString(sessionId, 'sessionId'), assertArray(seqs, 'seqs').map(seq => assertSeq(seq, 'seq')), assertString(checkpointId, 'checkpointId'))
  }

  // ---- checkpoints and recalls -------------------------------------------------------------------

  /**
   * Record (or update) a checkpoint. Time range, counts and shadow id range are derived from the
   * stored rows of the shadowed seqs, so they always agree with the store.
   */
  async recordCheckpoint(input: CheckpointInput): Promise<ShadowCheckpoint> {
    const checkpointId = assertString(input?.checkpointId, 'checkpointId')
    const sessionId = assertString(input.sessionId, 'sessionId')
    assertString(input.engine, 'engine', 100)
    if (input.status !== 'committed' && input.status !== 'failed') throw invalid('status must be committed or failed')
    if (!Array.isArray(input.shadowedSeqs)) throw invalid('shadowedSeqs must be an array')
    const seqs = input.shadowedSeqs.map(seq => assertSeq(seq, 'shadowed seq'))
    const createdAt = Math.floor(assertTime(input.createdAt, 'createdAt'))
    for (const field of ['startSeq', 'summarySeq', 'replaceSeq', 'shadowedTokens', 'summaryTokens'] as const) assertOptionalSeq(input[field], field)
    const trigger = optionalColumnText(input.trigger, 'trigger', 200)
    // marks, not rows: a checkpoint over 100k seqs read each row whole, one call at a time
    const marks = await marksInLineage(this.backend, await this.lineage(sessionId), seqs)
    const times = extent([...marks.values()].map(mark => mark.time))
    const sorted = seqs.toSorted((a, b) => a - b)
    const markId = (seq: number | undefined): string | null => {
      const mark = seq === undefined ? undefined : marks.get(seq)
      return mark === undefined ? null : shadowId(mark.tag, mark.seq)
    }
    const derived = {
      firstSeq: sorted[0] ?? null,
      lastSeq: sorted.at(-1) ?? null,
      firstShadowId: markId(sorted[0]),
      lastShadowId: markId(sorted.at(-1)),
      timeFrom: times?.min ?? null,
      timeTo: times?.max ?? null,
      messageCount: seqs.length,
    }
    const redact = (value: unknown, label: string): string | null | undefined => {
      const text = value === undefined ? undefined : optionalColumnText(value, label)
      return text === undefined || text === null || this.redactor === undefined ? text : this.redactor.text(text)
    }
    const footer = redact(input.footer, 'footer')
    const error = redact(input.error, 'error')
    await this.backend.putCheckpoint({
      ...input,
      checkpointId,
      sessionId,
      shadowedSeqs: seqs,
      createdAt,
      ...(trigger === null ? {} : { trigger }),
      ...(footer === undefined ? {} : { footer }),
      ...(error === undefined ? {} : { error }),
    }, derived)
    return (await this.backend.getCheckpoint(checkpointId))!
  }

  /** A row of the session's visible history at `seq` (its own, or an ancestor's below the fork). */
  async lookupInLineage(segments: readonly LineageSegment[], seq: number): Promise<ShadowMessage | undefined> {
    return lookupInLineage(this.backend, segments, seq)
  }

  /** `lookupInLineage` for many seqs at once (in their order; seqs with no row left out). */
  async lookupAllInLineage(segments: readonly LineageSegment[], seqs: readonly number[]): Promise<ShadowMessage[]> {
    return lookupAllInLineage(this.backend, segments, assertArray(seqs, 'seqs').map(seq => assertSeq(seq, 'seq')))
  }

  async checkpoint(checkpointId: string): Promise<ShadowCheckpoint | undefined> {
    return this.backend.getCheckpoint(assertString(checkpointId, 'checkpointId'))
  }

  /** Checkpoints of a session and, when asked, of its fork ancestors. */
  async checkpoints(sessionId: string, options: { withAncestors?: boolean } = {}): Promise<ShadowCheckpoint[]> {
    const ids = options.withAncestors === true ? (await this.lineage(sessionId)).map(segment => segment.sessionId) : [assertString(sessionId, 'sessionId')]
    return this.backend.listCheckpoints(ids)
  }

  async recordRecall(input: RecallInput): Promise<ShadowRecall> {
    const sessionId = assertString(input?.sessionId, 'sessionId')
    if (!['search', 'read', 'proactive'].includes(input.kind)) throw invalid('recall kind must be search, read or proactive')
    for (const [label, ids] of [['shadowIds', input.shadowIds], ['checkpointIds', input.checkpointIds ?? []]] as const) {
      for (const id of assertArray(ids, label)) assertString(id, `${label} entry`, 64)
    }
    const time = Math.floor(assertTime(input.time, 'time'))
    const seq = assertOptionalSeq(input.seq, 'seq')
    // a query is what the model typed, and may carry a pasted secret like any message
    const typed = input.query === undefined || input.query === null ? input.query : columnText(String(input.query))
    const query = typed === undefined || typed === null || this.redactor === undefined ? typed : this.redactor.text(typed)
    const recall = { ...input, sessionId, time, ...(seq === null ? {} : { seq }), ...(query === undefined ? {} : { query }) }
    const id = await this.backend.addRecall(recall)
    return { ...recall, recallId: id }
  }

  async recalls(sessionId: string): Promise<ShadowRecall[]> {
    return this.backend.listRecalls(assertString(sessionId, 'sessionId'))
  }

  // ---- search ---------------------------------------------------------------------------------

  /** Ranked full-text search over the scope's history (see `search/search.ts`). */
  async search(query: string, options: SearchOptions): Promise<SearchResult> {
    return this.resident.foreground(() => search(this.backend, query, options, undefined, this.resident))
  }

  /**
   * Build the resident index of a session's lineage ahead of its first search, in slices that let
   * other calls run (a resumed session of 10k messages takes about a second of analysis). A search
   * meanwhile reads the index lists. Nothing is built for a lineage resident search does not hold
   * (too large, too deep, or resident search off).
   */
  async warm(sessionId: string): Promise<void> {
    const scope = await scopeAndLineage(this.backend, { sessionId: assertString(sessionId, 'sessionId') })
    if (deepLineage(scope.segments)) return
    await this.resident.warm(this.backend, scope.segments)
  }

  /** What resident search holds now: sessions, their estimated bytes, and the budget (`resident.maxBytes`; 0 when off). */
  residentUsage(): { sessions: number; bytes: number; maxBytes: number } {
    return { ...this.resident.usage(), maxBytes: this.resident.maxBytes }
  }

  // ---- maintenance ----------------------------------------------------------------------------

  async stats(): Promise<StoreStats> {
    return { path: this.path, ...(await this.backend.stats()) }
  }

  async integrityCheck(): Promise<string[]> {
    const problems = await this.backend.integrityCheck()
    // a pass killed part-way (or a policy saved by a writer that died before its pass) leaves rows
    // unredacted until the next writable open: a clean report would say they are not
    if (await this.backend.redactionPending()) problems.push('a redaction pass is due or was interrupted: stored rows may still hold text the policy redacts (the next writable open finishes it)')
    return problems
  }

  /**
   * Freeze the store: every write fails with UNAVAILABLE until it is thawed (reads go on). For
   * backups and maintenance windows; Shadow Context then fails closed and elides nothing.
   */
  async setWritable(writable: boolean): Promise<void> {
    if (typeof writable !== 'boolean') throw invalid('setWritable takes a boolean')
    await this.backend.setWritable(writable)
  }

  /** Retention: drop stored originals a checkpoint elided until every budget fits (see `maintenance`). */
  async gc(policy: RetentionPolicy): Promise<RetentionReport> {
    return applyRetention(this.backend, policy)
  }

  /** Give the space retention freed back to the file system (rewrites the file; can take a while). */
  async vacuum(): Promise<void> {
    await this.backend.vacuum()
  }

  /**
   * Redact everything already stored with this store's policy (rows, index, checkpoint footers,
   * recall queries). Runs by itself when an open turns redaction on or changes its patterns;
   * resumable. Rows a stricter policy changes get the hash of their new stored form.
   */
  async redactStored(progress?: (done: number, total: number) => void): Promise<{ rows: number; changed: number }> {
    const redactor = this.redactor
    if (redactor === undefined) return { rows: 0, changed: 0 }
    return this.backend.redactStored({ text: text => redactor.text(text), json: json => redactEventJson(json, redactor), hash: hashEventJson }, messageViews, progress)
  }

  /** Rebuild the search indexes from stored text. */
  async reindex(progress?: (done: number, total: number) => void): Promise<number> {
    return this.backend.reindex(messageViews, ANALYZER_VERSION, progress)
  }

  /**
   * Forget one session: its rows, index entries, checkpoints and recalls (e.g. after pasting a
   * secret). Refused (CONFLICT) when it has forks unless `force`, which forgets them with it;
   * `vacuum` also rewrites the storage. The dsh log is not touched.
   */
  async forget(sessionId: string, options: ForgetOptions = {}): Promise<ForgetReport> {
    const report = await forgetSession(this.backend, assertString(sessionId, 'sessionId'), options)
    for (const id of report.forgotten) {
      this.tags.delete(id)
      this.resident.drop(id)
    }
    return report
  }
}
