/**
 * ShadowCapture (`ctx.shadowCapture`): keeps the shadow store equal to the model-visible part of
 * every dsh session it can see. It never appends to the dsh log.
 *
 * - Live: `session/event` only queues a reference to the frozen event (O(1) on the append path);
 *   serialization and the store write happen in the next macrotask, in a worker thread by default.
 * - The store is deliberately not part of dsh's `session/flush` (which the checkpoint policy awaits
 *   before every request): the log is the authority, and a crash is repaired by reconciliation.
 *   `confirm()` is the write-ahead check the compaction engine runs before anything leaves the
 *   surface (it re-sends what is missing).
 * - Restart, resume and fork: a seeded session is reconciled from its log (missing rows written,
 *   rows of a lost lifetime replaced or removed). A fork's prefix stays its parent's rows.
 * - Checkpoints of any engine are recorded from `compaction/summary` + the replacing message.
 */
import { Service, type Context } from '@deepseek-ai/cordis'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { type CapturedEvent, type CheckpointInput, failpoint, type IngestOp, type IngestReport, type RedactionOptions, redactEventJson, Redactor, type RetentionPolicy, type RetentionReport, rowHash, sessionTag, type ShadowStoreApi, ShadowStoreError } from '@dsh-shadow/store'
import { RedactionRegistry } from '../redaction-registry.ts'
import { resolveStorePath } from '../store-path.ts'
import { stepCheckpoint, type PendingSummary } from './checkpoints.ts'
import { advance, captureEvent, captureLog, isCapturable, type CaptureCursor } from './cursor.ts'
import { opChars, splitBySession, type QueueItem, type SessionBatch, type WeightedOp } from './batch.ts'
import { checkCaptureConfig, retentionPolicy, RETRY_CHARS_DEFAULT, ShadowCaptureConfigSchema, type CaptureFailure, type CaptureHealth, type ConfirmResult, type ShadowCaptureConfig } from './config.ts'
import { acquireStore, releaseStore, type StoreOpenOptions } from './store-handle.ts'
import { presetOfSession, sessionOps, standingPreset } from './sessions.ts'

export * from './config.ts'

declare module '@deepseek-ai/cordis' {
  interface Context {
    shadowCapture: ShadowCapture
  }
  interface Events {
    /** The shadow store refused a write or a check; Shadow Context keeps running and fails closed. */
    'shadow-context/failure'(session: Session | undefined, failure: CaptureFailure): void
  }
}

interface SessionState {
  readonly cursor: CaptureCursor
  summary: PendingSummary | undefined
  /** Whether the session's row (and its fork parent's) is queued: from its first stored message on. */
  registered: boolean
}

const WARN_INTERVAL_MS = 60_000
const REOPEN_INTERVAL_MS = 500

function failureOf(error: unknown): CaptureFailure {
  const code = error instanceof ShadowStoreError ? error.code : 'UNAVAILABLE'
  return { time: Date.now(), code, message: error instanceof Error ? error.message : String(error) }
}

export class ShadowCapture extends Service {
  static inject = ['sessions']
  static Config = ShadowCaptureConfigSchema

  readonly config: Required<Omit<ShadowCaptureConfig, 'home' | 'path' | 'maxBytes' | 'retention'>> & Pick<ShadowCaptureConfig, 'home' | 'maxBytes' | 'retention'>
  readonly path: string
  readonly health: CaptureHealth = { captured: 0, batches: 0, failures: 0, pending: 0, lastFailure: null, rows: { written: 0, unchanged: 0, replaced: 0, removed: 0 } }
  private api: ShadowStoreApi | undefined
  private opening: Promise<ShadowStoreApi>
  private lastWarning: { message: string; time: number } | undefined
  private lastOpenAttempt = 0
  private openFailure: unknown
  private lastSuccess = 0
  private readonly states = new WeakMap<Session, SessionState>()
  private queue: QueueItem[] = []
  /** Failed batches kept for retry, per session (in first-failed order). */
  private readonly retry = new Map<string, SessionBatch>()
  /** Sessions whose resident search index this process asked the store to build (once each). */
  private readonly warmed = new Set<string>()
  private chain: Promise<void> = Promise.resolve()
  private scheduled: NodeJS.Timeout | undefined
  private stopped = false
  /** The store's redaction policy (this capture's config owns it), for what is derived outside the store. */
  private readonly redactor: Redactor | undefined
  private readonly tags = new Map<string, string>()

  constructor(ctx: Context, config: ShadowCaptureConfig = {}) {
    // a misspelt option is refused before anything starts
    const resolved = checkCaptureConfig(config)
    super(ctx, 'shadowCapture')
    this.config = {
      ...(resolved.home === undefined ? {} : { home: resolved.home }),
      worker: resolved.worker ?? true,
      synchronous: resolved.synchronous ?? 'normal',
      retryLimit: resolved.retryLimit ?? 10_000,
      retryChars: resolved.retryChars ?? RETRY_CHARS_DEFAULT,
      batchDelayMs: resolved.batchDelayMs ?? 200,
      busyTimeoutMs: resolved.busyTimeoutMs ?? 5_000,
      redact: resolved.redact ?? false,
      redactPatterns: resolved.redactPatterns ?? [],
      ...(resolved.maxBytes === undefined ? {} : { maxBytes: resolved.maxBytes }),
      ...(resolved.retention === undefined ? {} : { retention: resolved.retention }),
    }
    this.path = resolveStorePath(resolved.path, resolved.home)
    const redaction = this.redactionPolicy()
    this.redactor = redaction === false ? undefined : new Redactor(redaction)
    // readers of free text outside this composition (the host's projection in a web profile) apply it too
    const redactor = this.redactor
    if (redactor !== undefined) ctx.effect(() => RedactionRegistry.add(redactor), 'shadow-context redaction policy')
    // The service is provided at once and the store opens behind it: events queue meanwhile.
    // (An agent preset checks its rows' services right after mounting; an async start would miss it.)
    this.opening = this.open()
    const policy = retentionPolicy(this.config.retention)
    if (policy !== undefined) {
      const every = (this.config.retention?.intervalMinutes ?? 60) * 60_000
      void this.opening.then(() => this.applyRetention(policy), () => undefined)
      ctx.effect(() => {
        const timer = setInterval(() => void this.applyRetention(policy), every)
        timer.unref()
        return () => clearInterval(timer)
      }, 'shadow retention')
    }
    ctx.on('session/created', session => this.track(session))
    ctx.on('session/event', (session, event) => this.onEvent(session, event))
    ctx.effect(() => async () => {
      this.stopped = true
      try {
        await this.flush()
      } catch {
        // shutdown must not fail on a store that already failed; the log stays the authority
      }
      try {
        await this.opening
      } catch {
        return // not open: nothing to release
      }
      await releaseStore(this.path)
    }, 'shadow capture store')
    // ctx.sessions is host-wide, but this capture may run in one preset's standing composition
    // (dsh web): a session of another preset must never reach the store. Sessions the preset
    // listener sees later are tracked on their first event.
    const preset = standingPreset(ctx)
    for (const session of ctx.sessions.list()) {
      const own = presetOfSession(session)
      if (own === undefined || own === preset) this.track(session)
    }
  }

  /** The capture's config owns the store's redaction policy (the CLI and other openers follow it). */
  private redactionPolicy(): RedactionOptions | false {
    return this.config.redact || this.config.redactPatterns.length > 0 ? { patterns: this.config.redactPatterns } : false
  }

  /**
   * Text as the store would keep it: redacted when redaction is on. Whatever is derived from
   * messages outside the store (checkpoint digests, rollups, summaries) goes through this, so a
   * secret the store redacts never comes back in a checkpoint.
   */
  redactText(text: string): string {
    return this.redactor === undefined ? text : this.redactor.text(text)
  }

  /** A log event with every string redacted as the store redacts its event JSON (the same event when off). */
  redactEvent<T extends SessionEvent>(event: T): T {
    return this.redactor === undefined ? event : JSON.parse(redactEventJson(JSON.stringify(event), this.redactor)) as T
  }

  /** Any JSON value with every string redacted as the store redacts event JSON (the same value when off). */
  redactValue<T>(value: T): T {
    return this.redactor === undefined ? value : JSON.parse(this.redactor.json(JSON.stringify(value))) as T
  }

  /**
   * The session's tag as the store assigned it (longer than the default after a tag collision),
   * for checkpoint ids and footers. Falls back to the default tag when the store cannot answer:
   * such a pass fails its write-ahead check anyway.
   */
  async tag(sessionId: string): Promise<string> {
    try {
      await this.flush().catch(() => undefined)
      const tag = (await (await this.opened()).session(sessionId))?.tag
      if (tag !== undefined) this.tags.set(sessionId, tag)
      return tag ?? sessionTag(sessionId)
    } catch {
      return sessionTag(sessionId)
    }
  }

  /** The tag last learned from the store for this session, else the default one (no waiting). */
  knownTag(sessionId: string): string {
    return this.tags.get(sessionId) ?? sessionTag(sessionId)
  }

  private open(): Promise<ShadowStoreApi> {
    let lastProgress = 0
    const options: StoreOpenOptions = {
      synchronous: this.config.synchronous,
      busyTimeoutMs: this.config.busyTimeoutMs,
      ...(this.config.maxBytes === undefined ? {} : { maxBytes: this.config.maxBytes }),
      redact: this.redactionPolicy(),
      // turning redaction on rewrites the rows already stored; say how far it got
      onProgress: (task, done, total) => {
        if (task !== 'redact') return
        const now = Date.now()
        if (done < total && now - lastProgress < 5_000) return
        lastProgress = now
        this.ctx.logger.info(`Shadow Context: redacting stored messages, ${done} of ${total}`)
      },
    }
    this.lastOpenAttempt = Date.now()
    const attempt = acquireStore(this.path, this.config.worker, options).then(api => {
      this.api = api
      return api
    })
    // Reported here once; the write or check that awaited it does not report the same error again.
    attempt.catch((error: unknown) => {
      this.openFailure = error
      this.reportFailure(undefined, failureOf(error))
    })
    return attempt
  }

  /**
   * The store, once open. If opening failed (locked, corrupt, unreadable), each call tries again,
   * so a store repaired or released while dsh runs is picked up without a restart; until then
   * the typed open failure is thrown and Shadow Context fails closed.
   */
  async opened(): Promise<ShadowStoreApi> {
    const current = this.opening
    try {
      return await current
    } catch (error) {
      if (this.stopped) throw error
      // Concurrent callers share one new attempt; a broken store is retried at most every
      // REOPEN_INTERVAL_MS (an attempt starts a worker thread and opens SQLite).
      if (this.opening === current) {
        if (Date.now() - this.lastOpenAttempt < REOPEN_INTERVAL_MS) throw error
        this.opening = this.open()
      }
      return this.opening
    }
  }

  /** The store this capture writes to, when already open (reads are safe from any caller). */
  get store(): ShadowStoreApi {
    if (this.api === undefined) throw new ShadowStoreError('UNAVAILABLE', 'shadow store is not open (yet)')
    return this.api
  }

  private state(session: Session): SessionState {
    let state = this.states.get(session)
    if (state === undefined) state = this.track(session)
    return state
  }

  /** Register a session; a seeded one (resume, fork, late mount) is reconciled from its log. */
  private track(session: Session): SessionState {
    const existing = this.states.get(session)
    if (existing !== undefined) return existing
    const header = session.header
    const parent = header.parentSession
    const events = session.events
    const { captured, cursor } = captureLog(session.id, events)
    const state: SessionState = { cursor, summary: undefined, registered: false }
    this.states.set(session, state)
    if (captured.length > 0) this.register(session, state)
    if (events.length > 0) {
      const ownFromSeq = parent === undefined ? 0 : header.seedLength ?? 0
      this.enqueue({ op: 'reconcile', sessionId: session.id, events: captured, ownFromSeq }, captured.length)
      this.noteCheckpoints(session, events)
    }
    return state
  }

  /**
   * Queue the session's row. Not at creation: a blank web session that switches to another preset
   * before its first message never belongs here, so nothing of it may be stored.
   */
  private register(session: Session, state: SessionState): void {
    if (state.registered) return
    state.registered = true
    for (const op of sessionOps(session)) this.enqueue(op, 1)
  }

  /** Re-derive checkpoints already in a seeded log (idempotent upserts in the store). */
  private noteCheckpoints(session: Session, events: readonly SessionEvent[]): void {
    let summary: PendingSummary | undefined
    for (const event of events) summary = this.checkpointStep(session, event, summary)
  }

  private onEvent(session: Session, event: SessionEvent): void {
    if (this.stopped) return
    const state = this.state(session)
    const toolName = advance(state.cursor, event)
    state.summary = this.checkpointStep(session, event, state.summary)
    if (!isCapturable(event)) return
    this.register(session, state)
    this.queue.push({ kind: 'event', session, event, turn: state.cursor.turn, step: state.cursor.step, toolName })
    this.health.captured += 1
    this.health.pending += 1
    this.schedule()
  }

  /** Follow compaction/summary → replacing checkpoint message, for any engine. */
  private checkpointStep(session: Session, event: SessionEvent, summary: PendingSummary | undefined): PendingSummary | undefined {
    const step = stepCheckpoint(session.id, event, summary)
    if (step.checkpoint !== undefined) {
      this.register(session, this.state(session))
      this.enqueue({ op: 'checkpoint', elide: true, checkpoint: step.checkpoint }, 1)
    }
    return step.summary
  }

  /** Record an engine's details of a checkpoint (footer, trigger, sizes), after its events. */
  noteCheckpoint(checkpoint: CheckpointInput): void {
    this.enqueue({ op: 'checkpoint', checkpoint, elide: true }, 1)
  }

  private enqueue(op: IngestOp, weight: number): void {
    this.queue.push({ kind: 'op', op, weight })
    this.health.pending += weight
    this.schedule()
  }

  private schedule(): void {
    if (this.scheduled !== undefined) return
    this.scheduled = setTimeout(() => {
      this.scheduled = undefined
      void this.drain().catch(() => undefined)
    }, this.config.batchDelayMs)
    // pending rows are repaired from the log after a restart; they must not hold the process open
    this.scheduled.unref()
  }

  /** Serialize the queue into ops and hand them to the store, in order. */
  private drain(): Promise<void> {
    if (this.scheduled !== undefined) {
      clearTimeout(this.scheduled)
      this.scheduled = undefined
    }
    const items = this.queue
    this.queue = []
    const ops: WeightedOp[] = []
    let events: CapturedEvent[] = []
    const flushEvents = (): void => {
      if (events.length > 0) ops.push({ op: { op: 'events', events }, weight: events.length })
      events = []
    }
    for (const item of items) {
      if (item.kind === 'event') {
        events.push(captureEvent(item.session.id, item.event, item, item.toolName))
        continue
      }
      flushEvents()
      ops.push({ op: item.op, weight: item.weight })
    }
    flushEvents()
    const run = this.chain.then(() => this.write(ops))
    // A failed write must not block later ones; the caller of this drain still sees the failure.
    this.chain = run.catch(() => undefined)
    return run
  }

  /**
   * Write each session's ops as its own batch, in first-seen order: a session the store refuses
   * (a hostile id, a conflict) keeps only its own ops for retry and never holds up another's.
   */
  private async write(ops: readonly WeightedOp[]): Promise<void> {
    const batches = new Map<string, SessionBatch>()
    for (const [sessionId, retry] of this.retry) batches.set(sessionId, { ops: [...retry.ops], weight: retry.weight })
    this.retry.clear()
    for (const entry of splitBySession(ops)) {
      const batch = batches.get(entry.sessionId) ?? { ops: [], weight: 0 }
      batch.ops.push(entry.op)
      batch.weight += entry.weight
      batches.set(entry.sessionId, batch)
    }
    let failed: unknown
    for (const [sessionId, batch] of batches) {
      try {
        await this.writeBatch(sessionId, batch)
      } catch (error) {
        failed ??= error
      }
    }
    if (failed !== undefined) throw failed
  }

  private async writeBatch(sessionId: string, batch: SessionBatch): Promise<void> {
    if (batch.ops.length === 0) return
    try {
      failpoint('capture.before-write')
      const store = await this.opened()
      this.count(await store.ingest(batch.ops))
      failpoint('capture.after-write')
      // the session this process captures is the one its recall tools search: its resident index is
      // built now, in the store's worker, in slices (a resumed session's first search does not wait)
      if (!this.warmed.has(sessionId)) {
        this.warmed.add(sessionId)
        void store.warm(sessionId).catch(() => undefined)
      }
      this.health.batches += 1
      this.lastSuccess = Date.now()
      this.health.pending = Math.max(0, this.health.pending - batch.weight)
    } catch (error) {
      this.health.failures += 1
      const failure = failureOf(error)
      this.health.lastFailure = failure
      // Keep the batch for the next attempt, within bounds; past them the log reconciles later.
      // A refused input is refused again: it is reported, not retried.
      const retried = [...this.retry.values()].reduce((sum, entry) => sum + entry.weight, 0)
      if (failure.code !== 'INVALID_INPUT' && retried + batch.weight <= this.config.retryLimit) this.retry.set(sessionId, this.withinRetryChars(sessionId, batch))
      else this.health.pending = Math.max(0, this.health.pending - batch.weight)
      if (error !== this.openFailure) this.reportFailure(undefined, failure)
      throw error
    }
  }

  /**
   * The batch as kept for retry: past `retryChars` of event JSON (this batch and the other kept
   * ones), its events and reconciles are dropped: the write-ahead check re-sends from the log
   * whatever a pass needs, and a restart reconciles the rest. Session and checkpoint ops are small
   * and stay, so no checkpoint is lost meanwhile.
   */
  private withinRetryChars(sessionId: string, batch: SessionBatch): SessionBatch {
    let others = 0
    for (const [id, kept] of this.retry) if (id !== sessionId) others += kept.ops.reduce((sum, op) => sum + opChars(op), 0)
    if (others + batch.ops.reduce((sum, op) => sum + opChars(op), 0) <= this.config.retryChars) return batch
    const ops = batch.ops.filter(op => op.op !== 'events' && op.op !== 'reconcile')
    const dropped = batch.ops.filter(op => op.op === 'events' || op.op === 'reconcile').reduce((sum, op) => sum + (op.op === 'events' || op.op === 'reconcile' ? op.events.length : 0), 0)
    this.health.pending = Math.max(0, this.health.pending - dropped)
    return { ops, weight: Math.max(0, batch.weight - dropped) }
  }

  private count(report: IngestReport): void {
    this.health.rows.written += report.written
    this.health.rows.unchanged += report.unchanged
    this.health.rows.replaced += report.replaced
    this.health.rows.removed += report.removed
  }

  /** False while the last store write failed and none has succeeded since. */
  get healthy(): boolean {
    return this.health.lastFailure === null || this.lastSuccess >= this.health.lastFailure.time
  }

  reportFailure(session: Session | undefined, failure: CaptureFailure): void {
    this.health.lastFailure = failure
    // A broken store fails every batch; say so once a minute, not five times a second.
    const last = this.lastWarning
    if (last === undefined || last.message !== failure.message || failure.time - last.time >= WARN_INTERVAL_MS) {
      this.lastWarning = { message: failure.message, time: failure.time }
      this.ctx.logger.warn(`Shadow Context: ${failure.message}`)
    }
    this.ctx.emit('shadow-context/failure', session, failure)
  }

  /**
   * Apply the retention budget, in line with capture writes. Originals a checkpoint took off the
   * surface go first, oldest first; the live surface is never touched. A failure is reported and
   * retried at the next interval; it never fails capture.
   */
  async applyRetention(policy: RetentionPolicy): Promise<RetentionReport | undefined> {
    const run = this.chain.then(async () => (await this.opened()).gc(policy))
    this.chain = run.then(() => undefined, () => undefined)
    try {
      const report = await run
      if (report.rows > 0) this.ctx.logger.info(`Shadow Context retention: dropped ${report.rows} originals (${report.bytes} bytes) of ${report.expired.length} checkpoints`)
      return report
    } catch (error) {
      this.ctx.logger.warn(`Shadow Context retention failed: ${error instanceof Error ? error.message : String(error)}`)
      return undefined
    }
  }

  /** Write everything captured so far and wait for the store to commit it. */
  async flush(): Promise<void> {
    await this.drain()
  }

  /**
   * The write-ahead check: are these seqs of the session durably stored exactly as the log has
   * them? Missing or stale rows are re-sent from the log once before answering. `event` looks an
   * event up by seq (the engine's log index): `session.events` copies the whole log.
   */
  async confirm(session: Session, seqs: readonly number[], event?: (seq: number) => SessionEvent | undefined): Promise<ConfirmResult> {
    // another session's refused batch is no reason to refuse this one: the check below decides
    await this.flush().catch(() => undefined)
    try {
      return await this.confirmIn(await this.opened(), session, seqs, event)
    } catch (error) {
      // a store that cannot answer the write-ahead check is failing, whatever the last batch did
      if (!(error instanceof ShadowStoreError && error.code === 'INVALID_INPUT')) {
        this.health.failures += 1
        if (error !== this.openFailure) this.reportFailure(session, failureOf(error))
      }
      throw error
    }
  }

  private async confirmIn(store: ShadowStoreApi, session: Session, seqs: readonly number[], lookup?: (seq: number) => SessionEvent | undefined): Promise<ConfirmResult> {
    const at = lookup ?? ((events: readonly SessionEvent[]) => (seq: number) => events[seq])(session.events)
    const entries = seqs.map(seq => {
      let event: SessionEvent | undefined
      try {
        event = at(seq)
      } catch {
        event = undefined
      }
      if (event === undefined || event.seq !== seq) throw new ShadowStoreError('INVALID_INPUT', `session ${session.id} has no event at seq ${seq}`)
      return { seq, hash: rowHash(JSON.stringify(event), this.redactor) }
    })
    const first = await store.confirm(session.id, entries)
    if (first.missing.length === 0 && first.mismatched.length === 0) return { ok: true, missing: [], mismatched: [], repaired: 0 }
    const wanted = new Set([...first.missing, ...first.mismatched])
    // the repair path (rows missing or stale) folds the whole log once: it is not a pass's normal cost
    // (only the wanted events are serialized: the log may hold many megabytes of tool outputs)
    const repair = captureLog(session.id, session.events, wanted).captured
    // rows gone from under a running session (`dsh-shadow forget` in another process) took its
    // row with them, and appends since left a bare one: the repair writes the whole session again
    this.count(await store.ingest([...sessionOps(session), { op: 'reconcile', sessionId: session.id, events: repair, ownFromSeq: Number.POSITIVE_INFINITY }]))
    const second = await store.confirm(session.id, entries)
    return {
      ok: second.missing.length === 0 && second.mismatched.length === 0,
      missing: second.missing,
      mismatched: second.mismatched,
      repaired: repair.length,
    }
  }
}
