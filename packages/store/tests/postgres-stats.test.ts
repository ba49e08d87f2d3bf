/**
 * PostgreSQL: ANALYZE's word statistics (what tells a search which terms are common) are cached
 * per connection for a minute; past that a search is answered from the cached view while a fresh
 * one is read beside it, instead of waiting for that read.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type PostgresBackend, ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

describe('PostgreSQL word statistics', () => {
  it('answers from the cached statistics past their minute while fresh ones are read, and takes the fresh ones after', async () => {
    const store = await ShadowStore.open(target.server().storeDsn('stats_one'))
    await store.append([message('t0', 1, 'heron wren'), message('t0', 2, 'heron')])
    await store.registerSession({ sessionId: 't1' }) // two sessions: a store-wide scope
    const segments = await store.scopeSegments({ sessionId: 't0', allSessions: true })
    const connection = (store.backend as PostgresBackend).connection
    const reads: string[] = []
    let hold: Promise<void> | undefined
    const query = connection.query.bind(connection)
    connection.query = (async (action: string, ...rest: unknown[]) => {
      if (action === 'read statistics') {
        reads.push('started')
        if (hold !== undefined) await hold
        reads.push('done')
      }
      return (query as (...args: unknown[]) => Promise<unknown>)(action, ...rest)
    }) as typeof connection.query
    const count = (): Promise<number[]> => store.backend.documentFrequencies({ segments, index: 'words', terms: ['heron', 'wren'], cap: 2_000 }) as Promise<number[]>
    const now = Date.now()
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now)
    try {
      expect(await count()).toEqual([2, 1])
      expect(reads).toEqual(['started', 'done']) // the first search waits: nothing is cached yet
      expect(await count()).toEqual([2, 1])
      expect(reads).toHaveLength(2) // within the minute: cached
      // past the minute, with the statistics read held back: the search is answered anyway
      let release!: () => void
      hold = new Promise(resolve => { release = resolve })
      clock.mockReturnValue(now + 61_000)
      const answered = await Promise.race([count().then(counts => ({ counts })), new Promise(resolve => setTimeout(() => resolve('waited'), 2_000))])
      expect(answered).toEqual({ counts: [2, 1] })
      expect(reads).toEqual(['started', 'done', 'started'])
      // a second search meanwhile starts no second read
      expect(await count()).toEqual([2, 1])
      expect(reads).toHaveLength(3)
      release()
      await vi.waitFor(() => expect(reads).toHaveLength(4))
      // the fresh view is cached from its read on: no read within its minute
      hold = undefined
      clock.mockReturnValue(now + 61_000 + 30_000)
      expect(await count()).toEqual([2, 1])
      expect(reads).toHaveLength(4)
    } finally {
      clock.mockRestore()
      connection.query = query
      await store.close()
    }
  })
})
