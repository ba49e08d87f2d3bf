/**
 * Resident search (resident/): a lineage scope is searched in memory with the store's ranking
 * policy applied to every match. Where the index lists cut nothing (a small session), it ranks
 * exactly what the index-list search ranks; where they do, it finds the older match they miss.
 * It sees every write of another store object (another process or host) at its next search, and
 * it stays within its memory budget. Both backends.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { CANDIDATE_TEXT_CHARS, ShadowStore, type SearchOptions, type SearchResult, type ShadowMessageInput } from '../src/index.ts'
import { search } from '../src/search/search.ts'
import { INLINE_MESSAGES, INLINE_TAIL_CHARS } from '../src/resident/registry.ts'
import { AnchorIndex } from '../src/resident/anchors.ts'
import { scanTerms } from '../src/search/passage.ts'
import { coverageTerms } from '../src/search/ranking.ts'
import { listReads, message } from './helpers.ts'
import { random } from './generated-text.ts'
import { TARGETS } from './targets.ts'

const WORDS = ['connection', 'pool', 'exhausted', 'retry', 'budget', 'timeout', 'migration', 'lease', 'deploy', 'cache', 'refund', 'payment', 'worker', 'queue', 'deprecated', 'idempotency', 'staging', 'port', 'flush', 'nightly']
const PIECES = ['db/pool', 'src/gateway.ts', 'payments/refund.ts', 'RETRY_LIMIT', 'getPoolSize', 'v2.3.1', '数据库', '迁移', '证书', 'café', '→', 'ERR_TIMEOUT', '45ms', 'port 5433', 'ฐานข้อมูลล่มเพราะการเชื่อมต่อหมด', 'ຖານຂໍ້ມູນລົ້ມ', 'មូលដ្ឋានទិន្នន័យបានគាំង', 'ဒေတာဘေ့စ်ပျက်သွားတယ်']
const TOOLS = ['grep', 'read_file', 'shell']

/** Small sessions (every query's matches fit the index lists): calls and results, questions and short replies, checkpoints. */
function corpus(sessions: readonly string[], size: number, seed: number): ShadowMessageInput[] {
  const next = random(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!
  const sentence = (): string => Array.from({ length: 3 + Math.floor(next() * 9) }, () => (next() < 0.2 ? pick(PIECES) : pick(WORDS))).join(next() < 0.5 ? ' ' : ', ')
  const rows: ShadowMessageInput[] = []
  for (const sessionId of sessions) {
    let seq = 1
    let call = 0
    while (seq <= size) {
      const roll = next()
      const time = 1_767_225_600_000 + seq * 60_000
      if (roll < 0.3) {
        call += 1
        const tool = pick(TOOLS)
        rows.push(message(sessionId, seq++, `[tool call ${tool}] {"query":"${sentence()}"}`, { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: tool, callId: `${sessionId}-c${call}`, time }))
        rows.push(message(sessionId, seq++, sentence(), { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: tool, callId: `${sessionId}-c${call}`, time: time + 1 }))
      } else if (roll < 0.45) {
        rows.push(message(sessionId, seq++, `what ${pick(WORDS)} should the ${pick(WORDS)} use?`, { time }))
        rows.push(message(sessionId, seq++, `make it ${Math.floor(next() * 90)}ms`, { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', time: time + 1 }))
      } else if (roll < 0.5) {
        rows.push(message(sessionId, seq++, `[Shadow Context checkpoint] ${sentence()}`, { sourceKind: 'checkpoint', time }))
      } else {
        rows.push(message(sessionId, seq++, sentence(), next() < 0.5 ? { time } : { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', time }))
      }
    }
  }
  return rows
}

const QUERIES = ['connection pool exhausted', 'db/pool', 'retry budget', 'what timeout should the worker use', 'RETRY_LIMIT', 'getPoolSize', '数据库 迁移', 'database migration', 'refund.ts', 'deprecated idempotency', 'v2.3.1', 'café', 'nightly flush cache', 'zeppelin', 'ERR_TIMEOUT lease', 'current timeout', 'port', 'ข้อมูล', 'การเชื่อมต่อ', 'ຂໍ້ມູນ', 'ទិន្នន័យ', 'ဘေ့စ်']

/**
 * What a search answers, without the score (each path has its own scale). With exclusions the
 * index lists count a common word's messages without them (search.ts termReport confirms small
 * counts only); the resident counts are exact: those are compared on their own.
 */
function answer(result: SearchResult, exact: boolean): unknown {
  return {
    hits: result.hits.map(hit => ({ id: hit.message.shadowId, call: hit.call?.shadowId, question: hit.question?.shadowId, snippet: hit.snippet, passage: hit.passage, matched: hit.matched, elided: hit.message.elidedBy })),
    coverage: result.coverage,
    history: result.history,
    terms: result.terms.map(term => (exact ? term : { term: term.term, inHits: term.inHits, translations: term.translations })),
  }
}

describe.each(TARGETS)('resident search on $name', target => {
  beforeAll(async () => {
    await target.setup()
  })
  afterAll(async () => {
    await target.teardown()
  })

  it('ranks exactly what the index lists rank when they cut nothing', async () => {
    const store = await ShadowStore.open(target.location())
    const rows = corpus(['ra', 'rb'], 36, 11)
    // a message that refers to another day ("yesterday"), found by a window on that day
    rows.push(message('ra', 37, 'yesterday we set the retry budget to 45ms for the worker', { time: 1_767_225_600_000 + 86_400_000 + 60_000 }))
    await store.append(rows)
    await store.recordCheckpoint({ sessionId: 'ra', checkpointId: 'ra.cp', engine: 'shadow-context', status: 'committed', shadowedSeqs: [3, 4, 5, 6, 7, 8, 9, 10, 11, 12], replaceSeq: 38, createdAt: 1_767_240_000_000 })
    const options: SearchOptions[] = [
      { sessionId: 'ra' }, { sessionId: 'ra', limit: 3 }, { sessionId: 'rb', roles: ['tool'] }, { sessionId: 'rb', roles: ['user'] },
      { sessionId: 'ra', toolName: 'grep' }, { sessionId: 'ra', excludeSourceKinds: ['checkpoint'] },
      { sessionId: 'rb', excludeToolNames: ['shell'] },
      // a time window (and the messages referring to its days), a checkpoint's originals
      { sessionId: 'ra', timeFrom: 1_767_225_600_000 + 10 * 60_000, timeTo: 1_767_225_600_000 + 30 * 60_000 },
      { sessionId: 'ra', checkpointId: 'ra.cp' },
    ]
    let compared = 0
    let found = 0
    for (const query of QUERIES) {
      for (const option of options) {
        const resident = await store.search(query, option)
        const lists = await search(store.backend, query, option)
        const exact = option.excludeSourceKinds === undefined && option.excludeToolNames === undefined
        expect(answer(resident, exact), `${query} ${JSON.stringify(option)}`).toEqual(answer(lists, exact))
        compared += 1
        if (resident.hits.length > 0) found += 1
      }
    }
    expect(found).toBeGreaterThan(compared / 2)
    await store.close()
  })

  it('finds the parts of a long camelCase identifier as the index lists do', async () => {
    const store = await ShadowStore.open(target.location())
    const parts = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima', 'mike', 'november', 'oscar', 'papa', 'quebec', 'romeo', 'sierra', 'tango', 'uniform', 'victor', 'whiskey', 'xray', 'yankee', 'zulu']
    const camel = (prefix: string, count: number): string => prefix + parts.slice(0, count).map(part => part[0]!.toUpperCase() + part.slice(1)).join('')
    // 20 parts: 118 characters; three times 26: 439 (a piece of over 200 characters was not split by the scan)
    await store.append([
      message('camel', 1, 'the seed message'),
      message('camel', 2, `call ${camel('short', 20)}() now`),
      message('camel', 3, `call ${camel('long', 26)}${camel('Again', 26)}${camel('Third', 26)}() now`),
      message('camel', 4, 'kilo and lima, apart'),
    ])
    for (const query of ['kilo lima', 'shortAlpha', 'yankee zulu', 'thirdAlpha', 'juliet']) {
      const resident = await store.search(query, { sessionId: 'camel' })
      const lists = await search(store.backend, query, { sessionId: 'camel' })
      expect(answer(resident, true), query).toEqual(answer(lists, true))
      expect(resident.hits.map(hit => hit.message.seq), query).toContain(3)
    }
    await store.close()
  })
})

describe.each(TARGETS)('resident search, scope and freshness, on $name', target => {
  beforeAll(async () => {
    await target.setup()
  })
  afterAll(async () => {
    await target.teardown()
  })

  it('ranks a fork\'s lineage (its parent below the fork point) as the same history held by one session', async () => {
    // the index lists count a word in a fork's parent whole (their counts ignore the fork bound):
    // the resident counts are exact, so a fork answers as its history copied into one session does
    const store = await ShadowStore.open(target.location())
    const parent = corpus(['fa'], 40, 23)
    const own = corpus(['fb'], 30, 29).map(row => ({ ...row, seq: row.seq + 24 }))
    await store.append(parent)
    await store.registerSession({ sessionId: 'fb', parentSessionId: 'fa', forkSeq: 25 })
    await store.append(own)
    await store.append([...parent.filter(row => row.seq < 25), ...own].map(row => ({ ...row, sessionId: 'flat', callId: row.callId?.replace(/^f[ab]-/, 'x-') ?? null })))
    const ids = (result: SearchResult): unknown => {
      const shown = answer(result, true) as { hits: Array<Record<string, unknown>>; history?: { statements: Array<{ shadowId: string }> } }
      const history = shown.history === undefined ? undefined : { ...shown.history, statements: shown.history.statements.map(statement => ({ ...statement, shadowId: statement.shadowId.split('.')[1] })) }
      return { ...shown, history, hits: shown.hits.map(hit => ({ ...hit, id: String(hit['id']).split('.')[1], call: hit['call'] === undefined ? undefined : String(hit['call']).split('.')[1], question: hit['question'] === undefined ? undefined : String(hit['question']).split('.')[1] })) }
    }
    let found = 0
    for (const query of QUERIES) {
      for (const option of [{}, { roles: ['assistant'] as const }, { limit: 4 }, { excludeSourceKinds: ['checkpoint'] }]) {
        const fork = await store.search(query, { sessionId: 'fb', ...option })
        expect(ids(fork), `${query} ${JSON.stringify(option)}`).toEqual(ids(await store.search(query, { sessionId: 'flat', ...option })))
        if (fork.hits.some(hit => hit.message.sessionId === 'fa')) found += 1
      }
    }
    // not vacuous: the parent's rows are among the hits
    expect(found).toBeGreaterThan(10)
    // the parent's rows at and above the fork point are not the fork's
    const seen = await store.search('pool', { sessionId: 'fb', limit: 200 })
    expect(seen.hits.filter(hit => hit.message.sessionId === 'fa').every(hit => hit.message.seq < 25)).toBe(true)
    await store.close()
  })

  it('counts a word in exactly the messages the scope holds: exclusions applied, rows from beforeSeq on left out', async () => {
    const store = await ShadowStore.open(target.location())
    const rows = corpus(['ca'], 60, 31)
    await store.append(rows)
    // held as the scan finds a word (camelCase parts too), the definition of a count
    const holds = (word: string) => (row: ShadowMessageInput): boolean => scanTerms(row.text, coverageTerms([word])).covered[0] === true
    for (const word of ['pool', 'retry', 'cache']) {
      const all = await store.search(word, { sessionId: 'ca' })
      expect(all.terms[0]!.inScope).toBe(rows.filter(holds(word)).length)
      const bounded = await store.search(word, { sessionId: 'ca', beforeSeq: 30 })
      expect(bounded.terms[0]!.inScope).toBe(rows.filter(row => row.seq < 30).filter(holds(word)).length)
      const excluded = await store.search(word, { sessionId: 'ca', excludeSourceKinds: ['checkpoint'] })
      expect(excluded.terms[0]!.inScope).toBe(rows.filter(row => row.sourceKind !== 'checkpoint').filter(holds(word)).length)
    }
    await store.close()
  })

  it('finds an older answer that every newest-first list has passed', async () => {
    // 150 newer messages each hold one of the question's words; the old one holds two
    const store = await ShadowStore.open(target.location())
    const rows: ShadowMessageInput[] = [message('old', 1, 'the heron osprey ledger moved to the cold store')]
    for (let seq = 2; seq <= 451; seq += 1) rows.push(message('old', seq, `${['heron', 'osprey', 'kestrel'][seq % 3]} note number ${seq}`))
    await store.append(rows)
    const resident = await store.search('heron osprey kestrel', { sessionId: 'old' })
    expect(resident.hits[0]!.message.seq).toBe(1)
    expect(resident.coverage.matched).toBe(451)
    // the index lists read each word's newest matches: the old message is in none of them
    const lists = await search(store.backend, 'heron osprey kestrel', { sessionId: 'old' })
    expect(lists.hits.map(hit => hit.message.seq)).not.toContain(1)
    await store.close()
  })

  it('finds a word only the part of a message past the light read\'s cut holds, as the index lists find it', async () => {
    const store = await ShadowStore.open(target.location())
    // a build log whose failure summary comes past the cut (CANDIDATE_TEXT_CHARS), one word split by the cut itself
    const head = 'filler '.repeat(36_571)
    const log = `${head}wombatstorm ${'filler '.repeat(3_000)}ERR_PLATYPUS_DRIFT in src/geo/kml_reader.ts, ｆｕｌｌｗｉｄｔｈ 数据漂移 summary`
    const split = `${'x '.repeat((CANDIDATE_TEXT_CHARS - 4) / 2)}quokkaline and more ${'filler '.repeat(100)}`
    await store.append([message('cut', 1, 'hello world'), message('cut', 2, log), message('cut', 3, 'another one')])
    const compare = async (query: string, seqs: number[]): Promise<void> => {
      const resident = await store.search(query, { sessionId: 'cut' })
      const lists = await search(store.backend, query, { sessionId: 'cut' })
      expect(answer(resident, true), query).toEqual(answer(lists, true))
      expect(resident.hits.map(hit => hit.message.seq), query).toEqual(seqs)
      expect(resident.terms.every(term => term.inScope > 0), query).toBe(seqs.length > 0)
    }
    for (const query of ['ERR_PLATYPUS_DRIFT', 'platypus drift', 'kml_reader.ts', 'fullwidth', '数据漂移']) await compare(query, [2])
    expect(store.residentUsage().sessions).toBe(1)
    // appended to an index already held (a delta), and a word the cut splits
    await store.append([message('cut', 4, split)])
    await compare('quokkaline', [4])
    await compare('wombatstorm', [2])
    await compare('zeppelin', [])
    expect(store.residentUsage().sessions).toBe(1)
    // a word of combining marks the cut splits (NFD présumé); a CJK pair across two pieces of a tail without spaces
    const marks = `${'x '.repeat((CANDIDATE_TEXT_CHARS - 4) / 2)}pre\u0301sume\u0301 done`
    const cjk = `${'x '.repeat(CANDIDATE_TEXT_CHARS / 2)}${'数据库迁移'.repeat(25_599)}数据库迁连接${'数据库迁移'.repeat(30_000)}`
    await store.append([message('cut', 5, marks), message('cut', 6, cjk)])
    // a tail of ~278k characters: taken in by a build in the background (INLINE_TAIL_CHARS), the lists answering meanwhile
    await compare('连接', [6])
    await store.warm('cut')
    await compare('présumé', [5])
    await compare('连接', [6])
    expect(store.residentUsage().sessions).toBe(1)
    await store.close()
  })

  // 48 terms of 'q1' runs of growing length all hold the trigrams of every 'q1q1q1q1<n>' anchor: each term walked them all, per search
  it('looks no further for a substring term that holds one no anchor holds', async () => {
    const store = await ShadowStore.open(target.location())
    await store.append(Array.from({ length: 40 }, (_row, row) => message('nest', row + 1, Array.from({ length: 50 }, (_at, at) => `q1q1q1q1${row * 1000 + at + 100}`).join(' '))))
    await store.append([message('nest', 41, 'a q1q1q1q1q1q1q1 here')])
    const nested = Array.from({ length: 30 }, (_, at) => 'q1'.repeat(6 + at)).join(' ')
    await store.search('warm', { sessionId: 'nest' })
    const calls = vi.spyOn(AnchorIndex.prototype, 'markSubstring')
    const resident = await store.search(nested, { sessionId: 'nest' })
    const walked = calls.mock.calls.length
    vi.restoreAllMocks()
    expect(resident.hits.map(hit => hit.message.seq)).toEqual([41])
    // the terms no anchor holds past 'q1' x 8 are not looked for (30 before)
    expect(walked).toBeLessThanOrEqual(3)
    expect(answer(resident, true)).toEqual(answer(await search(store.backend, nested, { sessionId: 'nest' }), true))
    await store.close()
  })

  // the delta's byte bound counts a row's text as read (1 MB), the check of it counted the light row's (256k characters):
  // a delta cut after a large row was taken as whole, and the rows the bound left out never entered the index
  it('takes in every row of a delta a large row cut short', async () => {
    const store = await ShadowStore.open(target.location())
    await store.append([message('big', 1, 'hello world')])
    await store.search('hello', { sessionId: 'big' })
    expect(store.residentUsage().sessions).toBe(1)
    await store.append([message('big', 2, 'filler words '.repeat(80_000))])
    await store.append([message('big', 3, 'the zanzibar needle is here'), message('big', 4, 'and a kestrel after it')])
    for (const [query, seq] of [['zanzibar', 3], ['kestrel', 4], ['filler', 2]] as const) {
      const resident = await store.search(query, { sessionId: 'big' })
      expect(resident.hits.map(hit => hit.message.seq), query).toEqual([seq])
      expect(resident.coverage.searched).toBe(4)
    }
    await store.close()
  })

  it('builds a rewritten session\'s index again only after a pause, answering from the lists meanwhile', async () => {
    const store = await ShadowStore.open(target.location())
    await store.append(Array.from({ length: 50 }, (_, index) => message('rw', index + 1, `harbor note ${index}`)))
    expect((await store.search('harbor', { sessionId: 'rw' })).coverage.matched).toBe(50)
    expect(store.residentUsage().sessions).toBe(1)
    // rewritten again and again (each write a rebuild): right every time, from the lists at once after a build
    for (let round = 0; round < 5; round += 1) {
      await store.append([message('rw', 7, `lantern rewrite ${round}`)])
      const found = await store.search(`lantern ${round}`, { sessionId: 'rw' })
      expect(found.hits[0]!.message.text).toBe(`lantern rewrite ${round}`)
      if (round === 0) expect(store.residentUsage().sessions).toBe(0)
    }
    // past the pause: built again, resident
    await new Promise(resolve => setTimeout(resolve, 1_100))
    const again = await store.search('lantern', { sessionId: 'rw' })
    expect(again.hits[0]!.message.text).toBe('lantern rewrite 4')
    expect(store.residentUsage().sessions).toBe(1)
    // appended rows are no rebuild: resident at once
    await store.append([message('rw', 51, 'lantern appended')])
    expect((await store.search('lantern appended', { sessionId: 'rw' })).hits[0]!.message.seq).toBe(51)
    expect(store.residentUsage().sessions).toBe(1)
    await store.close()
  })

  it('sees what another store object wrote: rows appended, an elision, rows removed, a redaction', async () => {
    const location = target.location()
    const reader = await ShadowStore.open(location)
    const writer = await ShadowStore.open(location)
    await writer.append([message('w', 1, 'the ledger port is 5433'), message('w', 2, 'unrelated chatter')])
    expect((await reader.search('ledger port', { sessionId: 'w' })).hits.map(hit => hit.message.seq)).toEqual([1])
    // appended by the other store: found at the next search
    await writer.append([message('w', 3, 'ledger port moved to 6543')])
    expect((await reader.search('ledger port', { sessionId: 'w' })).hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 3])
    // an elision mark: the hit shows it
    await writer.recordCheckpoint({ sessionId: 'w', checkpointId: 'w.c1', engine: 'shadow-context', status: 'committed', shadowedSeqs: [1], replaceSeq: 4, createdAt: Date.now() })
    await writer.markElided('w', [1], 'w.c1')
    const marked = await reader.search('ledger port', { sessionId: 'w' })
    expect(marked.hits.find(hit => hit.message.seq === 1)!.message.elidedBy).toBe('w.c1')
    // a row removed: gone from the hits
    await writer.remove('w', [3])
    expect((await reader.search('ledger port', { sessionId: 'w' })).hits.map(hit => hit.message.seq)).toEqual([1])
    await writer.close()
    // a redaction pass (a writable open with a policy): the old text is no hit, the new one is
    const redacting = await ShadowStore.open(location, { redact: { patterns: ['5433'] } })
    const after = await reader.search('5433', { sessionId: 'w' })
    expect(after.hits).toEqual([])
    await redacting.close()
    await reader.close()
  })

  it('keeps within its memory budget and answers the same after leaving a session out', async () => {
    const location = target.location()
    const setup = await ShadowStore.open(location)
    await setup.append(corpus(['m1', 'm2', 'm3'], 40, 37))
    await setup.close()
    const roomy = await ShadowStore.open(location)
    await roomy.search('pool', { sessionId: 'm1' })
    const one = (roomy as unknown as { resident: { usage(): { sessions: number; bytes: number } } }).resident.usage().bytes
    // room for one session and a half
    const tight = await ShadowStore.open(location, { resident: { maxBytes: Math.floor(one * 1.5) } })
    for (const sessionId of ['m1', 'm2', 'm3', 'm1']) {
      for (const query of QUERIES.slice(0, 6)) expect(answer(await tight.search(query, { sessionId }), true)).toEqual(answer(await roomy.search(query, { sessionId }), true))
    }
    const usage = (tight as unknown as { resident: { usage(): { sessions: number; bytes: number } } }).resident.usage()
    expect(usage.sessions).toBeLessThan(3)
    // a scope past maxMessages is searched through the index lists: the same answers as those
    const small = await ShadowStore.open(location, { resident: { maxMessages: 10 } })
    for (const query of QUERIES.slice(0, 6)) expect(answer(await small.search(query, { sessionId: 'm2' }), true)).toEqual(answer(await search(small.backend, query, { sessionId: 'm2' }), true))
    await Promise.all([tight.close(), roomy.close(), small.close()])
  })
})

describe('resident search of a row with a long tail', () => {
  it('takes the row in by a build in the background, a slice of its tail at a time, while the lists answer', async () => {
    const target = TARGETS[0]!
    await target.setup()
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(Array.from({ length: 20 }, (_, at) => message('tail', at + 1, `note ${at} about the deploy`)))
      await store.search('deploy', { sessionId: 'tail' })
      // 1M characters of distinct words: a tail of ~744k past the light read's cut, past INLINE_TAIL_CHARS
      const next = random(5)
      const words = Array.from({ length: 170_000 }, () => Math.floor(next() * 36 ** 5).toString(36).padStart(5, 'q'))
      const text = `${words.join(' ')} tailword zanzibarite`.slice(-1_000_000)
      expect(text.length - CANDIDATE_TEXT_CHARS).toBeGreaterThan(INLINE_TAIL_CHARS)
      await store.append([message('tail', 21, text)])
      const listed = listReads(store)
      // the first search does not list the tail itself: the lists answer it
      const first = await store.search('zanzibarite', { sessionId: 'tail' })
      expect(listed()).toBeGreaterThan(0)
      expect(first.hits.map(hit => hit.message.seq)).toEqual([21])
      // the build lets other calls run inside the row: many turns of the event loop while it lists the tail
      let turns = 0
      let done = false
      const tick = (): void => {
        turns += 1
        if (!done) setImmediate(tick)
      }
      setImmediate(tick)
      await store.warm('tail')
      done = true
      // the build's own few (4 when the row went in whole), and one per 128k-character piece of the tail (~6)
      expect(turns).toBeGreaterThanOrEqual(7)
      // then the index answers, as the lists do, a word only the tail holds
      const before = listed()
      const resident = await store.search('zanzibarite tailword', { sessionId: 'tail' })
      expect(listed()).toBe(before)
      expect(resident.hits.map(hit => hit.message.seq)).toEqual([21])
      expect(answer(resident, true)).toEqual(answer(await search(store.backend, 'zanzibarite tailword', { sessionId: 'tail' }), true))
    } finally {
      await store.close()
      await target.teardown()
    }
  })
})

describe('resident search of a large session', () => {
  it('answers through the index lists while its index is built in the background, then from the index', async () => {
    const target = TARGETS[0]!
    await target.setup()
    const store = await ShadowStore.open(target.location())
    const rows = Array.from({ length: INLINE_MESSAGES + 200 }, (_, index) => message('big', index + 1, `${WORDS[index % WORDS.length]} note ${index} ${index % 97 === 0 ? 'zeppelin' : ''}`))
    await store.append(rows)
    const listed = listReads(store)
    // no search waits seconds for an index: the first one is the lists' (the build starts behind it)
    const first = await store.search('zeppelin note', { sessionId: 'big' })
    expect(listed()).toBeGreaterThan(0)
    expect(first.hits.length).toBeGreaterThan(0)
    await store.warm('big')
    const before = listed()
    const warm = await store.search('zeppelin note', { sessionId: 'big' })
    expect(listed()).toBe(before)
    // every message says "note": each word's newest rankWindow (1,000) matches are ranked, and every zeppelin
    const zeppelins = rows.filter(row => row.text.includes('zeppelin')).length
    expect(warm.coverage.matched).toBe(1_000 + rows.slice(0, -1_000).filter(row => row.text.includes('zeppelin')).length)
    expect(zeppelins).toBeGreaterThan(40)
    expect(warm.hits.slice(0, 3).map(hit => hit.message.text.includes('zeppelin'))).toEqual([true, true, true])
    await store.close()
    await target.teardown()
  })
})
