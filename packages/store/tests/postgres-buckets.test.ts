/**
 * PostgreSQL plans that judge a substring by the id buckets just below the newest rows (the
 * head): whichever plan that chooses — the head alone, bucket probes, one read of the index —
 * lists and counts are what a scan of the rows gives. The store's ids jump 40 buckets, so a
 * small test store spans buckets as a large one does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresBackend, ShadowStore, type ShadowMessageInput } from '../src/index.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

const BUCKET = 1 << 16

describe('PostgreSQL substring plans across id buckets', () => {
  it('lists and counts substrings the newest rows lack exactly as a scan would, dense or sparse below them', async () => {
    const schema = 'buckets_one'
    const store = await ShadowStore.open(target.server().storeDsn(schema))
    // bucket 0: "heron_v2" in every 3rd row (400), "osprey.cfg" in 5, "wren_x" in 700, "finch.md" in 3
    const old = Array.from({ length: 1_200 }, (_, index) => message('b0', index,
      `row ${index}${index % 3 === 0 ? ' heron_v2' : ''}${index < 5 ? ' osprey.cfg' : ''}${index < 700 ? ' wren_x' : ''}${index < 3 ? ' finch.md' : ''}`))
    // then bucket 40: 300 rows below the walk, each with "kestrel.log" (the head alone fills a
    // list), 10 with "heron_v2" and 20 with "finch.md" (dense: the probes go on); then 2,000 newest
    // rows with none of them
    const mid = Array.from({ length: 300 }, (_, index) => message('b1', index, `row ${index} kestrel.log${index < 10 ? ' heron_v2' : ''}${index >= 20 && index < 40 ? ' finch.md' : ''}`))
    const newest = Array.from({ length: 2_000 }, (_, index) => message('b2', index, `row ${index} plain`))
    const append = async (rows: ShadowMessageInput[]): Promise<void> => {
      for (let start = 0; start < rows.length; start += 500) await store.append(rows.slice(start, start + 500))
    }
    await append(old)
    await target.sql(`ALTER TABLE ${schema}.messages ALTER COLUMN id RESTART WITH ${40 * BUCKET}`)
    await append(mid)
    await append(newest)
    const arrival = [...old, ...mid, ...newest]
    const holding = (anchor: string): string[] => arrival.filter(row => row.text.includes(anchor)).map(row => `${row.sessionId}/${row.seq}`).toReversed()
    const segments = await store.scopeSegments({ sessionId: 'b0', allSessions: true })
    const anchors = ['kestrel.log', 'heron_v2', 'finch.md', 'osprey.cfg', 'wren_x', 'absent.cfg']
    const list = { segments, index: 'grams', operator: 'or', limit: 50, rankWindow: 1_000, order: 'newest', light: true } as const
    for (const anchor of anchors) {
      const found = await store.backend.searchIndex({ ...list, terms: [anchor] })
      expect(found.hits.map(hit => `${hit.message.sessionId}/${hit.message.seq}`), anchor).toEqual(holding(anchor).slice(0, 50))
    }
    const batch = await store.backend.searchIndexes!(anchors.map(anchor => ({ ...list, terms: [anchor] })))
    expect(batch.map(result => result.hits.map(hit => `${hit.message.sessionId}/${hit.message.seq}`))).toEqual(anchors.map(anchor => holding(anchor).slice(0, 50)))
    // counts up to a cap: reached in the head, dense (probed on), sparse (one read), none
    for (const cap of [30, 100, 300, 2_000]) {
      const counts = await store.backend.documentFrequencies({ segments, index: 'grams', terms: anchors, cap })
      expect(counts, `cap ${cap}`).toEqual(anchors.map(anchor => Math.min(holding(anchor).length, cap)))
    }
    // the plans really differ: a dense substring is counted bucket by bucket, a sparse one in one read
    const pool = (store.backend as PostgresBackend).connection.searchPool
    const explained = async (anchor: string, cap: number): Promise<string> => {
      const statements: Array<{ sql: string; params: unknown[] }> = []
      const query = pool.query.bind(pool)
      pool.query = ((sql: string, params: unknown[]) => {
        statements.push({ sql, params })
        return query(sql, params)
      }) as typeof pool.query
      await store.backend.documentFrequencies({ segments, index: 'grams', terms: [anchor], cap })
      pool.query = query
      const [statement] = statements
      const plan = await pool.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${statement!.sql}`, statement!.params)
      return plan.rows.map(row => String(row['QUERY PLAN'])).join('\n')
    }
    const wholeRead = /Bitmap Index Scan on messages_grams \(actual rows=\d+ loops=1\)\n\s+Index Cond: \(grams ~~ t\.p\)$/m
    expect(await explained('wren_x', 2_000)).toMatch(wholeRead)
    expect(await explained('heron_v2', 30)).not.toMatch(wholeRead)
    expect(await explained('finch.md', 100)).not.toMatch(wholeRead)
    await store.close()
  })
})
