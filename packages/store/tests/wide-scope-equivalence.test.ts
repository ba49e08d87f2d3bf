/**
 * A workspace or allSessions scope of more than WIDE_LISTED sessions reaches the backend as its
 * provenance (`MessageFilter.wide`) instead of a list of every session. Its answers must be the
 * ones the listed segments give: searches (hits, order, scores, snippets, checkpoint marks,
 * coverage, term reports), reads, counts, term counts and scope checks, on stores with forks
 * (a parent inside and outside the workspace, a chain), elided and retention-expired rows,
 * excluded source kinds and sessions of other workspaces, on every backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WIDE_LISTED, type MessageFilter } from '../src/backend.ts'
import { ShadowStore, type ScopeOptions, type SearchOptions, type SearchResult, type ShadowMessage } from '../src/index.ts'
import { messageFilter, scopeAndLineage, type ScopeRows } from '../src/scope.ts'
import { search } from '../src/search/search.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

const BASE = Date.UTC(2026, 10, 20, 12, 0, 0)
const DAY = 86_400_000
const WORDS = ['deploy', 'granite', 'timeout', 'cache', 'server', 'client', 'retry', 'ledger', 'harbor', 'violet']

/** A small seeded generator, so a failure replays. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

interface Layout {
  readonly sessions: ReadonlyArray<{ readonly id: string; readonly workspace: string | null; readonly parent?: string; readonly forkSeq?: number; readonly from: number }>
}

const ROWS = 5

function layout(): Layout {
  const sessions: Array<Layout['sessions'][number]> = []
  for (let index = 0; index < 90; index += 1) sessions.push({ id: `p${index}`, workspace: '/w/one', from: 0 })
  for (let index = 0; index < 70; index += 1) sessions.push({ id: `q${index}`, workspace: '/w/two', from: 0 })
  for (let index = 0; index < 4; index += 1) sessions.push({ id: `n${index}`, workspace: null, from: 0 })
  // forks: a parent in the workspace, a parent in another one, a chain two deep
  sessions.push({ id: 'f1', workspace: '/w/one', parent: 'p1', forkSeq: 2, from: 2 })
  sessions.push({ id: 'f2', workspace: '/w/one', parent: 'q1', forkSeq: 3, from: 3 })
  sessions.push({ id: 'f3', workspace: '/w/one', parent: 'f1', forkSeq: 4, from: 4 })
  return { sessions }
}

async function build(location: string): Promise<ShadowStore> {
  const store = await ShadowStore.open(location)
  const next = random(7)
  const rows = []
  for (const [index, session] of layout().sessions.entries()) {
    await store.registerSession({ sessionId: session.id, workspace: session.workspace, ...(session.parent === undefined ? {} : { parentSessionId: session.parent, forkSeq: session.forkSeq! }) })
    // q5's rows are old: retention expires its checkpoint by age
    const start = session.id === 'q5' ? BASE - 30 * DAY : BASE + index * 10 * 60_000
    for (let seq = session.from; seq < ROWS + session.from; seq += 1) {
      const words = Array.from({ length: 4 }, () => WORDS[Math.floor(next() * WORDS.length)]!)
      if (next() < 0.05) words.push('quartzite')
      const text = `${session.id} row ${seq}: ${words.join(' ')}${seq % 3 === 1 ? '?' : ''}`
      const role = seq % 2 === 0 ? 'user' : 'assistant'
      const extra = seq === 3 && index % 7 === 0 ? { sourceKind: 'plugin:compact' } : {}
      rows.push(message(session.id, seq, text, { role, time: start + seq * 1_000, ...extra }))
    }
  }
  for (let at = 0; at < rows.length; at += 200) await store.append(rows.slice(at, at + 200))
  // elided rows: a parent's own checkpoint, a fork's over rows it inherited and its own, an old one retention expires
  for (const [sessionId, seqs, replaceSeq] of [['p1', [0, 1], 2], ['f1', [0, 1, 2], 3], ['p7', [1, 2, 3], 4], ['q5', [0, 1, 2], 3]] as const) {
    await store.recordCheckpoint({ checkpointId: `${sessionId}.c1`, sessionId, engine: 'test', status: 'committed', shadowedSeqs: [...seqs], createdAt: BASE, replaceSeq })
    await store.markElided(sessionId, seqs.filter(seq => seq >= (sessionId === 'f1' ? 2 : 0)), `${sessionId}.c1`)
  }
  const gc = await store.gc({ maxAgeMs: 10 * DAY, now: BASE })
  expect(gc.expired.map(entry => entry.checkpointId)).toEqual(['q5.c1'])
  return store
}

function view(result: SearchResult): unknown {
  return {
    hits: result.hits.map(hit => ({ id: hit.message.shadowId, score: hit.score, snippet: hit.snippet, elidedBy: hit.message.elidedBy, expired: hit.message.expiredAt, call: hit.call?.shadowId, question: hit.question?.shadowId })),
    coverage: result.coverage,
    terms: result.terms,
    history: result.history,
  }
}

const rowKey = (row: ShadowMessage): string => `${row.sessionId}:${row.seq}:${row.elidedBy ?? '-'}:${row.expiredAt ?? '-'}`

describe.each(TARGETS)('wide scopes answer as their listed sessions do $name', target => {
  let store: ShadowStore
  beforeAll(async () => {
    await target.setup()
    store = await build(target.location())
  }, 180_000)
  afterAll(async () => {
    await store?.close()
    await target.teardown()
  })

  const askers = ['p3', 'f1', 'f2', 'f3', 'nobody']
  const widenings: ReadonlyArray<Omit<ScopeOptions, 'sessionId'>> = [{ workspace: '/w/one' }, { allSessions: true }, { workspace: '/w/one', beforeSeq: 4 }, { allSessions: true, beforeSeq: 3 }]

  /** The scope both ways: as the store resolves it (wide) and with every session listed. */
  async function both(scope: ScopeOptions) {
    const wide = await scopeAndLineage(store.backend, scope)
    const listed = { segments: await store.scopeSegments(scope), lineage: await store.lineage(scope.sessionId) }
    return { wide, listed }
  }

  it('resolves a scope of more than WIDE_LISTED sessions to its provenance, not a list', async () => {
    for (const asker of askers) {
      for (const widening of widenings) {
        const { wide, listed } = await both({ sessionId: asker, ...widening })
        expect(wide.wide).toBeDefined()
        expect(wide.segments.length).toBeLessThanOrEqual(3)
        expect(listed.segments.length).toBeGreaterThan(WIDE_LISTED)
      }
    }
  })

  it('searches: the same hits, order, scores, snippets, marks and reports', async () => {
    const queries = ['deploy timeout', 'quartzite', 'granite cache server', 'retry ledger?', 'harbor violet client']
    const variants: Array<Partial<SearchOptions>> = [
      {},
      { excludeSourceKinds: ['plugin:compact'] },
      { timeFrom: BASE + 20 * 10 * 60_000, timeTo: BASE + 120 * 10 * 60_000 },
      { roles: ['assistant'] },
      { checkpointId: 'p1.c1' },
      { checkpointId: 'f1.c1' },
      { limit: 40 },
    ]
    let compared = 0
    let nonEmpty = 0
    for (const asker of askers) {
      for (const widening of widenings) {
        const scope = { sessionId: asker, ...widening }
        const { listed } = await both(scope)
        for (const query of queries) {
          for (const variant of variants) {
            const options = { ...scope, ...variant }
            const wide = await store.search(query, options)
            expect(view(wide), `${query} ${JSON.stringify(options)}`).toEqual(view(await search(store.backend, query, options, listed)))
            compared += 1
            if (wide.hits.length > 0) nonEmpty += 1
          }
        }
      }
    }
    expect(compared).toBe(askers.length * widenings.length * 5 * 7)
    // the comparison is of answers, not of empty lists
    expect(nonEmpty).toBeGreaterThan(compared * 0.6)
  }, 300_000)

  it('reads, counts and term counts: the same rows and numbers', async () => {
    const filters: Array<Parameters<typeof messageFilter>[1]> = [
      {},
      { timeFrom: BASE + 30 * 10 * 60_000, timeTo: BASE + 100 * 10 * 60_000 },
      { fromSeq: 2, toSeq: 4 },
      { roles: ['user'] },
      { elidedBy: 'p1.c1' },
      { timeTo: BASE },
    ]
    for (const asker of askers) {
      for (const widening of widenings) {
        const scope = { sessionId: asker, ...widening }
        const { wide, listed } = await both(scope)
        for (const options of filters) {
          const label = `${asker} ${JSON.stringify(widening)} ${JSON.stringify(options)}`
          const wideFilter: MessageFilter = messageFilter(wide, options)
          const listedFilter: MessageFilter = messageFilter(listed, options)
          expect(wideFilter.wide, label).toBeDefined()
          const rows = (filter: MessageFilter) => Promise.resolve(store.backend.readMessages({ ...filter, limit: 100_000 })).then(found => found.map(rowKey).toSorted())
          expect(await rows(wideFilter), label).toEqual(await rows(listedFilter))
          expect(await store.backend.countMessages(wideFilter), label).toBe(await store.backend.countMessages(listedFilter))
          // through the store's API (a checkpoint's originals narrowed to its history)
          const narrowed = options.elidedBy === undefined ? listed : { segments: listed.segments.filter(segment => segment.sessionId === 'p1') }
          expect(await store.count(scope, options), label).toBe(await store.backend.countMessages(messageFilter(narrowed, options)))
        }
        for (const index of ['words', 'grams'] as const) {
          const terms = index === 'words' ? ['deploy', 'quartzite', 'harbor'] : ['ranit', 'uartz']
          const counts = (rows: ScopeRows) => store.backend.documentFrequencies({ ...rows, index, terms, cap: 2_000 })
          expect(await counts(wide)).toEqual(await counts(listed))
          const list = (rows: ScopeRows) => Promise.resolve(store.backend.searchIndex({ ...rows, index, terms: terms.slice(0, 2), operator: 'or', limit: 30, rankWindow: 1_000, order: 'newest', light: true })).then(result => result.hits.map(hit => hit.message.shadowId))
          expect(await list(wide)).toEqual(await list(listed))
        }
      }
    }
  }, 300_000)

  it('scope checks: the bound each session is seen below, without listing the workspace', async () => {
    const ids = [...layout().sessions.map(session => session.id), 'nobody']
    for (const asker of askers) {
      for (const widening of widenings) {
        const scope = { sessionId: asker, ...widening }
        const listed = await store.scopeSegments(scope)
        const expected = ids.map(id => listed.find(segment => segment.sessionId === id)?.belowSeq ?? null)
        expect(await store.scopeBounds(scope, ids)).toEqual({ empty: false, bounds: expected })
      }
    }
    // a fork sees its workspace parent below the fork point only; another workspace's session not at all
    const bounds = (await store.scopeBounds({ sessionId: 'f1', workspace: '/w/one' }, ['p1', 'p2', 'q2', 'f1'])).bounds
    expect(bounds).toEqual([2, Number.POSITIVE_INFINITY, null, Number.POSITIVE_INFINITY])
    expect(await store.scopeBounds({ sessionId: 'nobody', workspace: '/w/none' }, ['p1'])).toEqual({ empty: true, bounds: [null] })
  })
})
