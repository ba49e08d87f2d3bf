/**
 * PostgreSQL substring lists of a term with no run of three letters or digits ("i/o", "a/b",
 * "x.y"): pg_trgm has nothing to narrow such a LIKE with, so a store-wide list of one that few
 * rows hold probed every id bucket whole (past the 3 s guard at 10M messages: the search failed).
 * Such a list looks at the store's newest 10,000 rows only (and at 8 MB of their anchors); a scoped list reads its sessions' rows
 * whole. The store's ids jump 40 buckets, so a small store spans buckets as a large one does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresBackend, ShadowStore, type ShadowMessageInput } from '../src/index.ts'
import { MAX_ANCHOR_CHARS } from '../src/analyzer.ts'
import { UNSELECTIVE_BYTES } from '../src/postgres/search.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

const BUCKET = 1 << 16

describe('PostgreSQL substring lists the trigram index cannot narrow', () => {
  it('list a store-wide short-run substring among the newest 10,000 rows only, and a session\'s rows whole', async () => {
    const schema = 'short_runs'
    const store = await ShadowStore.open(target.server().storeDsn(schema))
    const append = async (rows: ShadowMessageInput[]): Promise<void> => {
      for (let start = 0; start < rows.length; start += 500) await store.append(rows.slice(start, start + 500))
    }
    // bucket 0: one old row with each anchor; then bucket 40: 12,000 newer rows, one of them
    // (within the newest 10,000) holding "i/o" and a long anchor the index narrows
    await append([message('old', 0, 'disk i/o wait and x.y while reading ledger/compactor.cfg'), ...Array.from({ length: 99 }, (_, index) => message('old', index + 1, `old row ${index}`))])
    await target.sql(`ALTER TABLE ${schema}.messages ALTER COLUMN id RESTART WITH ${40 * BUCKET}`)
    await append(Array.from({ length: 12_000 }, (_, index) => message('new', index, index === 11_000 ? 'recent i/o stall' : `new row ${index}`)))
    const key = (hit: { message: { sessionId: string; seq: number } }): string => `${hit.message.sessionId}/${hit.message.seq}`
    const list = { index: 'grams', operator: 'or', limit: 50, rankWindow: 1_000, order: 'newest', light: true } as const
    const everywhere = await store.scopeSegments({ sessionId: 'new', allSessions: true })
    const lists = async (segments: typeof everywhere, terms: string[]): Promise<string[][]> => {
      const one = await Promise.all(terms.map(async term => (await store.backend.searchIndex({ ...list, segments, terms: [term] })).hits.map(key)))
      // the batched form (what a search runs) lists the same
      const batch = (await store.backend.searchIndexes!(terms.map(term => ({ ...list, segments, terms: [term] })))).map(result => result.hits.map(key))
      expect(batch).toEqual(one)
      return one
    }
    // store-wide: the recent "i/o" is listed, the old one (11,999 rows further down) is not;
    // "x.y" only in the old row: none; an anchor with a long run is found wherever it is
    expect(await lists(everywhere, ['i/o', 'x.y', 'compactor.cfg'])).toEqual([['new/11000'], [], ['old/0']])
    // in an OR, only such a term is bounded; an AND with a narrowing term is not bounded at all
    expect((await store.backend.searchIndex({ ...list, segments: everywhere, terms: ['compactor.cfg', 'i/o'] })).hits.map(key)).toEqual(['new/11000', 'old/0'])
    expect((await store.backend.searchIndex({ ...list, segments: everywhere, terms: ['compactor.cfg', 'x.y'], operator: 'and' })).hits.map(key)).toEqual(['old/0'])
    // scoped to the old session: its rows are read whole
    expect(await lists(await store.scopeSegments({ sessionId: 'old' }), ['i/o', 'x.y'])).toEqual([['old/0'], ['old/0']])
    // and a whole search of it is not a failure: the words lists find the old row
    const found = await store.search('i/o', { sessionId: 'new', allSessions: true })
    expect(found.hits.map(hit => `${hit.message.sessionId}/${hit.message.seq}`)).toContain('old/0')
    // Under a list guard too short for the full plans (1 ms: the walk alone checks 2,000 rows for 12
    // patterns), each list statement is cancelled and read again among the newest rows: the same
    // answer a bounded list gives, and no failure.
    const anchors = ['compactor.cfg', ...Array.from({ length: 11 }, (_, index) => `absent${index}.cfg`)]
    expect((await store.backend.searchIndex({ ...list, segments: everywhere, terms: anchors })).hits.map(key)).toEqual(['old/0'])
    const hurried = await ShadowStore.open(target.server().storeDsn(schema), { listTimeoutMs: 1 })
    const hurriedEverywhere = await hurried.scopeSegments({ sessionId: 'new', allSessions: true })
    expect((await hurried.backend.searchIndex({ ...list, segments: hurriedEverywhere, terms: anchors })).hits.map(key)).toEqual([])
    expect((await hurried.backend.searchIndexes!([{ ...list, segments: hurriedEverywhere, terms: anchors }, { ...list, segments: hurriedEverywhere, terms: ['i/o'] }])).map(result => result.hits.map(key))).toEqual([[], ['new/11000']])
    // a scoped list is not bounded: the session's rows are read whole, once (not cut and run again)
    const guard = (hurried.backend as PostgresBackend).connection.listGuard
    const cut = guard.bounded
    expect((await hurried.backend.searchIndex({ ...list, segments: await hurried.scopeSegments({ sessionId: 'old' }), terms: anchors })).hits.map(key)).toEqual(['old/0'])
    expect(guard.bounded).toBe(cut)
    const answered = await hurried.search('compactor.cfg absent0.cfg absent1.cfg absent2.cfg absent3.cfg', { sessionId: 'new', allSessions: true })
    expect(answered.coverage.searched).toBeGreaterThan(12_000)
    await hurried.close()
    await store.close()
  })

  it('lists one among the newest rows only as far as their anchors come to UNSELECTIVE_BYTES', async () => {
    const store = await ShadowStore.open(target.server().storeDsn('short_bytes'))
    // rows of paths past MAX_ANCHOR_CHARS (each row's anchors are cut there): the bound's 8 MB is
    // about 125 of them, well within 10,000 rows
    const paths = (row: number): string => Array.from({ length: 5_000 }, (_, at) => `/srv/app${row}/m${at}.ts`).join(' ')
    expect(paths(1).length).toBeGreaterThan(MAX_ANCHOR_CHARS)
    await store.append([message('bytes', 0, 'older disk i/o stall'), message('bytes-other', 0, 'another session')])
    for (let row = 1; row <= 140; row += 20) await store.append(Array.from({ length: 20 }, (_, at) => message('bytes', row + at, paths(row + at))))
    await store.append([message('bytes', 161, 'recent disk i/o stall'), ...Array.from({ length: 10 }, (_, at) => message('bytes', 162 + at, paths(162 + at)))])
    const everywhere = await store.scopeSegments({ sessionId: 'bytes-other', allSessions: true })
    expect(UNSELECTIVE_BYTES).toBeLessThan(150 * MAX_ANCHOR_CHARS * 0.95)
    expect(UNSELECTIVE_BYTES).toBeGreaterThan(10 * MAX_ANCHOR_CHARS)
    const list = { segments: everywhere, index: 'grams', operator: 'or', limit: 50, rankWindow: 1_000, order: 'newest', light: true, terms: ['i/o'] } as const
    expect((await store.backend.searchIndex(list)).hits.map(hit => hit.message.seq)).toEqual([161])
    // scoped to the session, its rows are read whole
    expect((await store.backend.searchIndex({ ...list, segments: await store.scopeSegments({ sessionId: 'bytes' }) })).hits.map(hit => hit.message.seq)).toEqual([161, 0])
    await store.close()
  })
})
