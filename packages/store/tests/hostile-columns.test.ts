/**
 * Values a text or integer column cannot keep as given, on every public write and read: refused
 * with INVALID_INPUT (identities, bounds) or kept as both backends read them back (free text).
 * Before: SQLite read a NUL as the end of a text (a workspace "/proj\0x" was "/proj", inside
 * another workspace's scope), PostgreSQL refused NUL, a bigint past 2^63 or a btree key past its
 * page limit with an untyped UNAVAILABLE (a capture retries those forever), and a non-array
 * argument threw a TypeError.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { sessionTag, ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

describe.each(TARGETS)('hostile column values on $name', target => {
  let store: ShadowStore
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())
  beforeEach(async () => {
    store = await ShadowStore.open(target.location())
    await store.registerSession({ sessionId: 'mine', workspace: '/proj' })
    await store.append([message('mine', 1, 'shared plan words')])
  })
  afterEach(async () => {
    await store.close()
  })

  it('refuses a workspace it could not keep apart from another (NUL, lone surrogate, empty, past 4096 characters), registering nothing', async () => {
    for (const workspace of ['/proj\u0000/other', '/proj\uD800', '/proj\uDFFF', '', 'w'.repeat(4_097)]) {
      await expect(store.registerSession({ sessionId: 'intruder', workspace }), JSON.stringify(workspace.slice(0, 12))).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    expect(await store.session('intruder')).toBeUndefined()
    expect((await store.sessions('/proj')).map(session => session.sessionId)).toEqual(['mine'])
    // the longest workspace a scope names is kept, whatever its bytes (a btree key has a ~2.7 kB limit)
    const long = Array.from({ length: 4_096 }, (_, index) => String.fromCodePoint(0x4e00 + ((index * 7919) % 20_000))).join('')
    await store.registerSession({ sessionId: 'deep', workspace: long })
    expect((await store.sessions(long)).map(session => session.sessionId)).toEqual(['deep'])
  })

  it('keeps a tool name and call id holding NUL or a lone surrogate as both backends read them back, and refuses a call id past 256 characters', async () => {
    const result = message('mine', 2, 'tool output', { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'read\u0000file', callId: 'call\u0000\uD800x' })
    expect(await store.append([result])).toMatchObject({ written: 1 })
    const [row] = await store.read({ sessionId: 'mine' }, { fromSeq: 2, limit: 1 })
    expect([row!.toolName, row!.callId]).toEqual(['read\uFFFDfile', 'call\uFFFD\uFFFDx'])
    // the same row again is unchanged, not replaced
    expect(await store.append([result])).toMatchObject({ unchanged: 1 })
    await expect(store.append([message('mine', 3, 'x', { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', callId: 'c'.repeat(257) })])).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    // an assistant message's calls are one id each: many parallel calls make a long list, not a long id
    const calls = Array.from({ length: 30 }, (_, index) => `call_${index}_${'k'.repeat(40)}`)
    expect(await store.append([message('mine', 5, 'calls', { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: calls.map(() => 'read').join(' '), callId: calls.join(' ') })])).toMatchObject({ written: 1 })
    await expect(store.append([message('mine', 6, 'x', { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', callId: `short ${'c'.repeat(257)}` })])).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    const cjk = '调'.repeat(256)
    expect(await store.append([message('mine', 4, 'x', { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', callId: cjk })])).toMatchObject({ written: 1 })
    expect((await store.read({ sessionId: 'mine' }, { fromSeq: 3 })).map(stored => stored.seq)).toEqual([4, 5])
  })

  it('keeps NUL in recall queries and checkpoint texts as U+FFFD, and refuses times and counts no column holds', async () => {
    const recall = await store.recordRecall({ sessionId: 'mine', kind: 'search', time: 5, query: 'find\u0000me', shadowIds: [] })
    expect(recall.query).toBe('find\uFFFDme')
    expect((await store.recalls('mine')).map(stored => stored.query)).toEqual(['find\uFFFDme'])
    for (const bad of [{ time: Number.NaN }, { time: 1e300 }, { time: -1 }, { shadowIds: [{}] }, { shadowIds: 'x' }, { seq: 1.5 }, { checkpointIds: [42] }]) {
      await expect(store.recordRecall({ sessionId: 'mine', kind: 'search', time: 5, query: 'q', shadowIds: [], ...bad } as never), JSON.stringify(bad)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    expect(await store.recalls('mine')).toHaveLength(1)
    const id = `${sessionTag('mine')}.c1`
    const checkpoint = { checkpointId: id, sessionId: 'mine', engine: 'shadow-context', status: 'failed' as const, shadowedSeqs: [1], createdAt: 5 }
    const stored = await store.recordCheckpoint({ ...checkpoint, trigger: 't\u0000', footer: 'f\u0000', error: 'e\u0000\uDC00' })
    expect([stored.trigger, stored.footer, stored.error]).toEqual(['t\uFFFD', 'f\uFFFD', 'e\uFFFD\uFFFD'])
    for (const bad of [{ createdAt: 1e300 }, { createdAt: Number.NaN }, { shadowedTokens: 1e300 }, { summaryTokens: -1 }, { startSeq: 2 ** 53 }, { replaceSeq: -1 }, { summarySeq: 'x' }]) {
      await expect(store.recordCheckpoint({ ...checkpoint, checkpointId: `${sessionTag('mine')}.c2`, ...bad } as never), JSON.stringify(bad)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    expect(await store.checkpoint(`${sessionTag('mine')}.c2`)).toBeUndefined()
  })

  it('refuses a read or count bound past any time a row can have, and arguments that are not lists, with INVALID_INPUT', async () => {
    await expect(store.read({ sessionId: 'mine' }, { timeTo: 1e300 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(store.count({ sessionId: 'mine' }, { timeFrom: 1e300 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    for (const call of [
      () => store.remove('mine', 5 as never),
      () => store.markElided('mine', 5 as never, `${sessionTag('mine')}.c1`),
      () => store.confirm('mine', 5 as never),
      () => store.reconcile('mine', 5 as never),
      () => store.reconcile('mine', [{ seq: 'x', hash: 'y' }] as never),
    ]) await expect(call()).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect(await store.count({ sessionId: 'mine' })).toBe(1)
  })

  it('checks a whole ingest batch before applying any of it: a bad operation anywhere is INVALID_INPUT and nothing is written', async () => {
    const captured = (seq: number, eventJson = JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text: `captured ${seq}` }] } })) =>
      ({ sessionId: 'batch', seq, type: 'user/message' as const, time: 1_000 + seq, turn: 1, step: 1, toolName: null, eventJson })
    const good = { op: 'events' as const, events: [captured(1), captured(2)] }
    for (const bad of [
      { op: 'events', events: [captured(3, '{not json')] },
      { op: 'events', events: [{ ...captured(3), seq: Number.NaN }] },
      { op: 'events', events: [null] },
      { op: 'events' },
      { op: 'reconcile', sessionId: 'batch', events: 'x', ownFromSeq: 0 },
      { op: 'reconcile', sessionId: 'batch', events: [], ownFromSeq: Number.NaN },
      { op: 'checkpoint', elide: true },
      { op: 'session', session: { sessionId: 'a\u0000b' } },
      { op: 'nope' },
    ]) {
      await expect(store.ingest([good, bad] as never), JSON.stringify(bad).slice(0, 60)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    expect(await store.session('batch')).toBeUndefined()
    expect(await store.ingest([good])).toMatchObject({ written: 2 })
    // a repair that only adds says so with Infinity
    expect(await store.ingest([{ op: 'reconcile', sessionId: 'batch', events: [captured(3)], ownFromSeq: Number.POSITIVE_INFINITY }])).toMatchObject({ written: 1, removed: 0 })
  })
})
