/**
 * Resident search under attack (resident/): what another store object (another process) writes,
 * what this store object's own calls interleave, hostile sizes and budgets. Each case is a defect
 * found by probing, kept as a test: no forgotten, stale or foreign row in a hit, a typed error or
 * the index lists' answer instead of a crash, and work (rows read, characters analysed at once,
 * memory estimated) bounded by the budgets. Work is counted, never timed. Both backends where the
 * store is involved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, type SearchResult } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

const seqs = (result: SearchResult): number[] => result.hits.map(hit => hit.message.seq).toSorted((a, b) => a - b)
const texts = (result: SearchResult): string => result.hits.map(hit => `${hit.message.text} ${hit.snippet} ${hit.message.eventJson}`).join('\n')

/**
 * Let `race` run once around the store's delta read (sessionChanges) that `nth` picks: after it
 * answered (the reader holds a state `race` then changes), or `before` it is made.
 */
function afterRead(store: ShadowStore, nth: (requests: ReadonlyArray<{ readonly since: number }>, count: number) => boolean, race: () => Promise<unknown>, before = false): () => boolean {
  const backend = store.backend as unknown as Record<string, (...args: never[]) => Promise<unknown>>
  const real = backend['sessionChanges']!.bind(store.backend)
  let count = 0
  let ran = false
  backend['sessionChanges'] = async (...args: never[]) => {
    count += 1
    const picked = !ran && nth(args[0] as unknown as ReadonlyArray<{ readonly since: number }>, count)
    if (picked) ran = true
    if (picked && before) await race()
    const answer = await real(...args)
    if (picked && !before) await race()
    return answer
  }
  return () => ran
}

describe.each(TARGETS)('resident search attacked on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it.each([
    ['as many writes as before', 2],
    ['more writes than before', 3],
  ])('serves no row of a session another process forgot and registered again (%s)', async (_kind, writes) => {
    const location = target.location()
    const reader = await ShadowStore.open(location)
    const writer = await ShadowStore.open(location)
    try {
      await writer.append([message('x', 1, 'the vault password zq-hunter2 pasted here')])
      await writer.append([message('x', 2, 'rotated the vault password')])
      expect(seqs(await reader.search('vault password', { sessionId: 'x' }))).toEqual([1, 2])
      // another process forgets the session (a pasted secret), and its capture registers it again
      await writer.forget('x')
      for (let seq = 1; seq <= writes; seq += 1) await writer.append([message('x', seq + 1, `fresh start ${seq} of the vault notes`)])
      const after = await reader.search('vault', { sessionId: 'x' })
      expect(texts(after)).not.toContain('zq-hunter2')
      expect(seqs(after)).toEqual(Array.from({ length: writes }, (_, index) => index + 2))
      expect((await reader.search('zq-hunter2', { sessionId: 'x' })).hits).toEqual([])
    } finally {
      await reader.close()
      await writer.close()
    }
  })

  it('a forget landing while a search syncs its scope leaves the store searchable (no undefined index)', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(Array.from({ length: 6 }, (_, index) => message('p', index + 1, `needle parent ${index}`)))
      await store.search('needle', { sessionId: 'p' })
      await store.registerSession({ sessionId: 'c', parentSessionId: 'p', forkSeq: 4 })
      await store.append([message('c', 4, 'needle child')])
      // the fork's first search: the parent's index is current, the child's is read whole; the
      // parent (and with it the fork) is forgotten while that read is under way
      const raced = afterRead(store, requests => requests.some(request => request.since === -1), () => store.forget('p', { force: true }))
      const result: unknown = await store.search('needle', { sessionId: 'c' }).catch((error: unknown) => error)
      expect(raced()).toBe(true)
      if (result instanceof Error) expect(result.constructor.name).toBe('ShadowStoreError')
      else expect(texts(result as SearchResult)).not.toContain('needle parent')
      // later searches of this store object still work
      await store.append([message('q', 1, 'needle other')])
      expect(seqs(await store.search('needle', { sessionId: 'q' }))).toEqual([1])
    } finally {
      await store.close()
    }
  })

  it('a search of one store object sees rows appended before it returned, also when another search brought the index up to date meanwhile', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(Array.from({ length: 4 }, (_, index) => message('s', index + 1, `needle ${index}`)))
      await store.search('needle', { sessionId: 's' })
      let second: SearchResult | undefined
      // the first search's closing revision check: a row is appended, and a second search takes it into the index, first
      const raced = afterRead(store, (_requests, count) => count === 2, async () => {
        await store.append([message('s', 9, 'needle written meanwhile')])
        second = await store.search('needle', { sessionId: 's' })
      }, true)
      const first = await store.search('needle', { sessionId: 's' })
      expect(raced()).toBe(true)
      expect(seqs(second!)).toEqual([1, 2, 3, 4, 9])
      expect(seqs(first)).toEqual([1, 2, 3, 4, 9])
    } finally {
      await store.close()
    }
  })
})
