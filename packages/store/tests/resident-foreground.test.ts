/**
 * Searches first: no slice of a background resident build runs while a search is under way
 * (registry.ts foreground), and the build goes on once none is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { SessionIndex } from '../src/resident/session-index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

/** Rows a background build has analysed (SessionIndex.appending, one call a row), counted. */
const analysed = { rows: 0 }
const appending = SessionIndex.prototype.appending
beforeAll(() => {
  SessionIndex.prototype.appending = function* counted(this: SessionIndex, ...args: Parameters<SessionIndex['appending']>) {
    analysed.rows += 1
    return yield* appending.apply(this, args)
  }
})
afterAll(() => {
  SessionIndex.prototype.appending = appending
})

/**
 * What `analysed.rows` was at each call a search made to the backend and at each answer, while
 * `on` is set: one value throughout means no build slice ran between its first call and last answer.
 */
function watch(store: ShadowStore): { seen: Set<number>; on: boolean } {
  const state = { seen: new Set<number>(), on: false }
  const backend = store.backend as unknown as Record<string, unknown>
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(backend))) {
    const method = backend[name]
    if (name === 'constructor' || typeof method !== 'function') continue
    backend[name] = (...args: unknown[]) => {
      if (state.on) state.seen.add(analysed.rows)
      const answer = (method as (...given: unknown[]) => unknown).apply(store.backend, args)
      if (!(answer instanceof Promise)) return answer
      return answer.finally(() => { if (state.on) state.seen.add(analysed.rows) })
    }
  }
  return state
}

describe.each(TARGETS)('a background build waits for the searches under way on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('runs no slice during a search, and finishes once the searches stop', async () => {
    const location = target.location()
    const writer = await ShadowStore.open(location)
    const rows = 40
    try {
      // a session whose build takes a slice a row (each row's text is past a slice's characters)
      for (let seq = 1; seq <= rows; seq += 1) await writer.append([message('big', seq, `row ${seq} ${'alpha beta gamma '.repeat(6_000)} end`)])
      await writer.append([message('other', 1, 'the quokka deploy went fine'), message('other', 2, 'the quokka deploy failed twice')])
    } finally {
      await writer.close()
    }
    const store = await ShadowStore.open(location)
    try {
      analysed.rows = 0
      const warming = store.warm('big')
      // the build has started (a slice or more done) and has rows left
      while (analysed.rows === 0) await new Promise(resolve => setTimeout(resolve, 1))
      expect(analysed.rows).toBeLessThan(rows)
      const watched = watch(store)
      const during = async <T>(search: () => Promise<T>): Promise<T> => {
        watched.seen.clear()
        watched.on = true
        try {
          return await search()
        } finally {
          watched.on = false
          // every call and answer of the search saw the same count of analysed rows
          expect([...watched.seen]).toHaveLength(1)
        }
      }
      let progressed = 0
      for (let round = 0; round < 6; round += 1) {
        const before = analysed.rows
        // store-wide (the index lists) and the building session itself (the lists too, while it builds)
        const wide = await during(() => store.search('quokka deploy', { sessionId: 'other', allSessions: true }))
        const own = await during(() => store.search('alpha gamma', { sessionId: 'big' }))
        expect(wide.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
        expect(own.hits.length).toBeGreaterThan(0)
        // between two searches the build goes on
        await new Promise(resolve => setTimeout(resolve, 5))
        if (analysed.rows > before) progressed += 1
      }
      expect(progressed).toBeGreaterThan(0)
      await warming
      expect(analysed.rows).toBe(rows)
      expect(store.residentUsage().sessions).toBe(1)
    } finally {
      await store.close()
    }
  })
})
