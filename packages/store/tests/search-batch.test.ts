/**
 * Issue 14 fast path: SQLite answers a search's candidate lists in one call (searchIndexes: the
 * words lists as ids, then their rows read once), and gives the words lists as ids only (listIds,
 * candidateRows: only the chosen candidates are read). The search must return exactly what it
 * returns when every list's rows are asked for on its own (as on PostgreSQL): same hits in the same order, same snippets, same term
 * report, on a varied corpus (tool calls and results, questions and short replies, CJK, a fork)
 * under every kind of option.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, type SearchOptions, type ShadowMessageInput } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

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

describe('batched candidate lists (SQLite searchIndexes, listIds)', () => {
  const dir = tempDir()
  let store: ShadowStore
  let batches = 0
  beforeAll(async () => {
    store = await ShadowStore.open(join(dir.path, 'shadow.db'))
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
    dir.cleanup()
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
})

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
