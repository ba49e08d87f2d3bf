/** A capture batch applied in order: sessions, events, reconciliation against the log, checkpoints. */
import type { ShadowBackend } from './backend.ts'
import { invalid } from './errors.ts'
import { rowFromCaptured, type CapturedEvent } from './events.ts'
import { ownerOf } from './scope.ts'
import type { ShadowStore } from './store.ts'
import type { AppendResult, CheckpointInput, ShadowSessionInput } from './types.ts'
import { assertString } from './validate.ts'

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

/** Apply a capture batch in order (what the capture plugin sends). */
export async function applyIngest(store: ShadowStore, ops: readonly IngestOp[]): Promise<IngestReport> {
  if (!Array.isArray(ops)) throw invalid('ingest takes an array of operations')
  // a batch written into a deleted file would be lost at the next restart: refuse it now
  await store.backend.assertInPlace()
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
        await store.registerSession(op.session)
        break
      case 'events':
        count(await store.append(op.events.map(rowFromCaptured)))
        break
      case 'reconcile': {
        // Attribute each log event to the lineage segment that owns its row: a fork's prefix
        // belongs to its parent (or further up), never copied into the child.
        const segments = await store.lineage(op.sessionId)
        const bySession = new Map<string, CapturedEvent[]>()
        for (const event of op.events) {
          const owner = ownerOf(segments, event.seq) ?? op.sessionId
          const list = bySession.get(owner) ?? []
          list.push(owner === event.sessionId ? event : { ...event, sessionId: owner })
          bySession.set(owner, list)
        }
        for (const [sessionId, events] of bySession) {
          const stored = new Map((await store.hashes(sessionId)).map(row => [row.seq, row.hash]))
          const stale = events.filter(event => stored.get(event.seq) !== store.hashOf(event.eventJson))
          count(await store.append(stale.map(rowFromCaptured)))
          unchanged += events.length - stale.length
        }
        const own = new Set<number>()
        for (const event of bySession.get(op.sessionId) ?? []) own.add(event.seq)
        const extra = (await store.hashes(op.sessionId)).map(row => row.seq).filter(seq => seq >= op.ownFromSeq && !own.has(seq))
        removed += await store.remove(op.sessionId, extra)
        break
      }
      case 'checkpoint': {
        // A fork's seed repeats its ancestors' checkpoints: they stay the ancestors'.
        const existing = await store.backend.getCheckpoint(assertString(op.checkpoint?.checkpointId, 'checkpointId'))
        let owner = existing?.sessionId ?? op.checkpoint.sessionId
        if (existing === undefined && typeof op.checkpoint.replaceSeq === 'number') {
          const segments = await store.lineage(op.checkpoint.sessionId)
          owner = ownerOf(segments, op.checkpoint.replaceSeq) ?? owner
        }
        const recorded = await store.recordCheckpoint({ ...op.checkpoint, sessionId: owner })
        // Marks belong to the session that compacted: only its own rows carry them. Rows it
        // inherited from an ancestor are shown in its checkpoint when it reads (elision-view.ts).
        if (op.elide && recorded.status === 'committed') await markElidedIfUnmarked(store.backend, recorded.sessionId, recorded.shadowedSeqs, recorded.checkpointId)
        checkpoints += 1
        break
      }
      default:
        throw invalid(`unknown ingest operation ${JSON.stringify((op as { op?: unknown })?.op)}`)
    }
  }
  return { written, unchanged, replaced, removed, checkpoints }
}

/** Mark rows elided unless an earlier checkpoint already did (the first elision is the one a reader follows). */
async function markElidedIfUnmarked(backend: ShadowBackend, sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
  const marks = await backend.messageHashesFor(sessionId, seqs)
  await backend.markElided(sessionId, marks.filter(mark => mark.elidedBy === null).map(mark => mark.seq), checkpointId)
}
