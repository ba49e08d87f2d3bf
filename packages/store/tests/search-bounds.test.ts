import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CANDIDATE_TEXT_CHARS, coveredTerms, isShadowStoreError, scanTerms, ShadowStore, SqliteBackend, type IndexQuery, type IndexResult, type ShadowStoreError } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

let dir: ReturnType<typeof tempDir>
let store: ShadowStore

beforeEach(async () => {
  dir = tempDir('shadow-bounds-')
  store = await ShadowStore.open(join(dir.path, 'shadow.db'))
})

afterEach(async () => {
  await store.close()
  dir.cleanup()
})

/** A SQLite backend whose candidate lists are counted: the text they hand to ranking. */
async function countingBackend(path: string): Promise<{ backend: SqliteBackend; chars: () => number; reset: () => void }> {
  const backend = await SqliteBackend.open(path)
  const original = backend.searchIndex.bind(backend)
  let chars = 0
  backend.searchIndex = (query: IndexQuery): IndexResult => {
    const result = original(query)
    for (const hit of result.hits) chars += hit.message.text.length
    return result
  }
  // the batched lists (words lists read as ids, their rows once) carry text the same way
  const batched = backend.searchIndexes.bind(backend)
  backend.searchIndexes = (queries: readonly IndexQuery[]): IndexResult[] => {
    const results = batched(queries)
    for (const hit of results.flatMap(result => result.hits)) chars += hit.message.text.length
    return results
  }
  // the words lists' chosen candidates (listIds, then their rows by id) too
  const byId = backend.candidateRows.bind(backend)
  backend.candidateRows = (ids: readonly number[]) => {
    const rows = byId(ids)
    for (const row of rows) chars += row?.text.length ?? 0
    return rows
  }
  // and a resident index's reads of a session's rows (light, cut like the lists' rows)
  const changes = backend.sessionChanges.bind(backend)
  backend.sessionChanges = (requests: Parameters<SqliteBackend['sessionChanges']>[0]) => {
    const answers = changes(requests)
    for (const answer of answers) for (const row of answer?.rows ?? []) chars += row.text.length
    return answers
  }
  return { backend, chars: () => chars, reset: () => { chars = 0 } }
}

describe('search work is bounded per candidate (issue 12: 1 and 13)', () => {
  it('scans a 40,000-character token once, not once per occurrence of a short term', () => {
    // the old coverage walked the whole token for every "a" inside it: ~1.6e9 steps, 31 s
    const token = 'a'.repeat(40_000)
    const text = `${token} limit ${token}b`
    const started = performance.now()
    expect(coveredTerms(text, ['a', 'limit', 'ab'])).toEqual([false, true, false])
    const scan = scanTerms(`${'ab'.repeat(150_000)} x`.repeat(3), ['ab', 'x'])
    expect(scan.scanned).toBeLessThanOrEqual(256_000)
    // a generous guard against a quadratic blowup, not a benchmark
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it('a two-word search over a message with one huge token stays fast', async () => {
    await store.append([message('s1', 1, `${'q'.repeat(40_000)} retry budget ${'q'.repeat(40_000)}`), message('s1', 2, 'retry budget is 7')])
    const started = performance.now()
    const result = await store.search('retry budget', { sessionId: 's1' })
    expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it('ranks a 50 MB tool output from its first 256 KB: candidates carry at most that much text', async () => {
    const counting = await countingBackend(join(dir.path, 'big.db'))
    const big = new ShadowStore(counting.backend)
    try {
      const line = 'INFO worker heartbeat ok\n'
      const huge = `needle at the start\n${line.repeat(Math.ceil(50_000_000 / line.length))}`
      await big.append([
        message('s1', 1, huge, { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'shell' }),
        message('s1', 2, 'the heartbeat needle is somewhere in that output'),
      ])
      counting.reset()
      const started = performance.now()
      const result = await big.search('heartbeat needle', { sessionId: 's1' })
      const took = performance.now() - started
      expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
      // every candidate list carried the big row cut to the cap, never its 50 MB
      expect(counting.chars()).toBeGreaterThan(CANDIDATE_TEXT_CHARS)
      expect(counting.chars()).toBeLessThanOrEqual(6 * (CANDIDATE_TEXT_CHARS + 100))
      const bigHit = result.hits.find(hit => hit.message.seq === 1)!
      expect(bigHit.passage.start).toBeLessThan(100)
      // the hit carries the cut text, not a 50 MB copy (read by id for the rest)
      expect(bigHit.message.text.length).toBe(CANDIDATE_TEXT_CHARS)
      expect((await big.messageAt('s1', 1))!.text.length).toBe(huge.length)
      expect(took).toBeLessThan(3_000)
    } finally {
      await big.close()
    }
  })
})

describe('typed errors for bad search and read options (issue 12: 12)', () => {
  it('refuses non-numeric, NaN and object time bounds and a 40k-entry exclusion list with INVALID_INPUT', async () => {
    await store.append([message('s1', 1, 'kept')])
    const before = await store.stats()
    const bad: Array<() => Promise<unknown>> = [
      () => store.search('kept', { sessionId: 's1', timeFrom: 'x' as never }),
      () => store.search('kept', { sessionId: 's1', timeFrom: Number.NaN }),
      () => store.search('kept', { sessionId: 's1', timeTo: {} as never }),
      () => store.search('kept', { sessionId: 's1', timeFrom: Number.POSITIVE_INFINITY }),
      () => store.search('kept', { sessionId: 's1', excludeSourceKinds: Array.from({ length: 40_000 }, (_, index) => `kind-${index}`) }),
      () => store.search('kept', { sessionId: 's1', excludeToolNames: 'shell' as never }),
      () => store.search('kept', { sessionId: 's1', rankWindow: -3 }),
      () => store.search('kept', { sessionId: 's1', beforeSeq: -1 }),
      () => store.read({ sessionId: 's1' }, { timeFrom: Number.NaN }),
      () => store.read({ sessionId: 's1' }, { timeTo: 'soon' as never }),
    ]
    for (const call of bad) {
      const error = await call().then(() => undefined, (failure: unknown) => failure)
      expect(isShadowStoreError(error), String(error)).toBe(true)
      expect((error as ShadowStoreError).code).toBe('INVALID_INPUT')
    }
    expect(await store.stats()).toEqual(before)
  })
})
