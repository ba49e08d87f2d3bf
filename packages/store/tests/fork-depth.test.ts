/**
 * A fork chain deeper than SQLite's expression depth limit (1000): every read and search of the
 * newest session carries one (session, seq bound) condition per ancestor. Before, SQLite refused
 * the query ("Expression tree is too large"): each of them failed UNAVAILABLE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

const DEPTH = 1_100

describe.each(TARGETS)('a fork chain $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it(`${DEPTH} forks deep: the newest session reads, counts and searches its whole history`, async () => {
    const store = await ShadowStore.open(target.location())
    try {
      // session f<i> is forked from f<i-1> at seq i and holds its own row at seq i
      for (let index = 0; index < DEPTH; index += 1) {
        await store.registerSession({ sessionId: `f${index}`, ...(index === 0 ? {} : { parentSessionId: `f${index - 1}`, forkSeq: index }) })
      }
      for (let start = 0; start < DEPTH; start += 500) {
        await store.append(Array.from({ length: Math.min(500, DEPTH - start) }, (_, offset) => message(`f${start + offset}`, start + offset, `depth row ${start + offset} ${start + offset === 3 ? 'quartzite' : 'plain'}`)))
      }
      const leaf = `f${DEPTH - 1}`
      expect(await store.lineage(leaf)).toHaveLength(DEPTH)
      const rows = await store.read({ sessionId: leaf }, { limit: 5_000 })
      expect(rows.map(row => row.seq)).toEqual(Array.from({ length: DEPTH }, (_, seq) => seq))
      expect(rows[3]!.sessionId).toBe('f3')
      expect((await store.read({ sessionId: leaf }, { limit: 2, descending: true })).map(row => row.seq)).toEqual([DEPTH - 1, DEPTH - 2])
      expect(await store.count({ sessionId: leaf })).toBe(DEPTH)
      const found = await store.search('quartzite', { sessionId: leaf })
      expect(found.hits.map(hit => hit.message.shadowId)).toEqual([rows[3]!.shadowId])
      expect((await store.search('quartzite', { sessionId: leaf, allSessions: true })).hits).toHaveLength(1)
      await store.recordCheckpoint({ checkpointId: `${leaf}.c1`, sessionId: leaf, engine: 'test', status: 'committed', shadowedSeqs: [2, 3, 4], createdAt: Date.now(), replaceSeq: DEPTH })
      expect((await store.read({ sessionId: leaf }, { elidedBy: `${leaf}.c1` })).map(row => row.seq)).toEqual([2, 3, 4])
    } finally {
      await store.close()
    }
  }, 120_000)
})
