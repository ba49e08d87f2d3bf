/**
 * The work of a workspace or allSessions search, read, count and scope check must not grow with
 * the sessions the scope holds when the answer does not: the same statements, the same bound
 * parameters (their characters) and the same rows returned by them at 80 and at 320 sessions.
 * Before, every such call listed every session of the scope (a row each), passed all their ids
 * as one parameter, and SQLite's whole-store check bound them again: at 50k sessions a workspace
 * search took 0.3-0.6 s, at 200k 2.4 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, type ShadowMessageInput } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'
import { measured as measuredWork, restoreDrivers, type Work } from './work.ts'

/** What must not grow with the sessions: statements, their SQL text, bound parameters, rows returned. */
async function measured(run: () => Promise<unknown>): Promise<Omit<Work, 'writeTransactions'>> {
  const { writeTransactions: _, ...work } = await measuredWork(run)
  return work
}

const BASE = Date.UTC(2026, 10, 10, 8, 0, 0)

describe.each(TARGETS)('the work of a wide scope at many sessions $name', target => {
  beforeAll(() => target.setup())
  afterAll(async () => {
    await target.teardown()
  })

  /**
   * Per operation, the work it does in a store of `sessions` sessions of one workspace (two rows
   * each; ids of one length, so a listing's size is the only thing that could differ), five of
   * them holding the searched word, a fork of the first, and a few sessions of another workspace.
   */
  async function workAt(sessions: number): Promise<Record<string, Omit<Work, 'writeTransactions'>>> {
    const store = await ShadowStore.open(target.location())
    try {
      const id = (index: number) => `s${String(index).padStart(5, '0')}`
      const rows: ShadowMessageInput[] = []
      for (let index = 0; index < sessions; index += 1) {
        await store.registerSession({ sessionId: id(index), workspace: '/w/main' })
        for (const seq of [0, 1]) rows.push(message(id(index), seq, `${id(index)} says ${index < 5 && seq === 0 ? 'quartzite' : 'granite'} notes ${seq}`, { time: BASE + (index * 2 + seq) * 60_000 }))
      }
      await store.registerSession({ sessionId: 'fork1', workspace: '/w/main', parentSessionId: id(0), forkSeq: 1 })
      rows.push(message('fork1', 1, 'fork row quartzite', { time: BASE - 60_000 }))
      for (let index = 0; index < 3; index += 1) {
        await store.registerSession({ sessionId: `other${index}`, workspace: '/w/other' })
        rows.push(message(`other${index}`, 0, 'other workspace quartzite', { time: BASE - 120_000 }))
      }
      for (let at = 0; at < rows.length; at += 500) await store.append(rows.slice(at, at + 500))
      const asker = id(7)
      // a window of ten sessions' rows, whatever the store's size
      const window = { timeFrom: BASE, timeTo: BASE + 19 * 60_000 }
      const work: Record<string, Omit<Work, 'writeTransactions'>> = {}
      work['workspace search'] = await measured(() => store.search('quartzite', { sessionId: asker, workspace: '/w/main' }))
      work['workspace search in a turn'] = await measured(() => store.search('quartzite', { sessionId: asker, workspace: '/w/main', beforeSeq: 1 }))
      work['workspace search of a fork'] = await measured(() => store.search('quartzite', { sessionId: 'fork1', workspace: '/w/main' }))
      work['allSessions search'] = await measured(() => store.search('quartzite', { sessionId: asker, allSessions: true }))
      work['allSessions search in a turn'] = await measured(() => store.search('quartzite', { sessionId: asker, allSessions: true, beforeSeq: 1 }))
      work['workspace search in a window'] = await measured(() => store.search('quartzite', { sessionId: asker, workspace: '/w/main', ...window }))
      work['workspace read of a window'] = await measured(() => store.read({ sessionId: asker, workspace: '/w/main' }, { ...window, limit: 100 }))
      work['allSessions read of a window'] = await measured(() => store.read({ sessionId: asker, allSessions: true }, { ...window, limit: 100 }))
      work['workspace count of a window'] = await measured(() => store.count({ sessionId: asker, workspace: '/w/main' }, window))
      work['workspace count'] = await measured(() => store.count({ sessionId: 'fork1', workspace: '/w/main' }))
      work['scope check'] = await measured(() => store.scopeBounds({ sessionId: asker, workspace: '/w/main' }, [id(3), 'other1']))
      work['newest session'] = await measured(() => store.sessions(undefined, { limit: 1 }))
      // the answers themselves, so the counts are of work that found them
      const hits = (await store.search('quartzite', { sessionId: asker, workspace: '/w/main' })).hits.map(hit => hit.message.sessionId).toSorted()
      expect(hits).toEqual(['fork1', id(0), id(1), id(2), id(3), id(4)])
      expect((await store.search('quartzite', { sessionId: asker, allSessions: true })).hits).toHaveLength(9)
      expect(await store.read({ sessionId: asker, workspace: '/w/main' }, { ...window, limit: 100 })).toHaveLength(20)
      expect(await store.count({ sessionId: asker, workspace: '/w/main' }, window)).toBe(20)
      // the fork sees its parent below the fork point: s00000's seq 0, its own seq 1
      expect(await store.count({ sessionId: 'fork1', workspace: '/w/main' })).toBe(sessions * 2)
      expect(await store.scopeBounds({ sessionId: asker, workspace: '/w/main' }, [id(3), 'other1'])).toEqual({ empty: false, bounds: [Number.POSITIVE_INFINITY, null] })
      return work
    } finally {
      await store.close()
    }
  }

  it('is the same at 80 and at 320 sessions: statements, bound parameters, rows returned', async () => {
    const few = await workAt(80)
    const many = await workAt(320)
    expect(many).toEqual(few)
  }, 180_000)
})

afterAll(restoreDrivers)
