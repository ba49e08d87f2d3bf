/**
 * The work a deep fork chain's reads, searches, counts and seq-keyed checks do must not grow with
 * the chain's depth: the statements sent and their SQL text are the same at 40 and at 160 forks
 * deep (the bounds travel as one parameter). Before, the lineage was one statement per ancestor,
 * a read or search carried one SQL condition per ancestor (checked on every candidate row), and
 * the write-ahead check asked every ancestor for every seq below its fork point: at 5,000 deep a
 * search took 4-8 s and the check over 1,000 seqs 15-39 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'
import { measured as measuredWork, restoreDrivers } from './work.ts'

/** What must not grow with the depth: statements sent and their SQL text (the bounds' one parameter does grow). */
async function measured(run: () => Promise<unknown>): Promise<{ statements: number; sqlChars: number }> {
  const { statements, sqlChars } = await measuredWork(run)
  return { statements, sqlChars }
}

describe.each(TARGETS)('the work of a deep fork chain $name', target => {
  beforeAll(() => target.setup())
  afterAll(async () => {
    await target.teardown()
  })

  /** Per operation, the work it does on the newest session of a chain `depth` forks deep (each fork one row). */
  async function workAt(depth: number): Promise<Record<string, { statements: number; sqlChars: number }>> {
    const store = await ShadowStore.open(target.location())
    try {
      for (let index = 0; index < depth; index += 1) {
        await store.registerSession({ sessionId: `w${index}`, ...(index === 0 ? {} : { parentSessionId: `w${index - 1}`, forkSeq: index }) })
      }
      await store.append(Array.from({ length: depth }, (_, seq) => message(`w${seq}`, seq, `chain row ${seq} ${seq === 3 ? 'quartzite' : 'plain'}`)))
      const leaf = `w${depth - 1}`
      const seqs = Array.from({ length: 30 }, (_, seq) => seq)
      const hashes = new Map((await store.read({ sessionId: leaf }, { limit: 1_000 })).map(row => [row.seq, row.hash]))
      const work: Record<string, { statements: number; sqlChars: number }> = {}
      work['lineage'] = await measured(() => store.lineage(leaf))
      work['search'] = await measured(() => store.search('quartzite', { sessionId: leaf }))
      work['read whole'] = await measured(() => store.read({ sessionId: leaf }, { limit: 1_000 }))
      work['read window'] = await measured(() => store.read({ sessionId: leaf }, { fromSeq: 5, toSeq: 20 }))
      work['count'] = await measured(() => store.count({ sessionId: leaf }))
      work['count with a filter'] = await measured(() => store.count({ sessionId: leaf }, { fromSeq: 1 }))
      work['write-ahead check'] = await measured(() => store.confirm(leaf, seqs.map(seq => ({ seq, hash: hashes.get(seq)! }))))
      work['checkpoint'] = await measured(() => store.recordCheckpoint({ checkpointId: `${leaf}.c1`, sessionId: leaf, engine: 'test', status: 'committed', shadowedSeqs: seqs, createdAt: Date.now(), replaceSeq: depth }))
      work['lookups'] = await measured(async () => store.lookupAllInLineage(await store.lineage(leaf), seqs))
      // the answers themselves, so the counts are of work that found the rows
      expect((await store.read({ sessionId: leaf }, { limit: 1_000 })).map(row => row.seq)).toEqual(Array.from({ length: depth }, (_, seq) => seq))
      expect((await store.search('quartzite', { sessionId: leaf })).hits.map(hit => hit.message.seq)).toEqual([3])
      expect(await store.confirm(leaf, seqs.map(seq => ({ seq, hash: hashes.get(seq)! })))).toEqual({ missing: [], mismatched: [] })
      expect((await store.lookupAllInLineage(await store.lineage(leaf), seqs)).map(row => row.sessionId)).toEqual(seqs.map(seq => `w${seq}`))
      return work
    } finally {
      await store.close()
    }
  }

  it('a reconcile asks the owners of its events at once: on PostgreSQL one statement however many ancestors they belong to', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      const depth = 60
      const captured = (seq: number) => ({
        sessionId: `r${depth - 1}`, seq, type: 'user/message' as const, time: 1_000 + seq, turn: 1, step: 1, toolName: null,
        eventJson: JSON.stringify({ type: 'user/message', seq, time: 1_000 + seq, data: { content: [{ type: 'text', text: `reconciled ${seq}` }], source: { kind: 'user' } } }),
      })
      for (let index = 0; index < depth; index += 1) {
        await store.registerSession({ sessionId: `r${index}`, ...(index === 0 ? {} : { parentSessionId: `r${index - 1}`, forkSeq: index }) })
      }
      // the leaf's log: each event's row belongs to the fork that holds its seq (one ancestor each)
      const reconcile = (events: number) => store.ingest([{ op: 'reconcile', sessionId: `r${depth - 1}`, events: Array.from({ length: events }, (_, seq) => captured(seq)), ownFromSeq: Number.POSITIVE_INFINITY }])
      const few = await measured(() => reconcile(10))
      const many = await measured(() => reconcile(40))
      expect(await reconcile(40)).toMatchObject({ written: 0, unchanged: 40, replaced: 0 })
      expect((await store.read({ sessionId: `r${depth - 1}` })).map(row => row.sessionId)).toEqual(Array.from({ length: 40 }, (_, seq) => `r${seq}`))
      // SQLite looks each seq up with one cached statement; PostgreSQL was a round trip per ancestor
      if (target.name === 'postgres') expect(many.statements).toBe(few.statements)
      else expect(many.statements - few.statements).toBeLessThanOrEqual(30)
    } finally {
      await store.close()
    }
  }, 120_000)

  it('is the same at 40 and at 160 forks deep: statements and SQL text', async () => {
    const shallow = await workAt(40)
    const deep = await workAt(160)
    expect(deep).toEqual(shallow)
  }, 120_000)
})

afterAll(restoreDrivers)
