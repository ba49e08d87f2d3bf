import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ShadowStore, SqliteBackend } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).toReversed()) await cleanup()
})

async function twoConnections(): Promise<{ store: ShadowStore; other: ShadowStore; path: string }> {
  const dir = tempDir()
  const path = join(dir.path, 'mark.db')
  const store = await ShadowStore.open(path)
  const other = await ShadowStore.open(path)
  cleanups.push(dir.cleanup, () => store.close(), () => other.close())
  return { store, other, path }
}

const seqs = (result: { hits: ReadonlyArray<{ message: { seq: number } }> }): number[] => result.hits.map(hit => hit.message.seq).toSorted((a, b) => a - b)

describe('change mark (SQLite): what a search skips while nothing is written', () => {
  it('moves with a write of this connection, of another one and of another process, and not with a read', async () => {
    const { store, other, path } = await twoConnections()
    const backend = store.backend as SqliteBackend
    const start = backend.changeMark()
    await store.search('nothing', { allSessions: true, sessionId: 'none' }).catch(() => undefined)
    await store.stats()
    expect(backend.changeMark()).toBe(start)
    await store.append([message('s1', 1, 'own write')])
    const afterOwn = backend.changeMark()
    expect(afterOwn).not.toBe(start)
    await other.append([message('s1', 2, 'another connection')])
    const afterOther = backend.changeMark()
    expect(afterOther).not.toBe(afterOwn)
    // a plain SQLite connection stands for another process (it shares no memory with this one)
    const raw = new DatabaseSync(path)
    raw.exec("INSERT INTO meta(key, value) VALUES ('test-mark', 'x')")
    raw.close()
    expect(backend.changeMark()).not.toBe(afterOther)
  })

  it('skips the resident sync and the lineage read, and still sees every write the moment it commits', async () => {
    const { store, other } = await twoConnections()
    await store.append([message('s1', 1, 'the idempotency key is stored'), message('s1', 2, 'unrelated words'), message('s1', 3, 'more words')])
    // the first search builds the session's resident index
    expect(seqs(await store.search('idempotency', { sessionId: 's1' }))).toEqual([1])
    const changes = vi.spyOn(store.backend, 'sessionChanges')
    const ancestry = vi.spyOn(store.backend, 'ancestry')
    expect(seqs(await store.search('idempotency', { sessionId: 's1' }))).toEqual([1])
    expect(changes).not.toHaveBeenCalled()
    expect(ancestry).not.toHaveBeenCalled()

    await other.append([message('s1', 4, 'idempotency from another connection')])
    expect(seqs(await store.search('idempotency', { sessionId: 's1' }))).toEqual([1, 4])
    expect(changes).toHaveBeenCalled()
    expect(ancestry).toHaveBeenCalled()

    changes.mockClear()
    await store.append([message('s1', 5, 'idempotency from this connection')])
    expect(seqs(await store.search('idempotency', { sessionId: 's1' }))).toEqual([1, 4, 5])
    expect(changes).toHaveBeenCalled()

    // a row rewritten and one forgotten elsewhere are seen as well
    await other.append([message('s1', 4, 'rewritten without the word')])
    expect(seqs(await store.search('idempotency', { sessionId: 's1' }))).toEqual([1, 5])

    // a fork registered by another connection: its lineage is read, not an earlier answer for its id
    await expect(store.search('idempotency', { sessionId: 'f1' })).rejects.toThrow(/not in the shadow store/)
    await other.registerSession({ sessionId: 'f1', parentSessionId: 's1', forkSeq: 2 })
    await other.append([message('f1', 2, 'idempotency in the fork')])
    expect(seqs(await store.search('idempotency', { sessionId: 'f1' }))).toEqual([1, 2])
    await other.forget('f1')
    await expect(store.search('idempotency', { sessionId: 'f1' })).rejects.toThrow(/not in the shadow store/)
  })
})
