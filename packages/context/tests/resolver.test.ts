import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkpointId, Redactor, sessionTag, ShadowStore, type ReadOptions, type ShadowMessageInput } from '@dsh-shadow/store'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeCursor, RecallError, RecallResolver, type ReadArgs } from '../src/index.ts'

let dir: string
let store: ShadowStore
const T0 = Date.UTC(2026, 10, 30, 8, 0, 0)

function row(sessionId: string, seq: number, text: string, extra: Partial<ShadowMessageInput> = {}): ShadowMessageInput {
  return {
    sessionId, seq, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: Math.floor(seq / 10), step: 1, toolName: null, callId: null,
    time: T0 + seq * 60_000, eventJson: JSON.stringify({ seq, text }), text, tokens: Math.ceil(text.length / 4), ...extra,
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shadow-resolver-'))
  store = await ShadowStore.open(join(dir, 'shadow.db'))
  await store.registerSession({ sessionId: 'main', workspace: '/repo' })
  const rows: ShadowMessageInput[] = []
  for (let seq = 1; seq <= 60; seq += 1) rows.push(row('main', seq, `message ${seq} about topic ${seq % 7}`))
  rows.push(row('main', 61, 'We decided to move the staging database to port 5433.'))
  rows.push(row('main', 62, `big tool output ${'x'.repeat(30_000)} tail-marker`, { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'shell' }))
  rows.push(row('main', 63, '缓存过期时间统一改成九十秒'))
  await store.append(rows)
  await store.recordCheckpoint({ checkpointId: checkpointId(sessionTag('main'), 1), sessionId: 'main', engine: 'shadow-context', status: 'committed', shadowedSeqs: [1, 2, 3, 4, 5], createdAt: T0 })
  await store.registerSession({ sessionId: 'other', workspace: '/repo' })
  await store.append([row('other', 1, 'secret of the other session: port 9999')])
  await store.registerSession({ sessionId: 'child', parentSessionId: 'main', forkSeq: 30, workspace: '/repo' })
  await store.append([row('child', 31, 'child own message about topic 3')])
})

afterAll(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const resolver = (sessionId = 'main', workspace?: string): RecallResolver =>
  new RecallResolver(store, { sessionId, ...(workspace === undefined ? {} : { workspace }) }, () => T0 + 100 * 60_000)

async function failure(run: () => Promise<unknown>): Promise<RecallError> {
  const outcome = await run().then(() => undefined, (error: unknown) => error)
  expect(outcome).toBeInstanceOf(RecallError)
  return outcome as RecallError
}

describe('RecallResolver', () => {
  it('searches and points at the hit', async () => {
    const result = await resolver().search({ query: 'staging port' })
    expect(result.shadowIds[0]).toBe(`${sessionTag('main')}.61`)
    expect(result.text).toContain('**staging**')
    expect(result.text).toContain(`shadow_read {"id":"${sessionTag('main')}.61"`)
  })

  it('filters by time, absolute and relative', async () => {
    const all = await resolver().search({ query: 'message topic', limit: 20 })
    expect(all.shadowIds.length).toBe(20)
    const recent = await resolver().search({ query: 'message topic', since: '45m ago', limit: 20 })
    const seqs = recent.shadowIds.map(id => Number(id.split('.')[1]))
    expect(seqs.every(seq => seq >= 55)).toBe(true)
    const window = await resolver().search({ query: 'message topic', since: new Date(T0 + 10 * 60_000).toISOString(), until: new Date(T0 + 12 * 60_000).toISOString() })
    expect(window.shadowIds.map(id => Number(id.split('.')[1])).toSorted((a, b) => a - b)).toEqual([10, 11, 12])
  })

  it('reads a checkpoint, a window around an id, a seq range and a time range', async () => {
    const tag = sessionTag('main')
    const checkpoint = await resolver().read({ checkpoint: `${tag}.c1` })
    expect(checkpoint.shadowIds).toEqual([1, 2, 3, 4, 5].map(seq => `${tag}.${seq}`))
    expect(checkpoint.text).toContain('message 3 about topic 3')
    const around = await resolver().read({ id: `${tag}.20`, before: 2, after: 1 })
    expect(around.shadowIds).toEqual([18, 19, 20, 21].map(seq => `${tag}.${seq}`))
    const range = await resolver().read({ from_seq: 10, to_seq: 12 })
    expect(range.shadowIds).toEqual([10, 11, 12].map(seq => `${tag}.${seq}`))
    const time = await resolver().read({ since: new Date(T0 + 40 * 60_000).toISOString(), until: new Date(T0 + 41 * 60_000).toISOString() })
    expect(time.shadowIds).toEqual([`${tag}.40`, `${tag}.41`])
    expect(time.cursor).toBeNull()
  })

  it('paginates under a token budget and continues inside a large message', async () => {
    const first = await resolver().read({ from_seq: 60, to_seq: 63, budget: 500 })
    expect(first.cursor).not.toBeNull()
    let text = first.text
    let cursor = first.cursor
    let pages = 1
    while (cursor !== null && pages < 50) {
      const next = await resolver().read({ cursor, budget: 4_000 })
      text += next.text
      cursor = next.cursor
      pages += 1
    }
    expect(cursor).toBeNull()
    expect(pages).toBeGreaterThan(2)
    expect(text).toContain('tail-marker')
    expect(text).toContain('缓存过期时间统一改成九十秒')
    expect(() => decodeCursor(first.cursor!)).not.toThrow()
  })

  it('keeps sessions apart: another session is not found, a fork sees its parent below the fork point only', async () => {
    const other = await resolver('main').search({ query: 'secret 9999' })
    expect(other.shadowIds).toEqual([])
    expect((await failure(() => resolver('main').read({ id: `${sessionTag('other')}.1` }))).code).toBe('NOT_FOUND')
    const child = await resolver('child').search({ query: 'staging port' })
    expect(child.shadowIds).toEqual([]) // seq 61 is after the fork point
    const inherited = await resolver('child').read({ id: `${sessionTag('main')}.20`, before: 0, after: 0 })
    expect(inherited.shadowIds).toEqual([`${sessionTag('main')}.20`])
    expect((await failure(() => resolver('child').read({ id: `${sessionTag('main')}.61` }))).code).toBe('NOT_FOUND')
    // the workspace scope widens search, never by default
    const widened = await resolver('main', '/repo').search({ query: 'secret 9999' })
    expect(widened.shadowIds).toEqual([`${sessionTag('other')}.1`])
  })

  it('gives every bad input a typed error and changes nothing', async () => {
    const before = await store.stats()
    const tag = sessionTag('main')
    const cases: Array<() => Promise<unknown>> = [
      () => resolver().search({}),
      () => resolver().search({ query: '' }),
      () => resolver().search({ query: '   ' }),
      () => resolver().search({ query: 'x'.repeat(100_000) }),
      () => resolver().search({ query: 'a\u0000b' }),
      () => resolver().search({ query: 42 }),
      () => resolver().search({ query: 'x', since: 'yesterday-ish' }),
      () => resolver().search({ query: 'x', since: '1h ago', until: '3h ago' }),
      () => resolver().search({ query: 'x', role: 'robot' }),
      () => resolver().search({ query: 'x', limit: 0 }),
      () => resolver().search({ query: 'x', limit: 1.5 }),
      () => resolver().search({ query: 'x', checkpoint: 'nope.c1' }),
      () => resolver().read({}),
      () => resolver().read({ checkpoint: `${tag}.c1`, id: `${tag}.1` }),
      () => resolver().read({ id: 'not-an-id' }),
      () => resolver().read({ id: `${tag}.999` }),
      () => resolver().read({ id: `${tag}.1`, before: -1 }),
      () => resolver().read({ from_seq: 9, to_seq: 3 }),
      () => resolver().read({ from_seq: 3 }),
      () => resolver().read({ from_seq: 0, to_seq: 1_000_000 }),
      () => resolver().read({ since: '2h ago', until: '1d ago' }),
      () => resolver().read({ checkpoint: 'zzzzzz.c9' }),
      () => resolver().read({ cursor: 'garbage' }),
      () => resolver().read({ cursor: Buffer.from('[{"kind":"seq"},-1,0]').toString('base64url') }),
      () => resolver().read({ cursor: 'abc', id: `${tag}.1` }),
      () => resolver().read({ budget: 10, checkpoint: `${tag}.c1` }),
      () => resolver('nobody').search({ query: 'x' }),
    ]
    for (const run of cases) {
      const error = await failure(run)
      expect(['INVALID_INPUT', 'NOT_FOUND', 'FORBIDDEN']).toContain(error.code)
    }
    // a cursor whose time window is not a number, and a bad passage offset, are the caller's fault
    const invalidOnly: Array<() => Promise<unknown>> = [
      () => resolver().read({ cursor: Buffer.from(JSON.stringify([{ kind: 'time', from: 'x', to: 5 }, 0, 0])).toString('base64url') }),
      () => resolver().read({ cursor: Buffer.from(JSON.stringify([{ kind: 'time', from: 0, to: 'later' }, 0, 0])).toString('base64url') }),
      () => resolver().read({ id: `${tag}.62`, at: -5 }),
      () => resolver().read({ id: `${tag}.62`, at: 10_000_000 }),
      () => resolver().read({ at: 5, checkpoint: `${tag}.c1` }),
    ]
    // an edited cursor is held to the bounds of the arguments it stands for
    const cursor = (selector: Record<string, unknown>, index = 0, offset = 0): string => Buffer.from(JSON.stringify([selector, index, offset])).toString('base64url')
    for (const selector of [
      { kind: 'id', id: `${tag}.30`, before: 100_000, after: 2 },
      { kind: 'id', id: `${tag}.30`, before: 2, after: 100_000 },
      { kind: 'id', id: `${tag}.62`, before: 0, after: 2, at: -5 },
      { kind: 'id', id: 'not-an-id', before: 2, after: 2 },
      { kind: 'seq', from: 0, to: 1_000_000_000 },
      { kind: 'seq', from: 9, to: 3 },
      { kind: 'time', from: 0, to: 1e300 },
      { kind: 'time', from: 5, to: 1 },
    ]) invalidOnly.push(() => resolver().read({ cursor: cursor(selector) }))
    // and a cursor it issued still reads on
    const first = await resolver().read({ id: `${tag}.30`, before: 2, after: 20, budget: 200 })
    expect((await resolver().read({ cursor: first.cursor! })).shadowIds.length).toBeGreaterThan(0)
    for (const run of invalidOnly) expect((await failure(run)).code).toBe('INVALID_INPUT')
    expect(await store.stats()).toEqual(before)
  })

  it('searches a query as a redacting store keeps text: the secret in it comes back nowhere in the answer', async () => {
    const redactor = new Redactor({})
    const redacting = new RecallResolver(store, { sessionId: 'main', redact: text => redactor.text(text) }, () => T0 + 100 * 60_000)
    const key = 'sk-proj-AbCdEf0123456789ZyXwVu9876'
    const plain = await resolver().search({ query: `staging port ${key}` })
    expect(plain.text.toLowerCase()).toContain('abcdef0123456789zyxwvu9876') // without redaction the absent term is named
    const result = await redacting.search({ query: `staging port ${key}` })
    expect(result.shadowIds[0]).toBe(`${sessionTag('main')}.61`)
    expect(result.text.replace(JSON.stringify(`staging port ${key}`), '').toLowerCase()).not.toContain('abcdef0123456789zyxwvu9876')
    expect((await failure(() => redacting.search({ query: key }))).code).toBe('INVALID_INPUT')
    expect((await failure(() => redacting.search({ query: key }))).message).toMatch(/redacts/)
  })

  it('echoes a long query clipped, not whole: the model wrote it already (a 2,000-character query came back whole on every call)', async () => {
    const query = `staging port ${Array.from({ length: 900 }, (_, index) => `q${index}z`).join(' ')}`.slice(0, 2_000)
    const result = await resolver().search({ query })
    const header = result.text.split('\n')[0]!
    expect(header.length).toBeLessThan(400)
    expect(header).toContain('staging port q0z')
    expect(result.text.length).toBeLessThan(1_000)
  })

  it('says a query of punctuation alone has nothing to search for (it blamed redaction, which was off)', async () => {
    for (const query of ['"""', '---', '?!', '** ** **']) {
      const error = await failure(() => resolver().search({ query }))
      expect(error.code).toBe('INVALID_INPUT')
      expect(error.message).toBe('query has no word or number to search for (punctuation alone matches nothing)')
    }
  })

  it('reads a hit at its passage first and continues with a cursor', async () => {
    const tag = sessionTag('main')
    const hit = await resolver().search({ query: 'tail-marker' })
    expect(hit.hits[0]!.message.seq).toBe(62)
    expect(hit.hits[0]!.passage.start).toBeGreaterThan(29_000)
    expect(hit.text).toContain(`shadow_read {"id":"${tag}.62","at":${hit.hits[0]!.passage.start}}`)
    const read = await resolver().read({ id: `${tag}.62`, at: hit.hits[0]!.passage.start, budget: 300 })
    expect(read.text).toContain('tail-marker')
    expect(read.text).toContain(`(continued from character ${hit.hits[0]!.passage.start})`)
    // the budget went to the passage, not to the 30,000 characters before it
    expect(read.text).not.toContain('big tool output')
    let text = read.text
    for (let cursor = read.cursor; cursor !== null;) {
      const next = await resolver().read({ cursor, budget: 2_000 })
      text += next.text
      cursor = next.cursor
    }
    expect(text).toContain('缓存过期时间统一改成九十秒')
  })

  it('never cuts a character in half: every page and a read at any offset is well-formed Unicode', async () => {
    const tag = sessionTag('main')
    // astral characters are two UTF-16 units: a cut between them sends a lone surrogate to the provider
    const text = `${'😀 emoji 𠀋 '.repeat(1_500)}end-of-emoji`
    await store.append([row('main', 70, text, { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'shell' })])
    for (const budget of [200, 201, 203, 257]) {
      let read = await resolver().read({ id: `${tag}.70`, before: 0, after: 0, budget })
      const pages = [read.text]
      while (read.cursor !== null) {
        read = await resolver().read({ cursor: read.cursor, budget })
        pages.push(read.text)
      }
      expect(pages.length).toBeGreaterThan(3)
      for (const page of pages) expect(page.isWellFormed(), `budget ${budget}`).toBe(true)
      expect(pages.join('\n')).toContain('end-of-emoji')
    }
    for (const at of [1, 3, 7, 11]) expect((await resolver().read({ id: `${tag}.70`, at, budget: 200 })).text.isWellFormed(), `at ${at}`).toBe(true)
    // and the snippets of search hits, wherever the match sits among the pairs
    await store.append([0, 1, 2, 3].map(pad => row('main', 71 + pad, `${'x'.repeat(pad)}${'😀𠀋'.repeat(400)} quokka${pad} ${'😀'.repeat(400)}`)))
    for (const pad of [0, 1, 2, 3]) {
      const found = await resolver().search({ query: `quokka${pad}` })
      expect(found.shadowIds[0]).toBe(`${tag}.${71 + pad}`)
      expect(found.text.isWellFormed(), `pad ${pad}`).toBe(true)
    }
  })

  it('ends a page of originals early when its text passes the cap, and paging by start still reaches every message', async () => {
    await store.registerSession({ sessionId: 'bulky', workspace: '/repo' })
    const big = (seq: number): string => `${seq}:${'y'.repeat(400_000)}`
    await store.append([1, 2, 3, 4, 5, 6].map(seq => row('bulky', seq, big(seq), { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'shell' })))
    const checkpoint = checkpointId(sessionTag('bulky'), 1)
    await store.recordCheckpoint({ checkpointId: checkpoint, sessionId: 'bulky', engine: 'shadow-context', status: 'committed', shadowedSeqs: [1, 2, 3, 4, 5, 6], createdAt: T0 })
    const seen: number[] = []
    for (let start = 0, pages = 0; start < 6; pages += 1) {
      const page = await resolver('bulky').page({ checkpoint }, start, 100)
      expect(page.total).toBe(6)
      expect(page.messages.length).toBeGreaterThan(0)
      expect(page.messages.reduce((sum, message) => sum + message.text.length, 0)).toBeLessThanOrEqual(1_000_000)
      for (const message of page.messages) expect(message.text).toBe(big(message.seq)) // whole, as stored
      seen.push(...page.messages.map(message => message.seq))
      start += page.messages.length
      expect(pages).toBeLessThan(6)
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6])
    // one message over the cap still comes whole
    await store.append([row('bulky', 7, 'z'.repeat(1_500_000))])
    expect((await resolver('bulky').page({ id: `${sessionTag('bulky')}.7`, before: 0, after: 0 })).messages[0]!.text.length).toBe(1_500_000)
  })

  it('pages a seq range or time window by reading only the page\'s own rows, the same pages as before', async () => {
    await store.registerSession({ sessionId: 'pager', workspace: '/repo' })
    // sparse seqs (a log's other events take seqs too) and a time per row
    const seqs = Array.from({ length: 400 }, (_, index) => index + 1).filter(seq => seq % 7 !== 0)
    await store.append(seqs.map(seq => row('pager', seq, `pager row ${seq}`)))
    let rowsRead = 0
    const counted = new Proxy(store, {
      get(target, name) {
        if (name === 'read') return async (...args: Parameters<ShadowStore['read']>) => { const rows = await target.read(...args); rowsRead += rows.length; return rows }
        const value = Reflect.get(target, name) as unknown
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    const pager = new RecallResolver(counted, { sessionId: 'pager' }, () => T0 + 1_000 * 60_000)
    const windows: Array<{ args: ReadArgs; bounds: ReadOptions }> = [
      { args: { from_seq: 5, to_seq: 390 }, bounds: { fromSeq: 5, toSeq: 390 } },
      { args: { since: new Date(T0 + 50 * 60_000).toISOString(), until: new Date(T0 + 300 * 60_000).toISOString() }, bounds: { timeFrom: T0 + 50 * 60_000, timeTo: T0 + 300 * 60_000 } },
    ]
    for (const { args: window, bounds } of windows) {
      const all = await store.read({ sessionId: 'pager' }, { ...bounds, limit: 5_000 })
      expect(all.length).toBeGreaterThan(200)
      for (const start of [0, 1, 17, 100, all.length - 3, all.length - 1, all.length]) {
        rowsRead = 0
        const page = await pager.page(window, start, 20)
        expect(page.total, `${JSON.stringify(window)} at ${start}`).toBe(all.length)
        expect(page.messages.map(message => message.seq)).toEqual(all.slice(start, start + 20).map(message => message.seq))
        // its own rows, and the window's first and last rows (the seqs its start is looked for between)
        expect(rowsRead, `rows read for the page at ${start}`).toBeLessThanOrEqual(22)
      }
      expect((await failure(() => pager.page(window, all.length + 1, 20))).code).toBe('INVALID_INPUT')
    }
  })

  it('pages a time window whose rows are not one seq range (times out of seq order) the same as reading it whole', async () => {
    await store.registerSession({ sessionId: 'pager-skew', workspace: '/repo' })
    // every 9th row's clock was behind: it sits between the window's seqs but outside its times
    await store.append(Array.from({ length: 120 }, (_, index) => row('pager-skew', index + 1, `skewed row ${index + 1}`, index % 9 === 4 ? { time: T0 - 86_400_000 } : {})))
    const bounds = { timeFrom: T0 + 10 * 60_000, timeTo: T0 + 100 * 60_000 }
    const all = await store.read({ sessionId: 'pager-skew' }, { ...bounds, limit: 5_000 })
    const window = { since: new Date(bounds.timeFrom).toISOString(), until: new Date(bounds.timeTo).toISOString() }
    for (const start of [0, 7, 40, all.length - 1]) {
      const page = await resolver('pager-skew').page(window, start, 15)
      expect(page.total).toBe(all.length)
      expect(page.messages.map(message => message.seq)).toEqual(all.slice(start, start + 15).map(message => message.seq))
    }
  })

  it('pages generated windows (sparse seqs, clocks going back, forks) exactly as a whole read of the window lists them', async () => {
    let count = 0
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ gap: fc.integer({ min: 1, max: 5 }), minutes: fc.integer({ min: -3, max: 10 }) }), { minLength: 1, maxLength: 50 }),
      fc.option(fc.integer({ min: 1, max: 40 })), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 25 }), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 300 }), fc.boolean(),
      async (steps, forkAt, start, size, a, b, byTime) => {
        const parent = `gen-window-${count++}`
        await store.registerSession({ sessionId: parent, workspace: '/repo' })
        let seq = 0
        let minute = 0
        await store.append(steps.map(step => {
          seq += step.gap
          minute += step.minutes
          return row(parent, seq, `generated row ${seq}`, { time: T0 + minute * 60_000 })
        }))
        let reader = parent
        if (forkAt !== null) {
          reader = `${parent}-fork`
          await store.registerSession({ sessionId: reader, parentSessionId: parent, forkSeq: forkAt, workspace: '/repo' })
          await store.append([row(reader, forkAt + 1, 'fork row', { time: T0 + 5 * 60_000 }), row(reader, forkAt + 3, 'later fork row', { time: T0 + 500 * 60_000 })])
        }
        const [low, high] = [Math.min(a, b), Math.max(a, b)]
        const window = byTime ? { since: new Date(T0 + low * 60_000).toISOString(), until: new Date(T0 + high * 60_000).toISOString() } : { from_seq: low, to_seq: high }
        const bounds = byTime ? { timeFrom: T0 + low * 60_000, timeTo: T0 + high * 60_000 } : { fromSeq: low, toSeq: high }
        const all = await store.read({ sessionId: reader }, { ...bounds, limit: 5_000 })
        const paged = new RecallResolver(store, { sessionId: reader }, () => T0 + 1_000 * 60_000)
        if (start > all.length) {
          expect((await failure(() => paged.page(window, start, size))).code).toBe('INVALID_INPUT')
          return
        }
        const page = await paged.page(window, start, size)
        expect(page.total).toBe(all.length)
        expect(page.messages.map(message => `${message.sessionId}:${message.seq}`)).toEqual(all.slice(start, start + size).map(message => `${message.sessionId}:${message.seq}`))
      },
    ), { numRuns: 200 })
  })

  it('survives 10 000 generated payloads with typed errors or valid results only', async () => {
    const before = await store.stats()
    const tag = sessionTag('main')
    const junk = fc.oneof(
      fc.string(), fc.string({ unit: 'binary', maxLength: 60 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null),
      fc.constantFrom('NEAR(a b)', '"', '*', '\u0000', 'body:x', '-', '()'), fc.string({ maxLength: 5 }).map(text => text.repeat(20_000)),
      fc.array(fc.string(), { maxLength: 3 }), fc.object({ maxDepth: 1 }),
    )
    /** Mostly well-formed values, sometimes junk: the fuzz must reach deep paths as well as validation. */
    const usually = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ arbitrary: valid, weight: 5 }, { arbitrary: junk, weight: 1 })
    const words = fc.array(fc.constantFrom('staging', 'port', 'topic', 'message', '5433', 'database', '缓存', '过期时间', 'tail-marker', 'x'), { minLength: 1, maxLength: 4 }).map(list => list.join(' '))
    const query = usually(fc.oneof(words, fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('NEAR(port', '"staging', 'port OR', '*', 'a AND NOT b', 'scope:x')))
    const time = usually(fc.oneof(fc.constantFrom('2h ago', '30m ago', '1d ago', 'now'), fc.integer({ min: 0, max: 200 }).map(minute => new Date(T0 + minute * 60_000).toISOString())))
    const id = usually(fc.integer({ min: 0, max: 80 }).map(seq => `${tag}.${seq}`))
    const small = usually(fc.integer({ min: 0, max: 25 }))
    const optional = { requiredKeys: [] as [] }
    const searchArgs = fc.record({
      query,
      since: time, until: time, role: usually(fc.constantFrom('user', 'assistant', 'tool', 'system')), tool: usually(fc.constantFrom('shell', 'read_file')),
      checkpoint: usually(fc.constantFrom(`${tag}.c1`, `${tag}.c2`)), limit: usually(fc.integer({ min: 1, max: 20 })),
    }, { requiredKeys: ['query'] })
    const readArgs = fc.oneof(
      fc.record({ checkpoint: usually(fc.constantFrom(`${tag}.c1`, 'zzzzzz.c1')), budget: usually(fc.integer({ min: 200, max: 8_000 })) }, { requiredKeys: ['checkpoint'] }),
      fc.record({ id, before: small, after: small, budget: usually(fc.integer({ min: 200, max: 8_000 })) }, { requiredKeys: ['id'] }),
      fc.record({ from_seq: usually(fc.integer({ min: 0, max: 70 })), to_seq: usually(fc.integer({ min: 0, max: 90 })) }, optional),
      fc.record({ since: time, until: time, budget: usually(fc.integer({ min: 200, max: 8_000 })) }, optional),
      fc.record({ cursor: usually(fc.tuple(fc.constantFrom({ kind: 'seq', from: 1, to: 60 }, { kind: 'checkpoint', checkpoint: `${tag}.c1` }), fc.nat(70), fc.nat(40_000)).map(([selector, index, offset]) => Buffer.from(JSON.stringify([selector, index, offset])).toString('base64url'))) }, { requiredKeys: ['cursor'] }),
      fc.record({ checkpoint: junk, id: junk, before: junk, after: junk, from_seq: junk, to_seq: junk, since: junk, until: junk, budget: junk, cursor: junk }, optional),
    )
    let valid = 0
    let typed = 0
    await fc.assert(fc.asyncProperty(fc.boolean(), searchArgs, readArgs, async (search, sArgs, rArgs) => {
      try {
        const outcome = search ? await resolver().search(sArgs) : await resolver().read(rArgs)
        expect(typeof outcome.text).toBe('string')
        valid += 1
      } catch (error) {
        if (!(error instanceof RecallError)) throw error
        typed += 1
      }
    }), { numRuns: 10_000, seed: 20261130 })
    expect(valid + typed).toBe(10_000)
    console.log(`fuzz: ${valid} valid results, ${typed} typed errors`)
    expect(valid).toBeGreaterThan(500)
    expect(await store.stats()).toEqual(before)
  })
})

describe('RecallResolver reading a window', () => {
  const BIG = 2_000_000
  const tagOf = sessionTag('windowed')

  beforeAll(async () => {
    await store.registerSession({ sessionId: 'windowed', workspace: '/elsewhere' })
    const rows: ShadowMessageInput[] = []
    // 1-5 small, 6-11 big tool outputs, 12-400 tiny
    for (let seq = 1; seq <= 400; seq += 1) {
      const text = seq >= 6 && seq <= 11 ? `output ${seq} ${'y'.repeat(BIG)} end ${seq}` : `note ${seq}`
      rows.push(row('windowed', seq, text, seq >= 6 && seq <= 11 ? { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'shell' } : {}))
    }
    await store.append(rows)
  })

  /** Characters of text the store hands the resolver while `run` runs. */
  async function charsRead(run: () => Promise<unknown>): Promise<number> {
    const read = store.read.bind(store)
    let chars = 0
    store.read = async (...args) => {
      const rows = await read(...args)
      chars += rows.reduce((sum, message) => sum + message.text.length, 0)
      return rows
    }
    try {
      await run()
    } finally {
      store.read = read
    }
    return chars
  }

  /** Every page of a read, through its cursors. */
  async function pages(args: Record<string, unknown>): Promise<string[]> {
    const texts: string[] = []
    let page = await resolver('windowed').read(args)
    texts.push(page.text)
    while (page.cursor !== null && texts.length < 200) {
      page = await resolver('windowed').read({ cursor: page.cursor, budget: args['budget'] })
      texts.push(page.text)
    }
    expect(page.cursor).toBeNull()
    return texts
  }

  const heads = (texts: readonly string[]): number[] =>
    texts.flatMap(text => [...text.matchAll(/^── \S+\.(\d+) ·/gm)].map(match => Number(match[1]))).filter((seq, index, all) => seq !== all[index - 1])

  it('reads only as far as a page reaches, not every message of the window (six 2 MB outputs were read for every page)', async () => {
    // a page reads in batches (2, 4, 8, … rows): at most a batch past what it shows, here two of the outputs
    const chars = await charsRead(() => resolver('windowed').read({ from_seq: 1, to_seq: 20, budget: 2_000 }))
    expect(chars).toBeLessThan(2 * BIG + 10_000)
    const first = await resolver('windowed').read({ from_seq: 1, to_seq: 20, budget: 2_000 })
    expect(first.text).toContain('messages 1–6 of 20')
    // a later page, by its cursor, does not read the earlier outputs again
    const second = await resolver('windowed').read({ cursor: first.cursor!, budget: 2_000 })
    expect(second.text).toContain('(continued from character')
    expect(await charsRead(() => resolver('windowed').read({ cursor: first.cursor!, budget: 2_000 }))).toBeLessThan(2 * BIG + 10_000)
    const time = await charsRead(() => resolver('windowed').read({ since: new Date(T0).toISOString(), until: new Date(T0 + 30 * 60_000).toISOString(), budget: 2_000 }))
    expect(time).toBeLessThan(2 * BIG + 10_000)
  })

  it('pages through a window of many small messages, each once, in order, to its end', async () => {
    const seqTexts = await pages({ from_seq: 12, to_seq: 400, budget: 200 })
    expect(seqTexts.length).toBeGreaterThan(5)
    expect(heads(seqTexts)).toEqual(Array.from({ length: 389 }, (_, index) => 12 + index))
    expect(seqTexts[0]).toContain('of 389')
    expect(seqTexts.at(-1)).toContain('[end]')
    const timeTexts = await pages({ since: new Date(T0 + 300 * 60_000).toISOString(), until: new Date(T0 + 400 * 60_000).toISOString(), budget: 500 })
    expect(heads(timeTexts)).toEqual(Array.from({ length: 101 }, (_, index) => 300 + index))
    expect(seqTexts.join('\n')).not.toContain(`${tagOf}.401`)
  })

  it('keeps every page within its budget, title and cursor line included (a read at budget 200 came to 257 tokens)', async () => {
    const within = (text: string, budget: number): void => expect(Math.ceil(text.length / 4), text.slice(0, 120)).toBeLessThanOrEqual(budget)
    for (const budget of [200, 500, 2_000]) {
      for (const text of await pages({ from_seq: 12, to_seq: 400, budget })) within(text, budget)
      for (const text of await pages({ since: new Date(T0 + 300 * 60_000).toISOString(), until: new Date(T0 + 400 * 60_000).toISOString(), budget })) within(text, budget)
      // a 2 MB output, cut: its first pages
      let page = await resolver('windowed').read({ id: `${tagOf}.7`, budget })
      for (let count = 0; count < 5 && page.cursor !== null; count += 1) {
        within(page.text, budget)
        page = await resolver('windowed').read({ cursor: page.cursor, budget })
      }
      within((await resolver('windowed').read({ from_seq: 1, to_seq: 20, budget })).text, budget)
    }
  })

  it('ends an edited cursor that points past its window instead of failing', async () => {
    const edited = Buffer.from(JSON.stringify([{ kind: 'seq', from: 1, to: 20, next: 19 }, 0, 0])).toString('base64url')
    const texts = await pages({ cursor: edited, budget: 500 })
    expect(heads(texts)).toEqual([19, 20])
    const beyond = Buffer.from(JSON.stringify([{ kind: 'seq', from: 1, to: 20, next: 500 }, 3, 0])).toString('base64url')
    expect((await resolver('windowed').read({ cursor: beyond })).text).toContain('[end]')
    const negative = Buffer.from(JSON.stringify([{ kind: 'seq', from: 1, to: 20, next: -1 }, 0, 0])).toString('base64url')
    expect((await failure(() => resolver('windowed').read({ cursor: negative }))).code).toBe('INVALID_INPUT')
  })
})

