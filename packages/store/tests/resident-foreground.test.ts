/**
 * Searches first: no slice of a background resident build runs while a search is under way
 * (registry.ts foreground), and the build goes on once none is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { BUILD_WAIT_MS } from '../src/resident/registry.ts'
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
      let checked = 0
      const during = async <T>(search: () => Promise<T>): Promise<T> => {
        watched.seen.clear()
        watched.on = true
        const started = performance.now()
        try {
          return await search()
        } finally {
          watched.on = false
          // every call and answer of the search saw the same count of analysed rows (a search longer
          // than BUILD_WAIT_MS, on a loaded machine, may let one slice through: not judged)
          if (performance.now() - started < BUILD_WAIT_MS) {
            checked += 1
            expect([...watched.seen]).toHaveLength(1)
          }
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
      expect(checked).toBeGreaterThan(0)
      await warming
      expect(analysed.rows).toBe(rows)
      expect(store.residentUsage().sessions).toBe(1)
    } finally {
      await store.close()
    }
  })

  it('still finishes a build while two callers search without a gap between them (review, 2026-12-06)', async () => {
    const location = target.location()
    const store = await ShadowStore.open(location)
    try {
      const input = []
      for (let seq = 1; seq <= 12; seq += 1) input.push(message('busy', seq, `topic ${seq} ${Array.from({ length: 14_000 }, (_, at) => `w${seq}_${at}`).join(' ')}`))
      await store.append(input)
      const state = { warmed: false }
      const warming = store.warm('busy').then(() => { state.warmed = true })
      // searches overlap: one caller's next search starts before the other's ends
      let searches = 0
      const caller = async (delay: number): Promise<void> => {
        await new Promise(resolve => setTimeout(resolve, delay))
        for (let run = 0; run < 400 && !state.warmed; run += 1) {
          await store.search('topic w3_17', { sessionId: 'busy' })
          searches += 1
          await new Promise(resolve => setImmediate(resolve))
        }
      }
      await Promise.all([caller(0), caller(3)])
      // the build got its slices (held off each time for at most BUILD_WAIT_MS) before the callers gave up
      expect(state.warmed).toBe(true)
      expect(searches).toBeLessThan(800)
      await warming
      expect(store.residentUsage().sessions).toBe(1)
    } finally {
      await store.close()
    }
  })
})
