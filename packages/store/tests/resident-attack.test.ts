/**
 * Resident search under attack (resident/): what another store object (another process) writes,
 * what this store object's own calls interleave, hostile sizes and budgets. Each case is a defect
 * found by probing, kept as a test: no forgotten, stale or foreign row in a hit, a typed error or
 * the index lists' answer instead of a crash, and work (rows read, characters analysed at once,
 * memory estimated) bounded by the budgets. Work is counted, never timed. Both backends where the
 * store is involved.
 */
import { DatabaseSync, StatementSync } from 'node:sqlite'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ShadowStore, type SearchResult } from '../src/index.ts'
import { INLINE_BYTES, INLINE_MESSAGES, PAGE_BYTES, PAGE_ROWS, SessionIndexRegistry, SLICE_CHARS } from '../src/resident/registry.ts'
import { SessionIndex } from '../src/resident/session-index.ts'
import { CANDIDATE_TEXT_CHARS } from '../src/backend.ts'
import { search } from '../src/search/search.ts'
import { mayPassCap, ScopeView } from '../src/resident/view.ts'
import { MAX_POSITIONS, scanTerms } from '../src/search/passage.ts'
import { heap, listReads, message } from './helpers.ts'
import { sqliteTarget, TARGETS } from './targets.ts'

const seqs = (result: SearchResult): number[] => result.hits.map(hit => hit.message.seq).toSorted((a, b) => a - b)
const texts = (result: SearchResult): string => result.hits.map(hit => `${hit.message.text} ${hit.snippet} ${hit.message.eventJson}`).join('\n')

/**
 * Let `race` run once around the store's delta read (sessionChanges) that `nth` picks: after it
 * answered (the reader holds a state `race` then changes), or `before` it is made.
 */
function afterRead(store: ShadowStore, nth: (requests: ReadonlyArray<{ readonly since: number }>, count: number) => boolean, race: () => Promise<unknown>, before = false): () => boolean {
  const backend = store.backend as unknown as Record<string, (...args: never[]) => Promise<unknown>>
  const real = backend['sessionChanges']!.bind(store.backend)
  let count = 0
  let ran = false
  backend['sessionChanges'] = async (...args: never[]) => {
    count += 1
    const picked = !ran && nth(args[0] as unknown as ReadonlyArray<{ readonly since: number }>, count)
    if (picked) ran = true
    if (picked && before) await race()
    const answer = await real(...args)
    if (picked && !before) await race()
    return answer
  }
  return () => ran
}

/**
 * Characters a resident index analyses in one go (between two turns of the event loop, when
 * nothing else of the process can run), at most, while `run` runs; and the rows and text bytes of
 * the largest answer of a delta read.
 */
async function analysedAtOnce(store: ShadowStore, run: () => Promise<void>): Promise<{ chars: number; rows: number; bytes: number }> {
  const append = SessionIndex.prototype.append
  let stretch = 0
  let chars = 0
  SessionIndex.prototype.append = function (this: SessionIndex, ...args: Parameters<SessionIndex['append']>) {
    stretch += args[0].text.length
    return append.apply(this, args)
  }
  let running = true
  const tick = (): void => {
    chars = Math.max(chars, stretch)
    stretch = 0
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  const backend = store.backend as unknown as Record<'sessionChanges', (...args: never[]) => Promise<Array<{ rows: Array<{ text: string }> } | undefined>>>
  const real = backend.sessionChanges
  let rows = 0
  let bytes = 0
  backend.sessionChanges = async (...args: never[]) => {
    const answers = await real.apply(store.backend, args)
    for (const answer of answers) {
      rows = Math.max(rows, answer?.rows.length ?? 0)
      bytes = Math.max(bytes, (answer?.rows ?? []).reduce((sum, row) => sum + Buffer.byteLength(row.text), 0))
    }
    return answers
  }
  try {
    await run()
  } finally {
    running = false
    SessionIndex.prototype.append = append
    backend.sessionChanges = real
  }
  return { chars: Math.max(chars, stretch), rows, bytes }
}

/** Characters of text the search scan (passage.ts scanTerms) has read, counted (every call passes through). */
const scanned = vi.hoisted(() => ({ chars: 0 }))
vi.mock('../src/search/passage.ts', async original => {
  const actual = await original<typeof import('../src/search/passage.ts')>()
  return { ...actual, scanTerms: (...args: Parameters<typeof actual.scanTerms>) => {
    scanned.chars += Math.min(args[0].length, args[2] ?? actual.RANK_TEXT_CHARS)
    return actual.scanTerms(...args)
  } }
})

/** What the store's resident indexes are taken to hold (the registry's estimate). */
function usage(store: ShadowStore): { sessions: number; bytes: number } {
  return (store as unknown as { resident: { usage(): { sessions: number; bytes: number } } }).resident.usage()
}

describe.each(TARGETS)('resident search attacked on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it.each([
    ['as many writes as before', 2],
    ['more writes than before', 3],
  ])('serves no row of a session another process forgot and registered again (%s)', async (_kind, writes) => {
    const location = target.location()
    const reader = await ShadowStore.open(location)
    const writer = await ShadowStore.open(location)
    try {
      await writer.append([message('x', 1, 'the vault password zq-hunter2 pasted here')])
      await writer.append([message('x', 2, 'rotated the vault password')])
      expect(seqs(await reader.search('vault password', { sessionId: 'x' }))).toEqual([1, 2])
      // another process forgets the session (a pasted secret), and its capture registers it again
      await writer.forget('x')
      for (let seq = 1; seq <= writes; seq += 1) await writer.append([message('x', seq + 1, `fresh start ${seq} of the vault notes`)])
      const after = await reader.search('vault', { sessionId: 'x' })
      expect(texts(after)).not.toContain('zq-hunter2')
      expect(seqs(after)).toEqual(Array.from({ length: writes }, (_, index) => index + 2))
      expect((await reader.search('zq-hunter2', { sessionId: 'x' })).hits).toEqual([])
    } finally {
      await reader.close()
      await writer.close()
    }
  })

  it('a forget landing while a search syncs its scope leaves the store searchable (no undefined index)', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(Array.from({ length: 6 }, (_, index) => message('p', index + 1, `needle parent ${index}`)))
      await store.search('needle', { sessionId: 'p' })
      await store.registerSession({ sessionId: 'c', parentSessionId: 'p', forkSeq: 4 })
      await store.append([message('c', 4, 'needle child')])
      // the fork's first search: the parent's index is current, the child's is read whole; the
      // parent (and with it the fork) is forgotten while that read is under way
      const raced = afterRead(store, requests => requests.some(request => request.since === -1), () => store.forget('p', { force: true }))
      const result: unknown = await store.search('needle', { sessionId: 'c' }).catch((error: unknown) => error)
      expect(raced()).toBe(true)
      if (result instanceof Error) expect(result.constructor.name).toBe('ShadowStoreError')
      else expect(texts(result as SearchResult)).not.toContain('needle parent')
      // later searches of this store object still work
      await store.append([message('q', 1, 'needle other')])
      expect(seqs(await store.search('needle', { sessionId: 'q' }))).toEqual([1])
    } finally {
      await store.close()
    }
  })

  it('a search of one store object sees rows appended before it returned, also when another search brought the index up to date meanwhile', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(Array.from({ length: 4 }, (_, index) => message('s', index + 1, `needle ${index}`)))
      await store.search('needle', { sessionId: 's' })
      let second: SearchResult | undefined
      // before the first search's closing check (a read of revisions, or of SQLite's change mark): a
      // row is appended, and a second search takes it into the index, first
      const unchanged = SessionIndexRegistry.prototype.unchanged
      let raced = false
      SessionIndexRegistry.prototype.unchanged = async function (this: SessionIndexRegistry, ...args: Parameters<SessionIndexRegistry['unchanged']>) {
        if (!raced) {
          raced = true
          await store.append([message('s', 9, 'needle written meanwhile')])
          second = await store.search('needle', { sessionId: 's' })
        }
        return unchanged.apply(this, args)
      }
      try {
        const first = await store.search('needle', { sessionId: 's' })
        expect(raced).toBe(true)
        expect(seqs(second!)).toEqual([1, 2, 3, 4, 9])
        expect(seqs(first)).toEqual([1, 2, 3, 4, 9])
      } finally {
        SessionIndexRegistry.prototype.unchanged = unchanged
      }
    } finally {
      await store.close()
    }
  })

  it('builds a session of a few huge messages a bounded piece at a time: no search or turn waits for its whole analysis', async () => {
    // 24 messages of 200,000 characters: few messages, 4.8 MB of text (10 s of analysis at 200 such messages, all in the first search)
    const store = await ShadowStore.open(target.location())
    try {
      const words = ['quartz', 'harbor', 'lantern', 'meadow', 'copper', 'willow', 'ember', 'falcon']
      const big = (seq: number): string => Array.from({ length: 25_000 }, (_, index) => words[(index * 7 + seq) % words.length]).join(' ').slice(0, 200_000)
      for (let seq = 1; seq <= 24; seq += 6) await store.append(Array.from({ length: 6 }, (_, index) => message('huge', seq + index, `${big(seq + index)} needle${seq + index}`)))
      const listed = listReads(store)
      const first = await analysedAtOnce(store, async () => {
        expect((await store.search('needle7 quartz', { sessionId: 'huge' })).hits.length).toBeGreaterThan(0)
      })
      // the first search analysed at most INLINE_BYTES (and one message past it) before it answered from the lists
      expect(listed()).toBeGreaterThan(0)
      expect(first.chars).toBeLessThanOrEqual(INLINE_BYTES + 200_010)
      const built = await analysedAtOnce(store, () => store.warm('huge'))
      // the background build analyses a slice at a time, and reads a page at a time
      expect(built.chars).toBeLessThanOrEqual(SLICE_CHARS + 200_010)
      expect(built.bytes).toBeLessThanOrEqual(PAGE_BYTES + CANDIDATE_TEXT_CHARS)
      const before = listed()
      const warm = await store.search('needle7 quartz', { sessionId: 'huge' })
      expect(listed()).toBe(before)
      expect(warm.hits[0]!.message.seq).toBe(7)
    } finally {
      await store.close()
    }
  })

  it('reads a long session a page of rows at a time (one read of 200,000 rows held the store for 4 s)', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      for (let start = 0; start < 2_500; start += 500) await store.append(Array.from({ length: 500 }, (_, index) => message('long', start + index + 1, `note ${start + index} about the harbor`)))
      const built = await analysedAtOnce(store, () => store.warm('long'))
      expect(built.rows).toBe(PAGE_ROWS)
      const listed = listReads(store)
      // every row is held: the oldest ones too
      expect((await store.search('harbor 17', { sessionId: 'long' })).hits[0]!.message.seq).toBe(18)
      expect((await store.search('harbor 2499', { sessionId: 'long' })).hits[0]!.message.seq).toBe(2_500)
      expect(listed()).toBe(0)
    } finally {
      await store.close()
    }
  })

  it('holds no index past resident.maxBytes: a scope larger than the budget is searched through the lists, and not built again for every search', async () => {
    const location = target.location()
    const setup = await ShadowStore.open(location)
    await setup.append(Array.from({ length: 300 }, (_, index) => message('b1', index + 1, `budget note ${index} about the harbor lantern ${index % 7}`)))
    await setup.registerSession({ sessionId: 'b2', parentSessionId: 'b1', forkSeq: 301 })
    await setup.append(Array.from({ length: 300 }, (_, index) => message('b2', index + 301, `fork note ${index} about the meadow lantern ${index % 5}`)))
    await setup.close()
    const roomy = await ShadowStore.open(location)
    await roomy.search('lantern', { sessionId: 'b1' })
    const one = usage(roomy).bytes
    await roomy.close()
    // a byte; half a session; a session and a half (the fork's two sessions together do not fit)
    for (const maxBytes of [1, Math.floor(one / 2), Math.floor(one * 1.5)]) {
      const store = await ShadowStore.open(location, { resident: { maxBytes } })
      try {
        const listed = listReads(store)
        for (const sessionId of ['b1', 'b2']) {
          const answer = await store.search('lantern harbor', { sessionId })
          expect(answer.hits.length).toBeGreaterThan(0)
          expect(usage(store).bytes).toBeLessThanOrEqual(maxBytes)
        }
        // the fork is answered by the lists every time, and its indexes are not built again for it
        const built = await analysedAtOnce(store, async () => {
          const before = listed()
          await store.search('lantern meadow', { sessionId: 'b2' })
          expect(listed()).toBeGreaterThan(before)
        })
        expect(built.chars).toBe(0)
        expect(usage(store).bytes).toBeLessThanOrEqual(maxBytes)
        await store.warm('b2')
        expect(usage(store).bytes).toBeLessThanOrEqual(maxBytes)
      } finally {
        await store.close()
      }
    }
  })

  const short = (seq: number): string => `ran src/job${seq}.ts in ${seq % 1000}ms 数据库迁移`
  it.each([
    // a log of small numbers: every one a value statement (a ValueMatch object each, ~50 bytes: 5x the estimate)
    ['numbers', 1, 3_000, (seq: number) => Array.from({ length: 2_000 }, (_, index) => String((index * seq) % 10)).join(' ')],
    // paths: an anchor, its trigrams and a few keys each
    ['paths', 1, 3_000, (seq: number) => Array.from({ length: 40 }, (_, index) => `src/m${seq}/part${index}/file${(seq * 31 + index) % 997}.ts`).join(' ')],
    // short tool results, each with a call id, a path and a duration
    ['short', 1, 3_000, short],
    // many sessions of a few: an index's own columns, maps and tables before its rows count
    ['small sessions', 200, 5, short],
  ])('estimates the memory it holds within a factor of two of the heap it takes (%s)', async (_kind, sessions, rows, text) => {
    const location = target.location()
    const writer = await ShadowStore.open(location)
    for (let session = 0; session < sessions; session += 1) {
      for (let start = 0; start < rows; start += 500) await writer.append(Array.from({ length: Math.min(500, rows - start) }, (_, index) => message(`mem${session}`, start + index + 1, text(start + index + 1), (start + index) % 3 === 0 ? { role: 'tool', eventType: 'tool/result', sourceKind: 'tool', toolName: 'shell', callId: `c${start + index}` } : {})))
    }
    await writer.close()
    const store = await ShadowStore.open(location)
    try {
      await store.search('warmup', { sessionId: 'other' }).catch(() => undefined)
      const before = heap()
      for (let session = 0; session < sessions; session += 1) await store.warm(`mem${session}`)
      const real = heap() - before
      const estimated = usage(store)
      expect(estimated.sessions).toBe(sessions)
      expect(real / estimated.bytes).toBeGreaterThan(0.5)
      expect(real / estimated.bytes).toBeLessThan(2)
    } finally {
      await store.close()
    }
  })

  it('ranks what the index lists rank for a query whose topic words are all absent (its other words are read as any word)', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append([message('aw', 1, 'what is the pool size'), message('aw', 2, 'the retry budget is spent'), message('aw', 3, 'unrelated words'), message('aw', 4, 'what now')])
      for (const query of ['what is kubernetes', 'zeppelin the', 'the zeppelin pool', 'what is the']) {
        const shown = (result: SearchResult): unknown => ({ hits: result.hits.map(hit => [hit.message.seq, hit.snippet, hit.matched]), coverage: result.coverage, terms: result.terms })
        expect(shown(await store.search(query, { sessionId: 'aw' })), query).toEqual(shown(await search(store.backend, query, { sessionId: 'aw' })))
      }
      // not vacuous: the lists find the stopwords' messages
      expect((await store.search('what is kubernetes', { sessionId: 'aw' })).hits.length).toBeGreaterThan(0)
    } finally {
      await store.close()
    }
  })

  it('finds what NFKC folds into a query word, as the index lists do (fullwidth letters and digits, ligatures, halfwidth kana)', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append([
        message('fw', 1, '数据库端口改成５４３３了'), message('fw', 2, 'the ﬁle was moved to archive'), message('fw', 3, 'ｃｏｎｎｅｃｔｉｏｎ ｐｏｏｌ exhausted'),
        message('fw', 4, 'ｶﾀｶﾅ の テスト'), message('fw', 5, 'the connection was reset'), message('fw', 6, 'unrelated words here'),
      ])
      const shown = (result: SearchResult): unknown => ({ hits: result.hits.map(hit => [hit.message.seq, hit.snippet, hit.matched]), coverage: result.coverage, terms: result.terms })
      for (const query of ['5433', 'file', 'connection pool', 'pool', 'カタカナ', 'ｐｏｏｌ', 'exhausted ｃｏｎｎｅｃｔｉｏｎ']) {
        const resident = await store.search(query, { sessionId: 'fw' })
        expect(shown(resident), query).toEqual(shown(await search(store.backend, query, { sessionId: 'fw' })))
        expect(resident.hits.length, query).toBeGreaterThan(0)
      }
      expect((await store.search('connection pool', { sessionId: 'fw' })).hits.map(hit => hit.message.seq)).toContain(3)
    } finally {
      await store.close()
    }
  })

  it('reads a match past the scan\'s position cap from its stored tokens, not its text: a search does not scan every such text whole', async () => {
    // 12 texts of 60,000 characters, each holding the query's words 1,200 times (past COUNT_LIMIT)
    const store = await ShadowStore.open(target.location())
    try {
      const text = (seq: number): string => Array.from({ length: 400 }, (_, index) => `harbor lantern note ${seq * 1000 + index} harbor ${'filler words here '.repeat(6)}`).join('\n').slice(0, 60_000)
      await store.append(Array.from({ length: 12 }, (_, index) => message('cap', index + 1, text(index + 1))))
      await store.warm('cap')
      scanned.chars = 0
      const found = await store.search('harbor lantern', { sessionId: 'cap' })
      expect(found.coverage.matched).toBe(12)
      // the winners' passages are found from stored tokens too: no text is scanned whole (each was, 720,000 characters)
      expect(scanned.chars).toBeLessThan(60_000)
    } finally {
      await store.close()
    }
  })

  it('ranks a fork\'s own newest matches first, and pairs a question or call its parent made last with the reply or result its fork got first', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      const tool = (seq: number, sessionId: string, text: string): ReturnType<typeof message> => message(sessionId, seq, text, { role: 'tool', eventType: 'tool/result', sourceKind: 'tool', toolName: 'shell', callId: 'k1' })
      const assistant = (seq: number, sessionId: string, text: string, callId: string | null = null): ReturnType<typeof message> => message(sessionId, seq, text, { role: 'assistant', eventType: 'assistant/message', sourceKind: 'model', ...(callId === null ? {} : { toolName: 'shell', callId }) })
      const parent = [
        ...Array.from({ length: 26 }, (_, index) => message('fp', index + 1, `harbor note ${String(index + 1).padStart(2, '0')}`)),
        assistant(27, 'fp', '[tool call shell] {"cmd":"psql -p 5433 ledger"}', 'k1'),
        assistant(28, 'fp', 'which port should the ledger use?'),
        // the parent's own later rows: not the fork's
        message('fp', 29, '6543'), tool(30, 'fp', 'parent result'),
      ]
      const own = [message('fk', 29, '5433'), tool(30, 'fk', 'connected to the ledger database'), ...Array.from({ length: 3 }, (_, index) => message('fk', index + 31, `harbor note ${index + 31}`))]
      await store.append(parent)
      await store.registerSession({ sessionId: 'fk', parentSessionId: 'fp', forkSeq: 29 })
      await store.append(own)
      await store.append([...parent.slice(0, 28), ...own].map(row => ({ ...row, sessionId: 'ff' })))
      const shown = (result: SearchResult): unknown => result.hits.map(hit => [hit.message.seq, hit.call?.seq, hit.question?.seq, hit.snippet])
      for (const [query, options] of [['harbor', { rankWindow: 5 }], ['harbor note', {}], ['ledger port', {}], ['psql ledger database', {}], ['ledger', { roles: ['user', 'assistant'] as const }]] as const) {
        expect(shown(await store.search(query, { sessionId: 'fk', ...options })), query).toEqual(shown(await store.search(query, { sessionId: 'ff', ...options })))
      }
      // the newest 5 matches: the fork's 3 and the parent's last 2 harbor notes
      expect(seqs(await store.search('harbor', { sessionId: 'fk', rankWindow: 5 }))).toEqual([25, 26, 31, 32, 33])
      const answered = await store.search('ledger port', { sessionId: 'fk' })
      expect(answered.hits[0]!.message.seq).toBe(29)
      expect(answered.hits[0]!.question?.seq).toBe(28)
      const result = await store.search('psql ledger database', { sessionId: 'fk' })
      expect([result.hits[0]!.message.seq, result.hits[0]!.call?.seq]).toEqual([30, 27])
    } finally {
      await store.close()
    }
  })

  it.each([
    ['many rows', INLINE_MESSAGES + 200, 40],
    ['long texts', 20, 100_000],
  ])('catches up with a large write of another process in the background, not in a search (%s)', async (_kind, count, size) => {
    const location = target.location()
    const reader = await ShadowStore.open(location)
    const writer = await ShadowStore.open(location)
    try {
      await writer.append(Array.from({ length: 200 }, (_, index) => message('cu', index + 1, `early harbor note ${index + 1}`)))
      await reader.search('harbor', { sessionId: 'cu' })
      const text = (seq: number): string => `late harbor note ${seq} ${'padding words '.repeat(size / 14)}`.slice(0, size)
      for (let start = 0; start < count; start += 500) await writer.append(Array.from({ length: Math.min(500, count - start) }, (_, index) => message('cu', 201 + start + index, text(201 + start + index))))
      const listed = listReads(reader)
      const caught = await analysedAtOnce(reader, async () => {
        const found = await reader.search('late harbor', { sessionId: 'cu' })
        expect(found.hits[0]!.message.seq).toBeGreaterThan(200)
      })
      // the delta was read up to a search's own share, and not analysed in it: the lists answered
      expect(caught.rows).toBeLessThanOrEqual(INLINE_MESSAGES + 1)
      expect(caught.bytes).toBeLessThanOrEqual(INLINE_BYTES + size)
      expect(caught.chars).toBeLessThanOrEqual(INLINE_BYTES + size)
      expect(listed()).toBeGreaterThan(0)
      await reader.warm('cu')
      const before = listed()
      expect((await reader.search(`note ${200 + count}`, { sessionId: 'cu' })).hits[0]!.message.seq).toBe(200 + count)
      expect(listed()).toBe(before)
    } finally {
      await reader.close()
      await writer.close()
    }
  })

  it('stays resident for CJK questions of new long words: what it counts of them for later searches does not push its session past the budget', async () => {
    const location = target.location()
    const base = '数据库迁移连接池耗尽内存泄漏证书过期配置文件服务器重启日志分析性能优化'
    const setup = await ShadowStore.open(location)
    await setup.append(Array.from({ length: 400 }, (_, index) => message('ck', index + 1, Array.from({ length: 6 }, (_unused, part) => base.slice((index * 7 + part * 5) % 30, ((index * 7 + part * 5) % 30) + 6)).join('，'))))
    await setup.close()
    const roomy = await ShadowStore.open(location)
    await roomy.search('数据库', { sessionId: 'ck' })
    const one = usage(roomy).bytes
    await roomy.close()
    const store = await ShadowStore.open(location, { resident: { maxBytes: Math.floor(one * 1.1) } })
    try {
      const listed = listReads(store)
      await store.search('数据库', { sessionId: 'ck' })
      const chars = [...base]
      for (let round = 0; round < 6; round += 1) {
        // 48 words of 3 to 6 characters, new each time: each is counted in the texts and kept
        const words = Array.from({ length: 48 }, (_, at) => chars.slice((round * 5 + at) % 27, ((round * 5 + at) % 27) + 3 + ((round + at) % 4)).join(''))
        const before = listed()
        expect((await store.search(words.join(' '), { sessionId: 'ck' })).hits.length).toBeGreaterThan(0)
        expect(listed(), `round ${round}`).toBe(before)
        expect(usage(store).bytes).toBeLessThanOrEqual(Math.floor(one * 1.1))
      }
    } finally {
      await store.close()
    }
  })
})


describe('resident index scans past the position cap', () => {
  it('rebuilds from stored tokens the scan of a text whose matches pass COUNT_LIMIT and MAX_POSITIONS', () => {
    const cases = [
      'harbor '.repeat(5_000),
      Array.from({ length: 3_000 }, (_, index) => (index % 3 === 0 ? 'getHarborLantern' : index % 3 === 1 ? 'harbor lanterns' : 'Lantern.harbor_x')).join(' '),
      Array.from({ length: 2_000 }, (_, index) => `数据库迁移 harbor ${index} 数据 lantern`).join('，'),
      `${'[tool call shell] {"cmd":"harbor lantern"} '.repeat(2_000)}harbor`,
      'lantern harbor '.repeat(20_000),
      // between the old bound (a quarter of the cap) and the cap: counted from the lists now
      'harbor lantern '.repeat(1_500),
      `${'数据库迁移 harbor '.repeat(900)}`,
      'harbor '.repeat(4_000),
    ]
    const index = new SessionIndex('s', 't', 0)
    cases.forEach((text, seq) => index.append({ sessionId: 's', seq, shadowId: `t.${seq}`, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: seq, tokens: 1, hash: `h${seq}`, eventJson: '', text, elidedBy: null, expiredAt: null }, ''))
    const view = new ScopeView([{ index, belowSeq: Number.POSITIVE_INFINITY }])
    let capped = 0
    let uncapped = 0
    for (const terms of [['harbor'], ['harbor', 'lantern'], ['lantern', 'getharborlantern'], ['数据库', 'harbor'], ['数据', 'lantern', 'harbor'], ['x', 'harbor']]) {
      cases.forEach((text, doc) => {
        const counts = terms.map(term => {
          const list = view.holders(term)
          const at = list.gids.slice(0, list.length).indexOf(doc)
          return at < 0 ? 0 : list.counts[at]!
        })
        if (counts.reduce((a, b) => a + b, 0) < MAX_POSITIONS / 4) return
        const scan = scanTerms(text, terms)
        if (scan.positions.length >= MAX_POSITIONS) capped += 1
        expect(index.scans(terms, stored => stored(doc)), `${doc} ${JSON.stringify(terms)}`).toEqual(scan)
        // under the caps the lists' counts are the scan's (the engine counts such a doc again only past one)
        const positions = terms.map((_, term) => scan.positions.filter(found => found.term === term).length)
        if (!mayPassCap(counts, 0, terms.map(term => /\p{Script=Han}/u.test(term))) && !terms.some((term, at) => at > 0 && index.camelWhole(term))) {
          uncapped += 1
          expect(counts, `${doc} ${JSON.stringify(terms)}`).toEqual(positions)
        }
      })
    }
    expect(capped).toBeGreaterThan(5)
    expect(uncapped).toBeGreaterThan(3)
  })
})

describe('resident delta reads on a SQLite store someone ran ANALYZE on', () => {
  const target = sqliteTarget()
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('read each delta and probe as a range of the revision index, not every row of the session', async () => {
    const location = target.location()
    const writer = await ShadowStore.open(location)
    for (const sessionId of ['an', 'other']) {
      for (let start = 0; start < 3_000; start += 1_000) await writer.append(Array.from({ length: 1_000 }, (_, index) => message(sessionId, start + index + 1, `note ${start + index}`)))
    }
    await writer.close()
    const db = new DatabaseSync(location)
    db.exec('ANALYZE')
    db.close()
    const store = await ShadowStore.open(location)
    const used = new Set<string>()
    const methods = ['all', 'get', 'iterate'] as const
    const originals = methods.map(name => StatementSync.prototype[name])
    methods.forEach((name, at) => {
      ;(StatementSync.prototype as unknown as Record<string, unknown>)[name] = function (this: StatementSync, ...args: unknown[]) {
        if (this.sourceSQL.includes('FROM messages m WHERE m.session_id')) used.add(this.sourceSQL)
        return (originals[at] as (...args: unknown[]) => unknown).apply(this, args)
      }
    })
    try {
      await store.backend.sessionChanges([{ sessionId: 'an', since: 2 }, { sessionId: 'an', since: Number.MAX_SAFE_INTEGER }])
      await store.backend.sessionChanges([{ sessionId: 'an', since: 2, bound: { rows: 10, bytes: 1_000 } }])
      await store.backend.sessionChanges([{ sessionId: 'an', since: -1, page: { afterSeq: 10, rows: 10, bytes: 1_000 } }])
    } finally {
      methods.forEach((name, at) => { (StatementSync.prototype as unknown as Record<string, unknown>)[name] = originals[at] })
    }
    const check = new DatabaseSync(location, { readOnly: true })
    try {
      expect(used.size).toBe(3)
      for (const sql of used) {
        const plan = (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, (_, at) => (at === 0 ? 'an' : 1))) as Array<{ detail: string }>).map(row => row.detail)
        // an index range on the revision (or, for a page, the seqs above the last read), never the session whole
        expect(plan.join(' | '), sql).toMatch(/USING INDEX messages_rev \(session_id=\? AND rev>\?\)|\(session_id=\? AND seq>\?\)/)
      }
    } finally {
      check.close()
      await store.close()
    }
  })
})
