import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ShadowStore, SqliteBackend } from '../src/index.ts'
import type { SessionIndexRegistry } from '../src/resident/registry.ts'
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

  it('does not take an index a background build held for one a search found current (a write came between their reads)', async () => {
    const { store, other } = await twoConnections()
    // a row whose tail is too long to list inline: the first search's build goes on in the background
    const long = Array.from({ length: 90_000 }, (_, at) => `w${at % 997}x`).join(' ')
    await other.append([message('x', 1, 'alpha needle secretword'), message('x', 2, long), message('x', 3, 'beta needle')])
    const registry = (store as unknown as { resident: SessionIndexRegistry }).resident
    const acquire = registry.acquire.bind(registry)
    let acquires = 0
    let secondEntered: () => void = () => undefined
    const entered = new Promise<void>(resolve => { secondEntered = resolve })
    registry.acquire = async (...args) => {
      const held = acquire(...args)
      if ((acquires += 1) === 2) secondEntered()
      return held
    }
    // while the first search reads the long row's tail: another connection rewrites row 1 (the word
    // and the secret gone), and a second search starts and builds the session from what it reads then
    const getMessage = store.backend.getMessage.bind(store.backend)
    let second: Promise<unknown> | undefined
    vi.spyOn(store.backend, 'getMessage').mockImplementation(async (sessionId, seq) => {
      const row = await getMessage(sessionId, seq)
      if (second === undefined && sessionId === 'x' && seq === 2) {
        await other.append([message('x', 1, 'alpha rewritten clean'), message('x', 2, 'short now')])
        second = store.search('needle', { sessionId: 'x' })
        await entered
      }
      return row
    })
    await store.search('needle', { sessionId: 'x' })
    expect(second).toBeDefined()
    await second
    // the first search's background build ends, and holds the index it read before the rewrite
    const building = (registry as unknown as { building: Map<string, unknown> }).building
    for (let wait = 0; wait < 300 && building.size > 0; wait += 1) await new Promise(resolve => setTimeout(resolve, 10))
    expect(building.size).toBe(0)
    expect(seqs(await store.search('needle', { sessionId: 'x' }))).toEqual([3])
    expect(seqs(await store.search('secretword', { sessionId: 'x' }))).toEqual([])
  })

})
