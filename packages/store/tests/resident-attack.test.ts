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
})
