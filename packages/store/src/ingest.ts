/** A capture batch applied in order: sessions, events, reconciliation against the log, checkpoints. */
import type { ShadowBackend } from './backend.ts'
import { invalid } from './errors.ts'
import { rowFromCaptured, type CapturedEvent } from './events.ts'
import { LineageOwners } from './lineage-owners.ts'
import { ownerOf } from './scope.ts'
import type { ShadowStore } from './store.ts'
import type { AppendResult, CheckpointInput, ShadowSessionInput } from './types.ts'
import { checkMessage } from './messages.ts'
import type { ShadowMessageInput } from './types.ts'
import { assertArray, assertSeq, assertString } from './validate.ts'

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

/** A captured event as a row, or INVALID_INPUT (its JSON is not JSON, it is not an object). */
function capturedRow(event: unknown): ShadowMessageInput {
  if (typeof event !== 'object' || event === null) throw invalid('a captured event must be an object')
  let row: ShadowMessageInput
  try {
    row = rowFromCaptured(event as CapturedEvent)
  } catch (error) {
    throw invalid(`a captured event cannot be read: ${error instanceof Error ? error.message : String(error)}`)
  }
  checkMessage(row)
  return row
}

/**
 * Check every operation of a batch before any is applied (a bad input changes nothing: the
 * capture drops a refused batch whole), and read each events op's rows once.
 */
function checkBatch(ops: readonly IngestOp[]): Map<IngestOp, ShadowMessageInput[]> {
  const rows = new Map<IngestOp, ShadowMessageInput[]>()
  for (const op of ops) {
    switch (op.op) {
      case 'session':
        if (typeof op.session !== 'object' || op.session === null) throw invalid('a session operation needs a session')
        assertString(op.session.sessionId, 'sessionId')
        break
      case 'events':
        rows.set(op, assertArray(op.events, 'events').map(capturedRow))
        break
      case 'reconcile':
        assertString(op.sessionId, 'sessionId')
        // Infinity: remove nothing (a repair that only adds)
        if (op.ownFromSeq !== Number.POSITIVE_INFINITY) assertSeq(op.ownFromSeq, 'ownFromSeq')
        for (const event of assertArray(op.events, 'events')) {
          const given = event as Partial<CapturedEvent> | null
          if (typeof given !== 'object' || given === null || typeof given.eventJson !== 'string') throw invalid('a captured event must be an object with its eventJson')
          assertSeq(given.seq, 'seq')
        }
        break
      case 'checkpoint':
        if (typeof op.checkpoint !== 'object' || op.checkpoint === null) throw invalid('a checkpoint operation needs a checkpoint')
        assertString(op.checkpoint.checkpointId, 'checkpointId')
        assertString(op.checkpoint.sessionId, 'sessionId')
        break
      default:
        throw invalid(`unknown ingest operation ${JSON.stringify((op as { op?: unknown })?.op)}`)
    }
  }
  return rows
}

/** Apply a capture batch in order (what the capture plugin sends). */
export async function applyIngest(store: ShadowStore, ops: readonly IngestOp[]): Promise<IngestReport> {
  if (!Array.isArray(ops)) throw invalid('ingest takes an array of operations')
  const eventRows = checkBatch(ops)
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
        count(await store.append(eventRows.get(op)!))
        break
      case 'reconcile': {
        // Attribute each log event to the lineage segment that owns its row: a fork's prefix
        // belongs to its parent (or further up), never copied into the child.
        const owners = new LineageOwners(await store.lineage(op.sessionId))
        const bySession = new Map<string, CapturedEvent[]>()
        for (const event of op.events) {
          const owner = owners.ownerAt(event.seq)?.sessionId ?? op.sessionId
          const list = bySession.get(owner)
          const attributed = owner === event.sessionId ? event : { ...event, sessionId: owner }
          if (list === undefined) bySession.set(owner, [attributed])
          else list.push(attributed)
        }
        // the stored hashes of the events' seqs only, every owner asked at once (PostgreSQL: one
        // statement): a fork 5,000 deep read each ancestor's whole hash list, one round trip each
        const owned = [...bySession]
        const storedHashes = await Promise.all(owned.map(async ([sessionId, events]) => new Map((await store.backend.messageHashesFor(sessionId, events.map(event => event.seq))).map(row => [row.seq, row.hash]))))
        for (const [index, [, events]] of owned.entries()) {
          const stored = storedHashes[index]!
          const stale = events.filter(event => stored.get(event.seq) !== store.hashOf(event.eventJson))
          count(await store.append(stale.map(capturedRow)))
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
        const existing = await store.backend.getCheckpoint(op.checkpoint.checkpointId)
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
    }
  }
  return { written, unchanged, replaced, removed, checkpoints }
}

/** Mark rows elided unless an earlier checkpoint already did (the first elision is the one a reader follows). */
async function markElidedIfUnmarked(backend: ShadowBackend, sessionId: string, seqs: readonly number[], checkpointId: string): Promise<void> {
  const marks = await backend.messageHashesFor(sessionId, seqs)
  await backend.markElided(sessionId, marks.filter(mark => mark.elidedBy === null).map(mark => mark.seq), checkpointId)
}
