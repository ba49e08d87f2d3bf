/**
 * What "gone from disk" means on each backend: after `forget(…, { vacuum: true })` and after a
 * redaction pass, no file of the store holds the old text (SQLite: the file and its -wal/-shm;
 * PostgreSQL: every table and index file of the database, where a plain VACUUM leaves old row
 * versions and index keys in place).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, ShadowStoreError } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

describe.each(TARGETS)('scrubbing old copies on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('forget with vacuum leaves no copy of the forgotten text in the store\'s files, index keys included', async () => {
    const needle = `zebracode${target.name}forget`
    const location = target.location()
    const store = await ShadowStore.open(location)
    await store.append(Array.from({ length: 200 }, (_, seq) => message('victim', seq, `row ${seq}: the launch code is ${needle}${seq % 7}`)))
    await store.append(Array.from({ length: 50 }, (_, seq) => message('bystander', seq, `row ${seq}: routine text`)))
    expect(await target.storageHolds(location, needle)).toBe(true)
    expect(await store.forget('victim', { vacuum: true })).toMatchObject({ messages: 200, vacuumed: true })
    expect(await target.storageHolds(location, needle)).toBe(false)
    expect((await store.search('routine', { sessionId: 'bystander' })).hits.length).toBeGreaterThan(0)
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })

  it('a redaction pass leaves no copy of the secrets it replaced in the store\'s files', async () => {
    const secret = `hunter7${target.name}pass`
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    await plain.append(Array.from({ length: 200 }, (_, seq) => message('p', seq, `row ${seq}: password: ${secret}${seq % 7}`)))
    await plain.close()
    expect(await target.storageHolds(location, secret)).toBe(true)
    const store = await ShadowStore.open(location, { redact: {} })
    expect((await store.read({ sessionId: 'p' }, { limit: 500 })).filter(row => row.text.includes(secret))).toEqual([])
    expect(await target.storageHolds(location, secret)).toBe(false)
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })

  it('reports a redaction pass that is due or was interrupted: rows may still hold unredacted text', async () => {
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    await plain.append([message('p', 1, 'password: hunter9-pending')])
    // what a writer killed between saving the policy and finishing the pass leaves behind
    await plain.backend.markRedactionPending(true)
    await plain.backend.setMeta('redact', '{}')
    await plain.close()
    const reader = await ShadowStore.open(location, { readOnly: true })
    expect(await reader.integrityCheck()).toEqual([expect.stringContaining('redaction pass')])
    await reader.close()
    const writer = await ShadowStore.open(location)
    expect(await writer.integrityCheck()).toEqual([])
    expect((await writer.read({ sessionId: 'p' }))[0]!.text).toBe('password: [REDACTED:secret]')
    await writer.close()
  })

  it('a forget that fails (a full disk: SQLite needs room to delete) owes no vacuum, and a vacuum that fails after one stays owed', async () => {
    const store = await ShadowStore.open(target.location())
    await store.append([message('gone', 1, 'text to forget')])
    const backend = store.backend as unknown as { forgetSessions: (...args: unknown[]) => unknown; vacuum: () => unknown }
    const { forgetSessions, vacuum } = { forgetSessions: backend.forgetSessions.bind(store.backend), vacuum: backend.vacuum.bind(store.backend) }
    backend.forgetSessions = () => { throw new ShadowStoreError('FULL', 'the disk is full') }
    await expect(store.forget('gone', { vacuum: true })).rejects.toMatchObject({ code: 'FULL' })
    expect(await store.integrityCheck()).toEqual([])
    backend.forgetSessions = forgetSessions
    backend.vacuum = () => { throw new ShadowStoreError('UNAVAILABLE', 'locked') }
    await expect(store.forget('gone', { vacuum: true })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    expect(await store.integrityCheck()).toEqual([expect.stringContaining('forgotten')])
    backend.vacuum = vacuum
    await store.vacuum()
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })
})
