/**
 * A filtered search of a large scope (roles, a tool, a window, exclusions) does bounded work: its
 * scope is not counted row by row past 20,000 messages (the count read every row: 4 s at 10M on
 * PostgreSQL, every search), and on SQLite a filtered newest-first list looks at the newest
 * 20,000 matches of its terms at most (a filter few of them pass walked every match).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, type ShadowMessageInput } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

/** 21,000 rows in three sessions, each holding "alpha"; the oldest one is the only assistant row. */
function rows(): ShadowMessageInput[] {
  return Array.from({ length: 21_000 }, (_, index) => message(`f${index % 3}`, Math.floor(index / 3), `alpha row ${index}`,
    index === 0 ? { role: 'assistant', eventType: 'assistant/message', sourceKind: 'assistant' } : {}))
}

describe.each(TARGETS)('filtered searches of a large scope on $name', target => {
  let store: ShadowStore

  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    const all = rows()
    for (let start = 0; start < all.length; start += 1_000) await store.append(all.slice(start, start + 1_000))
  }, 120_000)
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('reports the scope\'s size for a filtered scope past 20,000 messages, and counts a smaller one', async () => {
    const wide = await store.search('alpha', { sessionId: 'f0', allSessions: true, roles: ['assistant'] })
    expect(wide.coverage.searched).toBe(21_000)
    // one session (7,000 rows): counted after the filter
    const own = await store.search('alpha', { sessionId: 'f0', roles: ['assistant'] })
    expect(own.coverage.searched).toBe(1)
    expect(own.hits.map(hit => hit.message.seq)).toEqual([0])
    // no filter: the scope's size, as ever
    expect((await store.search('alpha', { sessionId: 'f0', allSessions: true })).coverage.searched).toBe(21_000)
  })

  it.runIf(target.name === 'sqlite')('looks at the newest 20,000 matches of a filtered list at most', async () => {
    const segments = await store.scopeSegments({ sessionId: 'f0', allSessions: true })
    const list = { segments, index: 'words', terms: ['alpha'], operator: 'or', limit: 10, rankWindow: 1_000, order: 'newest', light: true } as const
    // the one assistant row is the oldest of 21,000 matches: past the bound
    expect((await store.backend.searchIndex({ ...list, roles: ['assistant'] })).hits).toEqual([])
    expect(await store.backend.listIds!([{ ...list, roles: ['assistant'] }])).toEqual([[]])
    // within one session's 7,000 matches it is found
    const own = await store.scopeSegments({ sessionId: 'f0' })
    expect((await store.backend.searchIndex({ ...list, segments: own, roles: ['assistant'] })).hits.map(hit => hit.message.seq)).toEqual([0])
    // unfiltered lists are not bounded that way: the newest rows, as ever
    expect((await store.backend.searchIndex(list)).hits).toHaveLength(10)
  })
})
