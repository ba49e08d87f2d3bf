import { readFileSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ShadowStore, ShadowStoreError } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

// The same contract on each backend: SQLite files and a real PostgreSQL server.
describe.each(TARGETS)('ShadowStore.forget on $name', target => {
  let store: ShadowStore
  let location: string

  beforeAll(() => target.setup())
  afterAll(() => target.teardown())
  beforeEach(async () => {
    location = target.location()
    store = await ShadowStore.open(location)
  })
  afterEach(async () => {
    await store.close()
  })

  async function seed(sessionId: string, secret: string): Promise<void> {
    await store.registerSession({ sessionId, workspace: '/repo' })
    await store.append([message(sessionId, 1, `the password is ${secret}`), message(sessionId, 2, 'routine text'), message(sessionId, 3, 'more routine text')])
    await store.markElided(sessionId, [1, 2], `${sessionId}.c1`)
    await store.recordCheckpoint({ checkpointId: `${sessionId}.c1`, sessionId, engine: 'shadow-context', status: 'committed', shadowedSeqs: [1, 2], createdAt: Date.now() })
    await store.recordRecall({ sessionId, kind: 'search', time: Date.now(), query: secret, shadowIds: [] })
  }

  it('removes one session completely and leaves the others searchable', async () => {
    await seed('pasted', 'hunter2zebra')
    await seed('other', 'keepme42')
    const report = await store.forget('pasted')
    expect(report).toMatchObject({ forgotten: ['pasted'], sessions: 1, messages: 3, checkpoints: 1, recalls: 1, vacuumed: false })
    expect(await store.session('pasted')).toBeUndefined()
    expect(await store.checkpoints('pasted')).toEqual([])
    expect(await store.recalls('pasted')).toEqual([])
    expect((await store.search('hunter2zebra', { sessionId: 'other', allSessions: true })).hits).toHaveLength(0)
    expect((await store.search('routine', { sessionId: 'other', allSessions: true })).hits.every(hit => hit.message.sessionId === 'other')).toBe(true)
    expect((await store.search('keepme42', { sessionId: 'other' })).hits).toHaveLength(1)
    expect(await store.integrityCheck()).toEqual([])
    expect((await store.stats()).messages).toBe(3)
  })

  it('refuses a session with forks unless forced, then forgets the forks with it', async () => {
    await seed('parent', 'sharedsecret')
    await store.registerSession({ sessionId: 'child', parentSessionId: 'parent', forkSeq: 3 })
    await store.append([message('child', 4, 'child own')])
    await store.registerSession({ sessionId: 'grandchild', parentSessionId: 'child', forkSeq: 5 })
    const refused = await store.forget('parent').catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ShadowStoreError)
    expect((refused as ShadowStoreError).code).toBe('CONFLICT')
    expect((refused as ShadowStoreError).message).toContain('child, grandchild')
    expect((await store.stats()).messages).toBe(4) // nothing changed
    const forced = await store.forget('parent', { force: true, vacuum: true })
    expect(forced).toMatchObject({ forgotten: ['parent', 'child', 'grandchild'], sessions: 3, messages: 4, vacuumed: true })
    expect(await store.sessions()).toEqual([])
    expect(await store.integrityCheck()).toEqual([])
    // after the vacuum the secret is gone from the SQLite file, not only from the tables
    if (target.name === 'sqlite') expect(readFileSync(location).includes('sharedsecret')).toBe(false)
  })

  it('says NOT_FOUND for an unknown session and changes nothing', async () => {
    await seed('a', 'x')
    await expect(store.forget('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(store.forget(42 as unknown as string)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect((await store.stats()).messages).toBe(3)
  })
})
