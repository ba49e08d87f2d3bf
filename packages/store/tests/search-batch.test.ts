/**
 * Issue 14 fast path: a backend answers a search's candidate lists in one call (searchIndexes:
 * SQLite reads the words lists as ids, then their rows once; PostgreSQL runs every light
 * newest-first list in one statement), and gives the words lists as ids only (listIds,
 * candidateRows: only the chosen candidates are read). The search must return exactly what it
 * returns when every list's rows are asked for on its own: same hits in the same order, same
 * snippets, same term report, on a varied corpus (tool calls and results, questions and short
 * replies, CJK, a fork) under every kind of option. On PostgreSQL, reads by key asked at once are
 * one statement too (reads.ts): the lists and rows must be those of one call each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresBackend, ShadowStore, type IndexQuery, type SearchOptions, type ShadowMessageInput } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

/** Deterministic generator (a 32-bit LCG, Numerical Recipes constants): the corpus is the same on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => (state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0) / 4_294_967_296
}

const WORDS = ['connection', 'pool', 'exhausted', 'retry', 'budget', 'timeout', 'migration', 'lease', 'deploy', 'cache', 'refund', 'payment', 'worker', 'queue', 'deprecated', 'idempotency', 'staging', 'port', 'flush', 'nightly']
const PIECES = ['db/pool', 'src/gateway.ts', 'payments/refund.ts', 'RETRY_LIMIT', 'getPoolSize', 'v2.3.1', '连接池耗尽', '数据库迁移', '证书过期', 'café', '→', 'ERR_TIMEOUT']
const TOOLS = ['grep', 'read_file', 'shell', 'shadow_search']

function corpus(): ShadowMessageInput[] {
  const next = random(7)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!
  const sentence = (): string => Array.from({ length: 3 + Math.floor(next() * 12) }, () => (next() < 0.2 ? pick(PIECES) : pick(WORDS))).join(next() < 0.5 ? ' ' : ', ')
  const rows: ShadowMessageInput[] = []
  for (const sessionId of ['bp', 'bq', 'br']) {
    let seq = 1
    let call = 0
    while (seq <= 160) {
      const roll = next()
      if (roll < 0.3) {
        // a tool call and its result
        call += 1
        const tool = pick(TOOLS)
        rows.push(message(sessionId, seq++, `[tool call ${tool}] {"query":"${sentence()}"}`, { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: tool, callId: `${sessionId}-c${call}` }))
        rows.push(message(sessionId, seq++, sentence().repeat(1 + Math.floor(next() * 3)), { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: tool, callId: `${sessionId}-c${call}` }))
      } else if (roll < 0.45) {
        // a question and a short reply
        rows.push(message(sessionId, seq++, `what ${pick(WORDS)} should the ${pick(WORDS)} use?`))
        rows.push(message(sessionId, seq++, `make it ${Math.floor(next() * 90)}`, { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model' }))
      } else if (roll < 0.5) {
        rows.push(message(sessionId, seq++, `[Shadow Context checkpoint] ${sentence()}`, { sourceKind: 'checkpoint' }))
      } else {
        rows.push(message(sessionId, seq++, sentence(), next() < 0.5 ? {} : { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model' }))
      }
    }
  }
  return rows
}

const QUERIES = ['connection pool exhausted', 'db/pool', 'pool', 'retry budget', 'what timeout should the worker use', 'RETRY_LIMIT', 'getPoolSize', '数据库迁移', '连接池', 'database migration', 'refund.ts', 'deprecated idempotency', 'v2.3.1', 'café', 'nightly flush cache', 'zeppelin', 'ERR_TIMEOUT lease']

describe.each(TARGETS)('batched candidate lists (searchIndexes, listIds) on $name', target => {
  let store: ShadowStore
  let batches = 0
  beforeAll(async () => {
    await target.setup()
    // the index lists are what this checks: no resident index answers the lineage scopes
    store = await ShadowStore.open(target.location(), { resident: false })
    const rows = corpus()
    await store.append(rows.filter(row => row.sessionId !== 'br' || row.seq <= 120))
    // a fork of bq that sees its parent below seq 90, and writes its own rows after
    await store.registerSession({ sessionId: 'bf', parentSessionId: 'bq', forkSeq: 90 })
    await store.append(rows.filter(row => row.sessionId === 'bq' && row.seq > 100).map(row => ({ ...row, sessionId: 'bf', seq: row.seq - 10 })))
    await store.append(rows.filter(row => row.sessionId === 'br' && row.seq > 120))
    const backend = store.backend as { searchIndexes?: (...args: never[]) => unknown; listIds?: (...args: never[]) => unknown }
    for (const name of ['searchIndexes', 'listIds'] as const) {
      const batched = backend[name]!.bind(backend)
      backend[name] = (...args: never[]) => {
        batches += 1
        return batched(...args)
      }
    }
  })
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('returns what one call per list returns, for every query and option', async () => {
    const times = (await store.read({ sessionId: 'br' }, { limit: 200 })).map(row => row.time)
    const variants: SearchOptions[] = [
      { sessionId: 'bp' },
      { sessionId: 'bq', limit: 3 },
      { sessionId: 'bf' },
      { sessionId: 'bf', allSessions: true, limit: 30 },
      { sessionId: 'br', beforeSeq: 100 },
      { sessionId: 'br', roles: ['tool'] },
      { sessionId: 'br', toolName: 'grep' },
      { sessionId: 'br', excludeSourceKinds: ['checkpoint'], excludeToolNames: ['shadow_search'] },
      { sessionId: 'br', timeFrom: times[20]!, timeTo: times[110]! },
      { sessionId: 'bp', workspace: 'none' },
    ]
    let compared = 0
    let found = 0
    for (const options of variants) {
      for (const query of QUERIES) {
        const before = batches
        const fast = await store.search(query, options)
        const usedBatch = batches > before
        const plain = await withoutBatch(store, () => store.search(query, options))
        expect(fast, `${query} ${JSON.stringify(options)}`).toEqual(plain)
        compared += 1
        if (usedBatch && fast.hits.length > 0) found += 1
      }
    }
    // not vacuous: most comparisons went through the batch and found something
    expect(found).toBeGreaterThan(compared / 2)
  })

  it('gives each list exactly what searchIndex gives it, whatever else is in the batch', async () => {
    const backend = store.backend
    const segments = [{ sessionId: 'bq', tag: (await store.session('bq'))!.tag, belowSeq: Number.POSITIVE_INFINITY }]
    const everyone = await Promise.all((await store.sessions()).map(async session => ({ sessionId: session.sessionId, tag: session.tag, belowSeq: Number.POSITIVE_INFINITY })))
    const base = { rankWindow: 1_000, order: 'newest', light: true } as const
    const queries: IndexQuery[] = [
      { ...base, segments, index: 'words', terms: ['pool'], operator: 'or', limit: 7 },
      { ...base, segments, index: 'words', terms: ['connection', 'pool'], operator: 'and', limit: 50 },
      { ...base, segments: everyone, index: 'words', terms: ['pool'], operator: 'or', limit: 12 },
      { ...base, segments, index: 'grams', terms: ['db/pool', 'refund.ts'], operator: 'or', limit: 9 },
      { ...base, segments: everyone, index: 'grams', terms: ['连接池耗尽'], operator: 'or', limit: 5 },
      { ...base, segments, index: 'words', terms: ['zeppelin'], operator: 'or', limit: 5 },
      { ...base, segments, index: 'words', terms: ['pool'], operator: 'or', limit: 5, roles: ['tool'], excludeToolNames: ['grep'] },
      // not batched on PostgreSQL (ranked, or full rows): answered beside the batch
      { ...base, segments, index: 'words', terms: ['retry', 'budget'], operator: 'or', limit: 6, order: 'rank' },
      { ...base, segments: everyone, index: 'words', terms: ['cache'], operator: 'or', limit: 4, light: false },
    ]
    const together = await backend.searchIndexes!(queries)
    const alone = []
    for (const query of queries) alone.push(await backend.searchIndex(query))
    expect(together).toEqual(alone)
    // not vacuous: lists overlap (a row held by several is sent once and still in each) and most are not empty
    expect(together.filter(result => result.hits.length > 0).length).toBeGreaterThanOrEqual(7)
    const held = together.flatMap(result => [...new Set(result.hits.map(hit => hit.message.shadowId))])
    expect(new Set(held).size).toBeLessThan(held.length)
    // as ids, then rows by id: the same light rows in the same order
    const words = queries.filter(query => query.index === 'words' && query.order === 'newest' && query.light === true)
    const ids = await backend.listIds!(words)
    const rows = await Promise.all(ids.map(list => backend.candidateRows!(list)))
    expect(rows).toEqual(await Promise.all(words.map(async query => (await backend.searchIndex(query)).hits.map(hit => hit.message))))
    expect(ids.flat().length).toBeGreaterThan(20)
  })

  it('gives the same ids whatever count a list is told to expect (a hint for the cheaper read, never a result)', async () => {
    const backend = store.backend
    const segments = await store.scopeSegments({ sessionId: 'bp' })
    const everyone = await store.scopeSegments({ sessionId: 'bp', allSessions: true })
    const base = { rankWindow: Number.POSITIVE_INFINITY, order: 'newest', light: true } as const
    const queries: IndexQuery[] = [
      { ...base, segments, index: 'words', terms: ['pool'], operator: 'or', limit: 7 },
      { ...base, segments, index: 'words', terms: ['pool'], operator: 'or', limit: 500 },
      { ...base, segments, index: 'words', terms: ['connection', 'pool'], operator: 'and', limit: 50 },
      { ...base, segments: everyone, index: 'words', terms: ['pool', 'retry'], operator: 'or', limit: 12 },
      { ...base, segments, index: 'words', terms: ['pool'], operator: 'or', limit: 5, roles: ['tool'], excludeToolNames: ['grep'] },
      { ...base, segments, index: 'words', terms: ['zeppelin'], operator: 'or', limit: 5 },
    ]
    const truth = await backend.listIds!(queries)
    // told too few (the list fills after all), the exact count, too many, none
    for (const expected of [0, 1, 6, 40, 499, 100_000]) {
      expect(await backend.listIds!(queries.map(query => ({ ...query, expected })))).toEqual(truth)
    }
    // not vacuous: some lists fill their limit, some do not
    expect(truth.some((ids, at) => ids.length === queries[at]!.limit)).toBe(true)
    expect(truth.some((ids, at) => ids.length > 0 && ids.length < queries[at]!.limit)).toBe(true)
  })

  it.runIf(target.name === 'postgres')('reads asked at once are one statement with the rows one read each gives', async () => {
    const backend = store.backend as PostgresBackend
    const keys: Array<[string, number]> = [['bp', 3], ['bq', 40], ['bp', 3], ['bf', 95], ['bf', 85], ['br', 160], ['bp', 9_999], ['nobody', 1]]
    const alone = []
    for (const [sessionId, seq] of keys) alone.push(await backend.getMessage(sessionId, seq))
    const together = await statementsOf(backend, () => Promise.all(keys.map(([sessionId, seq]) => backend.getMessage(sessionId, seq))))
    expect(together.value).toEqual(alone)
    expect(together.statements).toBe(1)
    // present and absent keys both answered (a fork's own rows, its parent's rows are not its own)
    expect(alone.map(row => row === undefined)).toEqual([false, false, false, false, true, false, true, true])
  })

  it.runIf(target.name === 'postgres')('range reads asked at once are one statement with the rows one read each gives; a bad one fails alone', async () => {
    const backend = store.backend as PostgresBackend
    const fork = await store.scopeSegments({ sessionId: 'bf' })
    const one = await store.scopeSegments({ sessionId: 'bp' })
    const reads = [
      { segments: one, limit: 5 },
      { segments: one, limit: 5, descending: true },
      { segments: fork, fromSeq: 80, toSeq: 100, limit: 50 },
      { segments: fork, fromSeq: 80, toSeq: 100, limit: 50, descending: true },
      { segments: one, fromSeq: 10, toSeq: 11, roles: ['assistant'], limit: 1 },
      { segments: one, fromSeq: 9_000, limit: 3 },
      { segments: one, limit: 0 },
    ] as const
    const alone = []
    for (const read of reads) alone.push(await backend.readMessages(read))
    const together = await statementsOf(backend, () => Promise.all(reads.map(read => backend.readMessages(read))))
    expect(together.value).toEqual(alone)
    expect(together.statements).toBe(1)
    // a read the server refuses (seq past bigint) fails on its own; the others are answered
    const mixed = await Promise.allSettled([backend.readMessages(reads[2]), backend.readMessages({ segments: one, fromSeq: 2 ** 70, limit: 1 }), backend.readMessages(reads[0])])
    expect(mixed.map(outcome => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(mixed.flatMap(outcome => (outcome.status === 'fulfilled' ? [outcome.value] : []))).toEqual([alone[2], alone[0]])
    // not vacuous: a fork's lineage read crosses its parent's rows, in both orders
    expect(alone[2]!.map(row => row.sessionId)).toContain('bq')
    expect(alone[3]!.map(row => row.seq)).toEqual(alone[2]!.map(row => row.seq).toReversed())
    expect(alone[6]).toEqual([])
  })
})

/** What `run` returns, and how many statements it sent on the backend's main pool. */
async function statementsOf<T>(backend: PostgresBackend, run: () => Promise<T>): Promise<{ value: T; statements: number }> {
  let statements = 0
  const pool = backend.connection.pool
  const query = pool.query.bind(pool)
  pool.query = ((...args: Parameters<typeof query>) => {
    statements += 1
    return query(...args)
  }) as typeof pool.query
  try {
    return { value: await run(), statements }
  } finally {
    pool.query = query
  }
}

/** Run with the backend's batch and id lists hidden: the search reads each list's rows on its own, as PostgreSQL does. */
async function withoutBatch<T>(store: ShadowStore, run: () => Promise<T>): Promise<T> {
  const backend = store.backend as Record<'searchIndexes' | 'listIds' | 'candidateRows', unknown>
  const hidden = { searchIndexes: backend.searchIndexes, listIds: backend.listIds, candidateRows: backend.candidateRows }
  backend.searchIndexes = undefined
  backend.listIds = undefined
  backend.candidateRows = undefined
  try {
    return await run()
  } finally {
    Object.assign(backend, hidden)
  }
}
