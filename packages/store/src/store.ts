/**
 * ShadowStore: the domain API over a backend. Owns ids, lineage (forks read their parent's rows
 * below the fork point instead of copying them), validation, and search. Usable as a plain
 * library: `const store = await ShadowStore.open(path)`.
 */
import { createHash } from 'node:crypto'
import { ANALYZER_VERSION, analyzeQuery, indexViews, MAX_QUERY_CHARS } from './analyzer.ts'
import type { Awaitable, IndexHit, IndexResult, MessageFilter, MessageMark, PreparedMessage, ShadowBackend } from './backend.ts'
import { invalid, ShadowStoreError } from './errors.ts'
import { viewElision } from './elision-view.ts'
import { extent } from './extent.ts'
import { rowFromCaptured, type CapturedEvent } from './events.ts'
import { parseShadowId, sessionTag, shadowId } from './ids.ts'
import { Redactor, type RedactionOptions } from './redact.ts'
import { coverageTerms, fuseRankings, snippet, weightedCoverage, type RankedCandidate } from './ranking.ts'
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
  ShadowRole,
  ShadowSession,
  ShadowSessionInput,
  StoreStats,
} from './types.ts'

const EVENT_TYPES = new Set(['user/message', 'assistant/message', 'tool/result', 'request/header'])
const ROLES = new Set<ShadowRole>(['system', 'user', 'assistant', 'tool'])
const MAX_ID_CHARS = 512

export interface ShadowStoreOptions extends SqliteBackendOptions {
  /**
   * Redact secrets from stored text and event JSON (and so from the search index). The policy is
   * kept in the store: later opens without this option (the CLI's repair, another process) apply
   * it too; `false` turns it off. Default: whatever the store was last opened with (off if never).
   */
  readonly redact?: RedactionOptions | false
}

/** Leading candidates whose tool call or result is looked up (at least; more for a larger limit). */
const PAIRING_POOL = 30
/** Candidates each index list contributes (at least; more for a larger limit). */
const CANDIDATE_POOL = 50
/** Document frequencies are counted up to this many matches. */
const DF_CAP = 2_000
/** With a recency cue, candidates within this share of the best coverage are ordered newest first. */
const RECENCY_BAND = 0.6

interface SearchUnit {
  readonly message: ShadowMessage
  readonly call?: ShadowMessage
  /** What coverage and the snippet are computed on (call and result together for a unit). */
  readonly text: string
  readonly score: number
}

/** Where a store keeps its redaction policy, so every writer applies the same one. */
const REDACT_META = 'redact'

function savedRedactor(saved: string | undefined): Redactor | undefined {
  if (saved === undefined || saved === 'off') return undefined
  try {
    return new Redactor(JSON.parse(saved) as RedactionOptions)
  } catch (error) {
    throw new ShadowStoreError('CORRUPT', `the store's saved redaction policy is unreadable: ${error instanceof Error ? error.message : String(error)}`)
  }
}

function messageKey(message: Pick<ShadowMessage, 'sessionId' | 'seq'>): string {
  return `${message.sessionId}\u0000${message.seq}`
}

function bucket(covered: number): number {
  return Math.round(covered * 20)
}

/** Where a read or search may look. */
export interface ScopeOptions {
  /** The session asking; its fork ancestors are included up to each fork point. */
  readonly sessionId: string
  /** Widen to every session of this workspace (the caller decides whether that is allowed). */
  readonly workspace?: string
  /** Widen to every session in the store (CLI use). */
  readonly allSessions?: boolean
}

export interface SearchOptions extends ScopeOptions {
  readonly limit?: number
  readonly timeFrom?: number
  readonly timeTo?: number
  readonly roles?: readonly ShadowRole[]
  readonly toolName?: string
  /** Only messages a given checkpoint took off the surface. */
  readonly checkpointId?: string
  /** Rank at most this many newest matches per index. Default 5000. */
  readonly rankWindow?: number
  /** Leave out rows of these source kinds (recall layers pass their checkpoint and recall kinds). */
  readonly excludeSourceKinds?: readonly string[]
  /** Leave out results of, and calls to, these tools. */
  readonly excludeToolNames?: readonly string[]
}

export interface SearchHit {
  readonly message: ShadowMessage
  /** For a tool result: the assistant message that called the tool (call and result rank as one unit). */
  readonly call?: ShadowMessage
  readonly score: number
  readonly snippet: string
  readonly matched: readonly string[]
}

export interface SearchResult {
  readonly hits: SearchHit[]
  readonly coverage: {
    /** Messages in scope (after filters). */
    readonly searched: number
    /** Messages that matched the query in scope (lower bound when the rank window was hit). */
    readonly matched: number
    readonly returned: number
  }
  /** Literal pieces of the query, lowercased. */
  readonly literals: readonly string[]
}

/** One step of a capture batch; a batch is applied strictly in order. */
export type IngestOp =
  | { readonly op: 'session'; readonly session: ShadowSessionInput }
  | { readonly op: 'events'; readonly events: readonly CapturedEvent[] }
  | {
    readonly op: 'reconcile'
    /** The session whose log is the authority. */
    readonly sessionId: string
    /** Every capturable event of the log, each attributed to the session that owns its row. */
    readonly events: readonly CapturedEvent[]
    /** Own rows at or above this seq that the log does not have are stale and removed. */
    readonly ownFromSeq: number
  }
  | { readonly op: 'checkpoint'; readonly checkpoint: CheckpointInput; readonly elide: boolean }

export interface IngestReport {
  readonly written: number
  readonly unchanged: number
  readonly replaced: number
  readonly removed: number
  readonly checkpoints: number
}

export interface ReadOptions {
  readonly fromSeq?: number
  readonly toSeq?: number
  readonly timeFrom?: number
  readonly timeTo?: number
  readonly limit?: number
  readonly descending?: boolean
  readonly elidedBy?: string
}

function assertString(value: unknown, label: string, max = MAX_ID_CHARS): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${label} must be a non-empty string`)
  if (value.length > max) throw invalid(`${label} is longer than ${max} characters`)
  if (value.includes('\u0000')) throw invalid(`${label} must not contain NUL`)
  return value
}

function assertSeq(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(`${label} must be a non-negative integer`)
  return value
}

function assertOptionalInt(value: unknown, label: string): number | null {
  if (value === null || value === undefined) return null
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(`${label} must be an integer or null`)
  return value
}

function optionalText(value: unknown, label: string): string | null {
  if (value === null || value === undefined) return null
  if (typeof value !== 'string') throw invalid(`${label} must be a string or null`)
  return value
}

/** The session whose row holds `seq`: the oldest ancestor whose fork bound is above it. */
function ownerOf(segments: readonly LineageSegment[], seq: number): string | undefined {
  return segments.findLast(segment => seq < segment.belowSeq)?.sessionId
}

export function hashEventJson(eventJson: string): string {
  return createHash('sha1').update(eventJson).digest('hex')
}

export class ShadowStore {
  readonly backend: ShadowBackend
  private readonly tags = new Map<string, string>()
  private readonly redactor: Redactor | undefined

  constructor(backend: ShadowBackend, options: Pick<ShadowStoreOptions, 'redact'> & { readonly redactor?: Redactor } = {}) {
    this.backend = backend
    this.redactor = options.redactor ?? (options.redact === undefined || options.redact === false ? undefined : new Redactor(options.redact))
  }

  /** Open (creating if needed) a SQLite shadow store at `path`. */
  static async open(path: string, options: ShadowStoreOptions = {}): Promise<ShadowStore> {
    assertString(path, 'store path', 4096)
    // bad redaction patterns fail before any file is touched
    const given = options.redact === undefined || options.redact === false ? undefined : new Redactor(options.redact)
    const backend = await SqliteBackend.open(path, options)
    let redactor = given
    if (options.redact === undefined) {
      redactor = savedRedactor(backend.meta(REDACT_META))
    } else if (options.readOnly !== true) {
      // write only a change: an open must not need the write lock another process may hold
      const policy = options.redact === false ? 'off' : JSON.stringify(options.redact)
      if ((backend.meta(REDACT_META) ?? 'off') !== policy) backend.setMeta(REDACT_META, policy)
    }
    const store = new ShadowStore(backend, redactor === undefined ? {} : { redactor })
    if (options.readOnly !== true && backend.meta('analyzer_version') !== String(ANALYZER_VERSION)) {
      backend.reindex(indexViews, ANALYZER_VERSION)
    }
    return store
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
    const tag = await this.ensureTag(sessionId)
    await this.backend.upsertSession({
      sessionId,
      tag,
      parentSessionId,
      forkSeq,
      workspace: optionalText(input.workspace, 'workspace'),
      createdAt: assertOptionalInt(input.createdAt, 'createdAt'),
    })
    return (await this.backend.getSession(sessionId))!
  }

  async session(sessionId: string): Promise<ShadowSession | undefined> {
    return this.backend.getSession(assertString(sessionId, 'sessionId'))
  }

  async sessions(workspace?: string): Promise<ShadowSession[]> {
    return this.backend.listSessions(workspace === undefined ? undefined : assertString(workspace, 'workspace', 4096))
  }

  /** The session and its fork ancestors, each with the seq bound below which its rows are visible. */
  async lineage(sessionId: string): Promise<LineageSegment[]> {
    assertString(sessionId, 'sessionId')
    const segments: LineageSegment[] = []
    let current = await this.backend.getSession(sessionId)
    if (current === undefined) return []
    let below = Number.POSITIVE_INFINITY
    const seen = new Set<string>()
    while (current !== undefined && !seen.has(current.sessionId)) {
      seen.add(current.sessionId)
      segments.push({ sessionId: current.sessionId, tag: current.tag, belowSeq: below })
      if (current.parentSessionId === null) break
      below = Math.min(below, current.forkSeq ?? 0)
      current = await this.backend.getSession(current.parentSessionId)
    }
    return segments
  }

  private async ensureTag(sessionId: string): Promise<string> {
    const cached = this.tags.get(sessionId)
    if (cached !== undefined) return cached
    const existing = await this.backend.getSession(sessionId)
    if (existing !== undefined) {
      this.tags.set(sessionId, existing.tag)
      return existing.tag
    }
    const tag = sessionTag(sessionId)
    const holder = await this.backend.getSessionByTag(tag)
    if (holder !== undefined && holder.sessionId !== sessionId) {
      throw new ShadowStoreError('CONFLICT', `session tag ${tag} of ${sessionId} is already used by ${holder.sessionId}`)
    }
    this.tags.set(sessionId, tag)
    return tag
  }

  // ---- messages -------------------------------------------------------------------------------

  /** Validate and derive one row without writing it. */
  private async prepare(input: ShadowMessageInput): Promise<PreparedMessage> {
    if (typeof input !== 'object' || input === null) throw invalid('message must be an object')
    const sessionId = assertString(input.sessionId, 'sessionId')
    const seq = assertSeq(input.seq, 'seq')
    if (!EVENT_TYPES.has(input.eventType)) throw invalid(`eventType must be one of ${[...EVENT_TYPES].join(', ')}`)
    if (!ROLES.has(input.role)) throw invalid(`role must be one of ${[...ROLES].join(', ')}`)
    assertString(input.sourceKind, 'sourceKind', 200)
    if (typeof input.time !== 'number' || !Number.isFinite(input.time) || input.time < 0) throw invalid('time must be epoch milliseconds')
    if (typeof input.eventJson !== 'string' || input.eventJson.length === 0) throw invalid('eventJson must be a non-empty string')
    if (typeof input.text !== 'string') throw invalid('text must be a string')
    if (typeof input.tokens !== 'number' || !Number.isSafeInteger(input.tokens) || input.tokens < 0) throw invalid('tokens must be a non-negative integer')
    const tag = await this.ensureTag(sessionId)
    // the hash is of the original event, so rows still verify against the log once redacted
    const hash = hashEventJson(input.eventJson)
    const text = this.redactor === undefined ? input.text : this.redactor.text(input.text)
    const views = indexViews(text)
    return {
      sessionId,
      seq,
      eventType: input.eventType,
      role: input.role,
      sourceKind: input.sourceKind,
      turn: assertOptionalInt(input.turn, 'turn'),
      step: assertOptionalInt(input.step, 'step'),
      toolName: optionalText(input.toolName, 'toolName'),
      callId: optionalText(input.callId, 'callId'),
      time: Math.floor(input.time),
      eventJson: this.redactor === undefined ? input.eventJson : this.redactor.json(input.eventJson),
      text,
      tokens: input.tokens,
      tag,
      shadowId: shadowId(tag, seq),
      hash,
      words: views.words,
      grams: views.grams,
    }
  }

  /**
   * Write messages idempotently: a row that exists with the same content is left alone, one with
   * different content is replaced (the log is the authority). Sessions are registered on the fly.
   * All rows are validated before anything is written.
   */
  async append(rows: readonly ShadowMessageInput[]): Promise<AppendResult> {
    if (!Array.isArray(rows)) throw invalid('append takes an array of messages')
    const prepared: PreparedMessage[] = []
    for (const row of rows) prepared.push(await this.prepare(row))
    for (const sessionId of new Set(prepared.map(row => row.sessionId))) {
      if ((await this.backend.getSession(sessionId)) === undefined) {
        await this.backend.upsertSession({ sessionId, tag: await this.ensureTag(sessionId) })
      }
    }
    return this.backend.appendMessages(prepared)
  }

  /** Apply a capture batch in order (what the capture plugin sends). */
  async ingest(ops: readonly IngestOp[]): Promise<IngestReport> {
    if (!Array.isArray(ops)) throw invalid('ingest takes an array of operations')
    // a batch written into a deleted file would be lost at the next restart: refuse it now
    await this.backend.assertInPlace()
    let written = 0
    let unchanged = 0
    let replaced = 0
    let removed = 0
    let checkpoints = 0
    const count = (result: AppendResult): void => {
      written += result.written
      unchanged += result.unchanged
      replaced += result.replaced
    }
    for (const op of ops) {
      if (typeof op !== 'object' || op === null) throw invalid('ingest operation must be an object')
      switch (op.op) {
        case 'session':
          await this.registerSession(op.session)
          break
        case 'events':
          count(await this.append(op.events.map(rowFromCaptured)))
          break
        case 'reconcile': {
          // Attribute each log event to the lineage segment that owns its row: a fork's prefix
          // belongs to its parent (or further up), never copied into the child.
          const segments = await this.lineage(op.sessionId)
          const bySession = new Map<string, CapturedEvent[]>()
          for (const event of op.events) {
            const owner = ownerOf(segments, event.seq) ?? op.sessionId
            const list = bySession.get(owner) ?? []
            list.push(owner === event.sessionId ? event : { ...event, sessionId: owner })
            bySession.set(owner, list)
          }
          for (const [sessionId, events] of bySession) {
            const stored = new Map((await this.hashes(sessionId)).map(row => [row.seq, row.hash]))
            const stale = events.filter(event => stored.get(event.seq) !== hashEventJson(event.eventJson))
            count(await this.append(stale.map(rowFromCaptured)))
            unchanged += events.length - stale.length
          }
          const own = new Set<number>()
          for (const event of bySession.get(op.sessionId) ?? []) own.add(event.seq)
          const extra = (await this.hashes(op.sessionId)).map(row => row.seq).filter(seq => seq >= op.ownFromSeq && !own.has(seq))
          removed += await this.remove(op.sessionId, extra)
          break
        }
        case 'checkpoint': {
          // A fork's seed repeats its ancestors' checkpoints: they stay the ancestors'.
          const existing = await this.backend.getCheckpoint(assertString(op.checkpoint?.checkpointId, 'checkpointId'))
          let owner = existing?.sessionId ?? op.checkpoint.sessionId
          if (existing === undefined && typeof op.checkpoint.replaceSeq === 'number') {
            const segments = await this.lineage(op.checkpoint.sessionId)
            owner = ownerOf(segments, op.checkpoint.replaceSeq) ?? owner
          }
          const recorded = await this.recordCheckpoint({ ...op.checkpoint, sessionId: owner })
          // Marks belong to the session that compacted: only its own rows carry them. Rows it
          // inherited from an ancestor are shown in its checkpoint when it reads (elision-view.ts).
          if (op.elide && recorded.status === 'committed') await this.markElidedIfUnmarked(recorded.sessionId, recorded.shadowedSeqs, recorded.checkpointId)
          checkpoints += 1
          break
        }
        default:
          throw invalid(`unknown ingest operation ${JSON.stringify((op as { op?: unknown })?.op)}`)
      }
    }
    return { written, unchanged, replaced, removed, checkpoints }
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
    const rows = await this.marksInLineage(segments, entries.map(entry => assertSeq(entry.seq, 'seq')))
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

  /** Mark rows elided unless an earlier checkpoint already did (the first elision is the one a reader follows). */
  private async markElidedIfUnmarked(sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
    const marks = await this.backend.messageHashesFor(sessionId, seqs)
    await this.backend.markElided(sessionId, marks.filter(mark => mark.elidedBy === null).map(mark => mark.seq), checkpointId)
  }

  /**
   * Hash and marks of the row each seq resolves to in a lineage (its own, or an ancestor's below
   * the fork): what `lookupInLineage` finds, without reading text. O(seqs) indexed lookups.
   */
  private async marksInLineage(segments: readonly LineageSegment[], seqs: readonly number[]): Promise<Map<number, MessageMark>> {
    const found = new Map<number, MessageMark>()
    let rest = [...new Set(seqs)]
    for (const segment of segments) {
      if (rest.length === 0) break
      const here = rest.filter(seq => seq < segment.belowSeq)
      for (const mark of await this.backend.messageHashesFor(segment.sessionId, here)) found.set(mark.seq, mark)
      rest = rest.filter(seq => !found.has(seq))
    }
    return found
  }

  /** One message by shadow id, or undefined when it does not exist. */
  async message(id: string): Promise<ShadowMessage | undefined> {
    const { tag, seq } = parseShadowId(id)
    const session = await this.backend.getSessionByTag(tag)
    if (session === undefined) return undefined
    return this.backend.getMessage(session.sessionId, seq)
  }

  async messageAt(sessionId: string, seq: number): Promise<ShadowMessage | undefined> {
    return this.backend.getMessage(assertString(sessionId, 'sessionId'), assertSeq(seq, 'seq'))
  }

  /** Resolve which session's history the scope covers, as lineage segments. */
  async scopeSegments(scope: ScopeOptions): Promise<LineageSegment[]> {
    if (scope.allSessions === true || scope.workspace !== undefined) {
      const sessions = await this.backend.listSessions(scope.allSessions === true ? undefined : scope.workspace)
      const own = await this.lineage(scope.sessionId)
      const segments = new Map(own.map(segment => [segment.sessionId, segment]))
      for (const session of sessions) {
        if (!segments.has(session.sessionId)) segments.set(session.sessionId, { sessionId: session.sessionId, tag: session.tag, belowSeq: Number.POSITIVE_INFINITY })
      }
      return [...segments.values()]
    }
    const segments = await this.lineage(scope.sessionId)
    if (segments.length === 0) throw new ShadowStoreError('NOT_FOUND', `session ${scope.sessionId} is not in the shadow store`)
    return segments
  }

  /** Messages of a session's visible history (its own rows and its ancestors' below each fork). */
  async read(scope: ScopeOptions, options: ReadOptions = {}): Promise<ShadowMessage[]> {
    const segments = await this.checkpointScope(await this.scopeSegments(scope), options.elidedBy)
    const limit = options.limit ?? 200
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) throw invalid('limit must be an integer from 1 to 100000')
    const rows = await this.backend.readMessages({ ...this.filter(segments, options), limit, ...(options.descending === undefined ? {} : { descending: options.descending }) })
    return viewElision(this.backend, await this.lineage(scope.sessionId), rows)
  }

  async count(scope: ScopeOptions, options: ReadOptions = {}): Promise<number> {
    return this.backend.countMessages(this.filter(await this.checkpointScope(await this.scopeSegments(scope), options.elidedBy), options))
  }

  /**
   * A checkpoint's originals are rows of its own session's history (its rows and its ancestors'
   * below the fork): narrow the scope to that, so the seq filter cannot match another session.
   */
  private async checkpointScope(segments: LineageSegment[], checkpointId: string | undefined): Promise<LineageSegment[]> {
    if (checkpointId === undefined) return segments
    const checkpoint = await this.backend.getCheckpoint(assertString(checkpointId, 'checkpoint id'))
    if (checkpoint === undefined) return []
    const bounds = new Map((await this.lineage(checkpoint.sessionId)).map(segment => [segment.sessionId, segment.belowSeq]))
    return segments.flatMap(segment => {
      const below = bounds.get(segment.sessionId)
      return below === undefined ? [] : [{ ...segment, belowSeq: Math.min(below, segment.belowSeq) }]
    })
  }

  private filter(segments: LineageSegment[], options: ReadOptions & { roles?: readonly ShadowRole[]; toolName?: string }): MessageFilter {
    const fromSeq = options.fromSeq === undefined ? undefined : assertSeq(options.fromSeq, 'fromSeq')
    const toSeq = options.toSeq === undefined ? undefined : assertSeq(options.toSeq, 'toSeq')
    if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) throw invalid(`seq range is inverted: ${fromSeq} > ${toSeq}`)
    if (options.timeFrom !== undefined && options.timeTo !== undefined && options.timeFrom > options.timeTo) throw invalid('time range is inverted')
    if (options.roles !== undefined) for (const role of options.roles) if (!ROLES.has(role)) throw invalid(`unknown role ${JSON.stringify(role)}`)
    return {
      segments,
      ...(fromSeq === undefined ? {} : { fromSeq }),
      ...(toSeq === undefined ? {} : { toSeq }),
      ...(options.timeFrom === undefined ? {} : { timeFrom: options.timeFrom }),
      ...(options.timeTo === undefined ? {} : { timeTo: options.timeTo }),
      ...(options.roles === undefined || options.roles.length === 0 ? {} : { roles: options.roles }),
      ...(options.toolName === undefined ? {} : { toolName: assertString(options.toolName, 'toolName', 200) }),
      ...(options.elidedBy === undefined ? {} : { elidedBy: assertString(options.elidedBy, 'checkpoint id') }),
    }
  }

  /** (seq, hash) of every row stored for a session itself (not its ancestors). */
  async hashes(sessionId: string): Promise<Array<{ seq: number; hash: string }>> {
    return this.backend.messageHashes(assertString(sessionId, 'sessionId'))
  }

  /** Compare a session's own rows with an authoritative (seq, hash) list; writes nothing. */
  async reconcile(sessionId: string, authority: ReadonlyArray<{ seq: number; hash: string }>): Promise<ReconcileReport> {
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
    return this.backend.deleteMessages(assertString(sessionId, 'sessionId'), seqs.map(seq => assertSeq(seq, 'seq')))
  }

  async markElided(sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
    await this.backend.markElided(assertString(sessionId, 'sessionId'), seqs.map(seq => assertSeq(seq, 'seq')), assertString(checkpointId, 'checkpointId'))
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
    const segments = await this.lineage(sessionId)
    const rows: ShadowMessage[] = []
    for (const seq of seqs) {
      const row = await this.rowInLineage(segments, seq)
      if (row !== undefined) rows.push(row)
    }
    const times = extent(rows.map(row => row.time))
    const sorted = seqs.toSorted((a, b) => a - b)
    const firstRow = rows.find(row => row.seq === sorted[0])
    const lastRow = rows.find(row => row.seq === sorted.at(-1))
    const derived = {
      firstSeq: sorted[0] ?? null,
      lastSeq: sorted.at(-1) ?? null,
      firstShadowId: firstRow?.shadowId ?? null,
      lastShadowId: lastRow?.shadowId ?? null,
      timeFrom: times?.min ?? null,
      timeTo: times?.max ?? null,
      messageCount: seqs.length,
    }
    await this.backend.putCheckpoint({ ...input, checkpointId, sessionId, shadowedSeqs: seqs }, derived)
    return (await this.backend.getCheckpoint(checkpointId))!
  }

  /** A row of the session's visible history at `seq` (its own, or an ancestor's below the fork). */
  async lookupInLineage(segments: readonly LineageSegment[], seq: number): Promise<ShadowMessage | undefined> {
    const row = await this.rowInLineage(segments, seq)
    return row === undefined ? undefined : (await viewElision(this.backend, segments, [row]))[0]
  }

  /** The stored row, with its owner's own marks. */
  private async rowInLineage(segments: readonly LineageSegment[], seq: number): Promise<ShadowMessage | undefined> {
    for (const segment of segments) {
      if (seq >= segment.belowSeq) continue
      const row = await this.backend.getMessage(segment.sessionId, seq)
      if (row !== undefined) return row
    }
    return undefined
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
    if (!Array.isArray(input.shadowIds)) throw invalid('shadowIds must be an array')
    const id = await this.backend.addRecall({ ...input, sessionId })
    return { ...input, sessionId, recallId: id }
  }

  async recalls(sessionId: string): Promise<ShadowRecall[]> {
    return this.backend.listRecalls(assertString(sessionId, 'sessionId'))
  }

  // ---- search ---------------------------------------------------------------------------------

  /**
   * Ranked full-text search over the scope's history. Query text is data, never FTS syntax.
   *
   * Candidates come from three index queries: all words (AND), any word (OR, BM25) and substrings
   * (trigram over literal anchors). They are ordered by how much of the query a message covers,
   * then by reciprocal-rank fusion of the three lists, then by recency.
   */
  async search(query: string, options: SearchOptions): Promise<SearchResult> {
    if (typeof query !== 'string') throw invalid('query must be a string')
    if (query.trim().length === 0) throw invalid('query is empty')
    if (query.length > MAX_QUERY_CHARS) throw invalid(`query is longer than ${MAX_QUERY_CHARS} characters`)
    const limit = options.limit ?? 10
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw invalid('limit must be an integer from 1 to 200')
    const analyzed = analyzeQuery(query)
    if (analyzed.words.length === 0 && analyzed.grams.length === 0) throw invalid('query has no searchable words')
    const segments = await this.checkpointScope(await this.scopeSegments(options), options.checkpointId)
    const filter: MessageFilter = {
      ...this.filter(segments, {
        ...(options.timeFrom === undefined ? {} : { timeFrom: options.timeFrom }),
        ...(options.timeTo === undefined ? {} : { timeTo: options.timeTo }),
        ...(options.roles === undefined ? {} : { roles: options.roles }),
        ...(options.toolName === undefined ? {} : { toolName: options.toolName }),
        ...(options.checkpointId === undefined ? {} : { elidedBy: options.checkpointId }),
      }),
      ...(options.excludeSourceKinds === undefined ? {} : { excludeSourceKinds: options.excludeSourceKinds }),
      ...(options.excludeToolNames === undefined ? {} : { excludeToolNames: options.excludeToolNames }),
    }
    const rankWindow = options.rankWindow ?? 1_000
    const pool = Math.max(CANDIDATE_POOL, limit * 5)
    const none = { hits: [] as IndexHit[], windowed: false }
    const list = (index: 'words' | 'grams', terms: readonly string[], operator: 'and' | 'or', order: 'rank' | 'newest'): Awaitable<IndexResult> =>
      this.backend.searchIndex({ ...filter, index, terms, operator, limit: pool, rankWindow, order, light: true })
    // bm25 walks the whole doclist of every phrase in the MATCH (its idf pass), whatever the scope or
    // window: rank only with words that are rare store-wide; list the rest newest first.
    const global = analyzed.words.length > 0 ? await this.backend.documentFrequencies({ segments, index: 'words', terms: analyzed.words, cap: DF_CAP, global: true }) : []
    const rare = analyzed.words.filter((_, index) => (global[index] ?? 0) < DF_CAP)
    const all = analyzed.words.length > 1 ? await list('words', analyzed.words, 'and', 'newest') : none
    const any = rare.length > 0 ? await list('words', rare, 'or', 'rank') : analyzed.words.length > 0 ? await list('words', analyzed.words, 'or', 'newest') : none
    const grams = analyzed.grams.length > 0 ? await list('grams', analyzed.grams, 'or', 'newest') : none
    const fused = fuseRankings(
      [{ name: 'all', weight: 1, items: all.hits }, { name: 'any', weight: 1, items: any.hits }, { name: 'grams', weight: 1, items: grams.hits }],
      hit => messageKey(hit.message),
      (a, b) => b.message.time - a.message.time || b.message.seq - a.message.seq,
    )
    const terms = coverageTerms(analyzed.words)
    const weights = await this.termWeights(terms, analyzed.words, global)
    // Pair calls with results for the leading candidates only: pairing reads a partner row each,
    // and a candidate far down on its own coverage does not reach the top by its partner.
    const single = new Map(fused.map(entry => [entry.key, weightedCoverage(entry.item.message.text, terms, weights)]))
    const pairable = new Set(fused
      .map(entry => ({ key: entry.key, covered: bucket(single.get(entry.key)!), score: entry.score }))
      .toSorted((a, b) => b.covered - a.covered || b.score - a.score)
      .slice(0, Math.max(PAIRING_POOL, limit * 3))
      .map(entry => entry.key))
    // A call stands for its result only when the result itself passes every filter asked for.
    const foldCalls = (options.roles === undefined || options.roles.includes('tool'))
      && options.timeFrom === undefined && options.timeTo === undefined && options.checkpointId === undefined
    const units = await this.callUnits(fused, segments, foldCalls, pairable)
    // Query pieces with inner punctuation (paths, identifiers, versions) are meant literally.
    const exact = analyzed.literals.filter(literal => literal.length >= 3 && /[\p{L}\p{N}][^\p{L}\p{N}\s]+[\p{L}\p{N}]/u.test(literal))
    const scored = units.map(unit => {
      const lower = exact.length === 0 ? '' : unit.text.toLowerCase()
      const covered = unit.call === undefined ? single.get(messageKey(unit.message)) ?? weightedCoverage(unit.text, terms, weights) : weightedCoverage(unit.text, terms, weights)
      return { unit, covered, literal: exact.filter(literal => lower.includes(literal)).length }
    })
    // Buckets of 5% so near-equal coverage falls through to exact literal matches, fusion score, then recency.
    let ranked = scored.toSorted((a, b) => bucket(b.covered) - bucket(a.covered) || b.literal - a.literal || b.unit.score - a.unit.score || b.unit.message.time - a.unit.message.time)
    if (analyzed.recency && ranked.length > 0) {
      // "What is the current X": among the units that answer about as well as the best, newest first.
      const best = ranked[0]!.covered
      const close = (covered: number): boolean => covered >= best * RECENCY_BAND
      ranked = [
        ...ranked.filter(entry => close(entry.covered)).toSorted((a, b) => b.unit.message.time - a.unit.message.time || b.unit.message.seq - a.unit.message.seq),
        ...ranked.filter(entry => !close(entry.covered)),
      ]
    }
    const hits: SearchHit[] = []
    let lineage: LineageSegment[] | undefined
    for (const { unit } of ranked.slice(0, limit)) {
      const cut = snippet(unit.call === undefined ? unit.message.text : unit.text, analyzed.literals)
      // candidates were read without their event JSON: read the winners in full
      const stored = (await this.backend.getMessage(unit.message.sessionId, unit.message.seq)) ?? unit.message
      const [message] = await viewElision(this.backend, lineage ??= await this.lineage(options.sessionId), [stored])
      const call = unit.call === undefined ? undefined : (await this.backend.getMessage(unit.call.sessionId, unit.call.seq)) ?? unit.call
      hits.push({ message: message!, ...(call === undefined ? {} : { call }), score: unit.score, snippet: cut.text, matched: cut.matched })
    }
    const searched = await this.backend.countMessages(filter)
    return { hits, coverage: { searched, matched: units.length, returned: hits.length }, literals: analyzed.literals }
  }

  /**
   * Fold each tool call into its result: the call's arguments and the result's output answer a
   * question together ("what did grep find in server.ts"), so they rank as one unit, represented
   * by the result and scored by the better of the two. Calls whose result is not stored (or
   * messages with several calls) stay single; so do calls when a role filter leaves results out.
   */
  private async callUnits(fused: ReadonlyArray<RankedCandidate<IndexHit>>, segments: readonly LineageSegment[], foldCalls: boolean, pairable: ReadonlySet<string>): Promise<SearchUnit[]> {
    const units = new Map<string, SearchUnit>()
    const add = (unit: SearchUnit): void => {
      const key = messageKey(unit.message)
      const existing = units.get(key)
      if (existing === undefined || unit.score > existing.score) units.set(key, existing === undefined ? unit : { ...unit, score: Math.max(unit.score, existing.score) })
    }
    const single = (message: ShadowMessage): boolean => message.callId !== null && !message.callId.includes(' ')
    // every partner in one indexed lookup: (session, call id) of single-call messages and results
    const keys = new Map<string, { sessionId: string; callId: string }>()
    for (const { key, item: { message } } of fused) {
      if (pairable.has(key) && single(message) && (message.role === 'tool' || (foldCalls && message.role === 'assistant'))) keys.set(`${message.sessionId}\u0000${message.callId}`, { sessionId: message.sessionId, callId: message.callId! })
    }
    const byCall = new Map<string, ShadowMessage[]>()
    for (const row of await this.backend.callRows([...keys.values()])) {
      for (const callId of row.callId?.split(' ') ?? []) {
        const key = `${row.sessionId}\u0000${callId}`
        if (keys.has(key)) byCall.set(key, [...(byCall.get(key) ?? []), row])
      }
    }
    const bound = (sessionId: string): number => segments.find(segment => segment.sessionId === sessionId)?.belowSeq ?? Number.POSITIVE_INFINITY
    for (const entry of fused) {
      const message = entry.item.message
      const sameCall = single(message) ? byCall.get(`${message.sessionId}\u0000${message.callId}`) ?? [] : []
      if (foldCalls && message.role === 'assistant' && single(message)) {
        const result = sameCall.filter(row => row.role === 'tool' && row.seq > message.seq && row.seq < bound(row.sessionId)).toSorted((a, b) => a.seq - b.seq)[0]
        if (result !== undefined) {
          add({ message: result, call: message, text: `${message.text}\n${result.text}`, score: entry.score })
          continue
        }
      }
      if (message.role === 'tool' && message.callId !== null) {
        const call = sameCall.filter(row => row.role === 'assistant' && row.seq < message.seq).toSorted((a, b) => b.seq - a.seq)[0]
        if (call !== undefined) {
          add({ message, call, text: `${call.text}\n${message.text}`, score: entry.score })
          continue
        }
      }
      add({ message, text: message.text, score: entry.score })
    }
    return [...units.values()]
  }

  /**
   * Inverse document frequency of each coverage term, so covering a rare identifier counts for
   * more than covering a common word. Frequencies are store-wide (what rarity means across the
   * history, and already counted for the index lists), up to a cap: past it a term is common
   * either way, and the count stays cheap on large stores.
   */
  private async termWeights(terms: readonly string[], words: readonly string[], frequencies: readonly number[]): Promise<Map<string, number>> {
    const weights = new Map<string, number>()
    if (terms.length <= 1) return weights
    const total = Math.max(1, await this.backend.messageTotal())
    const df = new Map<string, number>()
    words.forEach((word, index) => {
      const [term] = coverageTerms([word])
      if (term !== undefined && !df.has(term)) df.set(term, frequencies[index] ?? 0)
    })
    for (const term of terms) {
      const count = Math.min(df.get(term) ?? 0, total)
      weights.set(term, Math.log(1 + (total - count + 0.5) / (count + 0.5)))
    }
    return weights
  }

  // ---- maintenance ----------------------------------------------------------------------------

  async stats(): Promise<StoreStats> {
    return { path: this.path, ...(await this.backend.stats()) }
  }

  async integrityCheck(): Promise<string[]> {
    return this.backend.integrityCheck()
  }

  /**
   * Freeze the store: every write fails with UNAVAILABLE until it is thawed (reads go on). For
   * backups and maintenance windows; Shadow Context then fails closed and elides nothing.
   */
  async setWritable(writable: boolean): Promise<void> {
    if (typeof writable !== 'boolean') throw invalid('setWritable takes a boolean')
    await this.backend.setWritable(writable)
  }

  /**
   * Retention: drop stored originals, a whole checkpoint at a time and oldest first, until every
   * session and workspace fits its budget and nothing is older than `maxAgeMs`. Only originals a
   * committed checkpoint took off the surface are candidates — the live surface is never touched —
   * and each checkpoint whose originals go is marked expired, so a pointer to it says so instead
   * of pretending. Dropped rows keep their identity and hash: the dsh log still verifies, and a
   * reconciliation does not bring them back.
   */
  async gc(policy: RetentionPolicy): Promise<RetentionReport> {
    if (typeof policy !== 'object' || policy === null) throw invalid('retention policy must be an object')
    const budget = (value: unknown, name: string): number | undefined => {
      if (value === undefined) return undefined
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(`${name} must be a non-negative integer`)
      return value
    }
    const sessionBytes = budget(policy.sessionBytes, 'sessionBytes')
    const workspaceBytes = budget(policy.workspaceBytes, 'workspaceBytes')
    const maxAgeMs = budget(policy.maxAgeMs, 'maxAgeMs')
    if (sessionBytes === undefined && workspaceBytes === undefined && maxAgeMs === undefined) throw invalid('retention needs sessionBytes, workspaceBytes or maxAgeMs')
    const now = budget(policy.now, 'now') ?? Date.now()
    const dryRun = policy.dryRun === true

    const usage = await this.backend.retentionUsage()
    const sessionUse = new Map(usage.map(entry => [entry.sessionId, entry.bytes]))
    const workspaceOf = new Map(usage.map(entry => [entry.sessionId, entry.workspace ?? `(no workspace) ${entry.sessionId}`]))
    const workspaceUse = new Map<string, number>()
    for (const entry of usage) workspaceUse.set(workspaceOf.get(entry.sessionId)!, (workspaceUse.get(workspaceOf.get(entry.sessionId)!) ?? 0) + entry.bytes)
    const candidates = [...(await this.backend.retentionCandidates())]
    const chosen: Array<RetentionReport['expired'][number]> = []
    const take = (index: number, reason: 'age' | 'session' | 'workspace'): void => {
      const [candidate] = candidates.splice(index, 1)
      if (candidate === undefined) return
      chosen.push({ checkpointId: candidate.checkpointId, sessionId: candidate.sessionId, rows: candidate.rows, bytes: candidate.bytes, reason })
      sessionUse.set(candidate.sessionId, (sessionUse.get(candidate.sessionId) ?? 0) - candidate.bytes)
      const workspace = workspaceOf.get(candidate.sessionId)!
      workspaceUse.set(workspace, (workspaceUse.get(workspace) ?? 0) - candidate.bytes)
    }
    if (maxAgeMs !== undefined) {
      for (let index = candidates.findIndex(candidate => candidate.newest < now - maxAgeMs); index !== -1; index = candidates.findIndex(candidate => candidate.newest < now - maxAgeMs)) take(index, 'age')
    }
    const overBudget: Array<RetentionReport['overBudget'][number]> = []
    if (sessionBytes !== undefined) {
      for (const sessionId of sessionUse.keys()) {
        while ((sessionUse.get(sessionId) ?? 0) > sessionBytes) {
          const index = candidates.findIndex(candidate => candidate.sessionId === sessionId)
          if (index === -1) break
          take(index, 'session')
        }
        if ((sessionUse.get(sessionId) ?? 0) > sessionBytes) overBudget.push({ scope: 'session', id: sessionId, bytes: sessionUse.get(sessionId)!, budget: sessionBytes })
      }
    }
    if (workspaceBytes !== undefined) {
      for (const workspace of workspaceUse.keys()) {
        while ((workspaceUse.get(workspace) ?? 0) > workspaceBytes) {
          const index = candidates.findIndex(candidate => workspaceOf.get(candidate.sessionId) === workspace)
          if (index === -1) break
          take(index, 'workspace')
        }
        if ((workspaceUse.get(workspace) ?? 0) > workspaceBytes) overBudget.push({ scope: 'workspace', id: workspace, bytes: workspaceUse.get(workspace)!, budget: workspaceBytes })
      }
    }
    let rows = 0
    let bytes = 0
    const expired: Array<RetentionReport['expired'][number]> = []
    for (const entry of chosen) {
      const done = dryRun ? entry : { ...entry, ...(await this.backend.expireCheckpoint(entry.checkpointId, now)) }
      expired.push(done)
      rows += done.rows
      bytes += done.bytes
    }
    return { dryRun, expired, rows, bytes, overBudget }
  }

  /** Give the space retention freed back to the file system (rewrites the file; can take a while). */
  async vacuum(): Promise<void> {
    await this.backend.vacuum()
  }

  /** Rebuild the search indexes from stored text. */
  async reindex(progress?: (done: number, total: number) => void): Promise<number> {
    return this.backend.reindex(indexViews, ANALYZER_VERSION, progress)
  }
}
