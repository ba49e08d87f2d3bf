/**
 * ShadowInvariantChecker: the contracts of Shadow Context's compaction, checked against a session
 * log event by event (plain TS; `../invariant.ts` wires it into dsh's invariant registry).
 *
 * - Committed checkpoint text never changes: one checkpoint id always carries the same bytes, in
 *   this log, after a resume, and in every fork that inherited it.
 * - Frozen checkpoints stay frozen: a digest or state pass never replaces a committed digest or
 *   index node (only an index rollup folds them, and it folds nothing else); only the one mutable
 *   state checkpoint may be replaced by a later state, and mask stubs by a later pass.
 * - After each committed pass the surface's tool pairing is balanced: every tool result answers an
 *   open call of the assistant message before it, no call is left open before the next message or
 *   at the end.
 * - Every elided seq has a confirmed row: checked asynchronously against the shadow store (a
 *   store that cannot answer is not a violation; a row that is missing or differs is).
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { hashEventJson } from '@dsh-shadow/store'
import { SHADOW_ENGINE } from '../capture/checkpoints.ts'
import { STATE_MARKER } from './digest.ts'
import { MASK_MARKER } from './mask.ts'

const ROLLUP = 'rollup-v1'
const INDEX_PREFIX = '[Shadow Context index '

/** What the write-ahead re-check needs: the store's answer for (seq, hash) pairs of a session. */
export type RowConfirmer = (sessionId: string, entries: ReadonlyArray<{ seq: number; hash: string }>) => Promise<{ missing: readonly number[]; mismatched: readonly number[] }>

interface PendingPass {
  readonly compactionId: string
  readonly shadowedSeqs: readonly number[]
}

interface SessionTrace {
  readonly events: SessionEvent[]
  pending: PendingPass | undefined
}

function checkpointText(event: SessionEvent): { id: string; text: string } | undefined {
  if (event.type !== 'user/message' || typeof event.surfaceOp !== 'object' || !isCompactCheckpointSource(event.data.source)) return undefined
  const id = String((event.data.source as { compactionId?: unknown }).compactionId)
  return { id, text: event.data.content.map(block => (block.type === 'text' ? block.text : '')).join('\n') }
}

/** Tool-pairing problems of a surface (event per seq), as DeepSeek would see the request. */
export function surfacePairingProblems(nodes: readonly number[], eventAt: (seq: number) => SessionEvent | undefined): string[] {
  const problems: string[] = []
  let open = new Set<string>()
  let caller: number | undefined
  for (const seq of nodes) {
    const event = eventAt(seq)
    if (event === undefined) { problems.push(`surface seq ${seq} has no event`); continue }
    if (event.type === 'tool/result') {
      const callId = event.data.message.source.callId
      if (!open.delete(callId)) problems.push(`tool result at seq ${seq} (${callId}) answers no open call of the assistant message before it${caller === undefined ? '' : ` (seq ${caller})`}`)
      continue
    }
    if (open.size > 0) problems.push(`${open.size} call(s) of seq ${caller} unanswered before seq ${seq}`)
    open = new Set()
    caller = undefined
    if (event.type === 'assistant/message') {
      for (const block of event.data.message.content) if (block.type === 'tool-call') open.add(block.id)
      if (open.size > 0) caller = seq
    }
  }
  if (open.size > 0) problems.push(`${open.size} call(s) of seq ${caller} unanswered at the end of the surface`)
  return problems
}

export class ShadowInvariantChecker {
  private readonly traces = new WeakMap<Session, SessionTrace>()
  /** Checkpoint text by id, across every session this checker saw (forks share their parent's). */
  private readonly texts = new Map<string, string>()
  private readonly fail: (message: string) => never
  private readonly confirmRows: RowConfirmer | undefined
  private readonly report: (error: unknown) => void
  /** Write-ahead re-checks in flight (tests await them). */
  private readonly checks = new Set<Promise<void>>()

  constructor(options: { fail: (message: string) => never; confirmRows?: RowConfirmer; report?: (error: unknown) => void }) {
    this.fail = options.fail
    this.confirmRows = options.confirmRows
    this.report = options.report ?? (() => undefined)
  }

  /** A session seen for the first time (created, resumed, forked): check its inherited log. */
  seed(session: Session): void {
    const trace: SessionTrace = { events: [], pending: undefined }
    this.traces.set(session, trace)
    for (const event of session.events) this.step(session, trace, event, false)
  }

  observe(session: Session, event: SessionEvent): void {
    const trace = this.traces.get(session)
    if (trace === undefined) {
      this.seed(session)
      return
    }
    if (event.seq < trace.events.length) return
    if (event.seq > trace.events.length) {
      // an event this checker was not shown: catch up from the log
      const all = session.events
      for (let index = trace.events.length; index < event.seq; index += 1) this.step(session, trace, all[index]!, false)
    }
    this.step(session, trace, event, true)
  }

  /** Resolves when every write-ahead re-check started so far has finished. */
  async settled(): Promise<void> {
    while (this.checks.size > 0) await Promise.all(this.checks)
  }

  private step(session: Session, trace: SessionTrace, event: SessionEvent, live: boolean): void {
    trace.events.push(event)
    if (event.type === 'compaction/start') trace.pending = undefined
    if (event.type === 'compaction/summary' && event.data.provider === SHADOW_ENGINE) {
      this.checkFrozen(trace, event.data.compactionId, event.data.model, event.data.shadowedSeqs)
      trace.pending = { compactionId: event.data.compactionId, shadowedSeqs: event.data.shadowedSeqs }
    }
    const checkpoint = checkpointText(event)
    if (checkpoint !== undefined) {
      const known = this.texts.get(checkpoint.id)
      if (known !== undefined && known !== checkpoint.text) this.fail(`committed checkpoint ${checkpoint.id} changed its text (session ${session.id}, seq ${event.seq})`)
      this.texts.set(checkpoint.id, checkpoint.text)
    }
    if (event.type === 'compaction/end') {
      const pass = trace.pending
      trace.pending = undefined
      if (pass === undefined || pass.compactionId !== event.data.compactionId || event.data.error !== undefined || !live) return
      const problems = surfacePairingProblems(session.surface.nodes, seq => trace.events[seq])
      if (problems.length > 0) this.fail(`tool pairing unbalanced after ${pass.compactionId}: ${problems.slice(0, 3).join('; ')}`)
      this.recheckRows(session.id, pass, trace.events)
    }
  }

  private checkFrozen(trace: SessionTrace, compactionId: string, model: string, seqs: readonly number[]): void {
    for (const seq of seqs) {
      const event = trace.events[seq]
      if (event === undefined) continue
      const checkpoint = checkpointText(event)
      if (model === ROLLUP) {
        if (checkpoint === undefined) this.fail(`index rollup ${compactionId} folds seq ${seq}, which is not a checkpoint`)
        continue
      }
      if (checkpoint !== undefined && !checkpoint.text.startsWith(STATE_MARKER) && !checkpoint.text.startsWith(MASK_MARKER)) {
        this.fail(`${compactionId} (${model}) replaces committed ${checkpoint.text.startsWith(INDEX_PREFIX) ? 'index' : 'checkpoint'} ${checkpoint.id}; committed checkpoints are frozen`)
      }
    }
  }

  private recheckRows(sessionId: string, pass: PendingPass, events: readonly SessionEvent[]): void {
    if (this.confirmRows === undefined) return
    const entries = pass.shadowedSeqs.flatMap(seq => (events[seq] === undefined ? [] : [{ seq, hash: hashEventJson(JSON.stringify(events[seq])) }]))
    const check = this.confirmRows(sessionId, entries).then(answer => {
      if (answer.missing.length + answer.mismatched.length === 0) return
      try {
        this.fail(`${pass.compactionId} elided ${answer.missing.length} seq(s) the shadow store does not hold and ${answer.mismatched.length} it holds differently (first: ${[...answer.missing, ...answer.mismatched][0]})`)
      } catch (error) {
        this.report(error)
      }
    }, () => undefined) // a store that cannot answer now is an outage, not a broken contract
    this.checks.add(check)
    void check.finally(() => this.checks.delete(check))
  }
}
