/**
 * A search racing writers of another handle (another process, on the real store): between a
 * search's id lists (listIds) and its read of the chosen rows (candidateRows) a session is
 * forgotten and new rows are written. No result may hold a row the lists did not name — above
 * all none of another session — on either backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

describe.each(TARGETS)('a search racing forget and appends on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it.each([
    ['forgets the searched session', (writer: ShadowStore) => writer.forget('rb')],
    ['removes its rows', (writer: ShadowStore) => writer.remove('rb', [1, 2, 3, 4, 5])],
    ['forgets every session', async (writer: ShadowStore) => {
      await writer.forget('rb')
      await writer.forget('ra')
    }],
  ])('never returns a row of another session written under a deleted row\'s id (a writer %s)', async (_, remove) => {
    const location = target.location()
    const searcher = await ShadowStore.open(location)
    const writer = await ShadowStore.open(location)
    try {
      await searcher.append(Array.from({ length: 5 }, (_, index) => message('ra', index + 1, `plain row ${index} of the other session`)))
      // the newest rows of the store: their ids are the highest
      await searcher.append(Array.from({ length: 5 }, (_, index) => message('rb', index + 1, `needle row ${index} of the searched session`)))
      const backend = searcher.backend as { candidateRows?: (ids: readonly number[]) => unknown }
      const real = backend.candidateRows!.bind(searcher.backend)
      let raced = 0
      backend.candidateRows = async (ids: readonly number[]) => {
        if (raced++ === 0) {
          await remove(writer)
          await writer.append(Array.from({ length: 10 }, (_, index) => message('ra', index + 6, `private text ${index} written after the forget`)))
        }
        return real(ids)
      }
      const result = await searcher.search('needle', { sessionId: 'rb' })
      expect(raced).toBe(1)
      expect(result.hits.map(hit => hit.message.sessionId)).not.toContain('ra')
      expect(result.hits.map(hit => hit.message.text).join('\n')).not.toContain('private')
    } finally {
      await searcher.close()
      await writer.close()
    }
  })
})
