import { chmodSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { hashEventJson, isShadowStoreError, sessionTag, ShadowStore, ShadowStoreError } from '../src/index.ts'
import { MIGRATIONS, SCHEMA_VERSION } from '../src/sqlite/schema.ts'
import { message, tempDir } from './helpers.ts'
import { TARGETS } from './targets.ts'

// Every contract below runs against each backend: SQLite files and a real PostgreSQL server.
describe.each(TARGETS)('ShadowStore on $name', target => {
  let store: ShadowStore

  beforeAll(() => target.setup())
  afterAll(() => target.teardown())
  beforeEach(async () => {
    store = await ShadowStore.open(target.location())
    // the backend under test is the one named
    expect(store.path.startsWith('postgres://')).toBe(target.name === 'postgres')
  })
  afterEach(async () => {
    await store.close()
  })

  it('writes each (session, seq) exactly once and replaces a row whose content changed', async () => {
    const rows = [message('s1', 4, 'first'), message('s1', 6, 'second')]
    expect(await store.append(rows)).toEqual({ written: 2, unchanged: 0, replaced: 0 })
    expect(await store.append(rows)).toEqual({ written: 0, unchanged: 2, replaced: 0 })
    const changed = message('s1', 6, 'second, from another lifetime')
    expect(await store.append([changed])).toEqual({ written: 0, unchanged: 0, replaced: 1 })
    const stored = await store.read({ sessionId: 's1' })
    expect(stored.map(row => row.seq)).toEqual([4, 6])
    expect(stored[1]!.text).toBe('second, from another lifetime')
    expect(stored[1]!.hash).toBe(hashEventJson(changed.eventJson))
    expect((await store.session('s1'))!.messageCount).toBe(2)
    // the replaced text is searchable, the old one is gone from the index
    expect((await store.search('lifetime', { sessionId: 's1' })).hits).toHaveLength(1)
    expect((await store.search('second', { sessionId: 's1' })).hits.map(hit => hit.message.seq)).toEqual([6])
  })

  it('pairs a result with a call whose text is empty, and with one retention emptied', async () => {
    const call = { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: 'shell', callId: 'call-e' } as const
    await store.append([
      message('e1', 1, '', call),
      message('e1', 2, 'quartzite in the output', { ...call, eventType: 'tool/result', role: 'tool', sourceKind: 'tool' }),
    ])
    // a light read of an empty SQLite BLOB was NULL: the search failed with UNAVAILABLE
    expect((await store.search('quartzite', { sessionId: 'e1' })).hits.map(hit => [hit.message.seq, hit.call?.seq, hit.call?.text])).toEqual([[2, 1, '']])
    await store.append([message('e1', 3, 'a call retention empties', { ...call, callId: 'call-f' }), message('e1', 4, 'basalt in the output', { ...call, callId: 'call-f', eventType: 'tool/result', role: 'tool', sourceKind: 'tool' })])
    await store.markElided('e1', [3], 'ce')
    await store.backend.expireCheckpoint('ce', Date.now())
    expect((await store.search('basalt', { sessionId: 'e1' })).hits.map(hit => [hit.message.seq, hit.call?.seq, hit.call?.expiredAt === null])).toEqual([[4, 3, false]])
  })

  it('gives every message a typeable shadow id derived from the session and seq', async () => {
    await store.append([message('session-abc', 41, 'x')])
    const [row] = await store.read({ sessionId: 'session-abc' })
    expect(row!.shadowId).toBe(`${sessionTag('session-abc')}.41`)
    expect((await store.message(row!.shadowId))!.text).toBe('x')
    expect(await store.message(`${sessionTag('session-abc')}.42`)).toBeUndefined()
    await expect(store.message('not an id')).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('keeps NUL bytes, CJK and a 1 MB text lossless', async () => {
    const big = 'x'.repeat(1_000_000)
    const nul = 'before\u0000after'
    await store.append([message('s1', 1, nul), message('s1', 2, big), message('s1', 3, '数据库迁移到端口5433')])
    const rows = await store.read({ sessionId: 's1' })
    // compare sizes and digests, never megabyte strings (a failing diff would flood the log)
    expect(rows.map(row => [row.text.length, hashEventJson(row.text)])).toEqual([nul, big, '数据库迁移到端口5433'].map(text => [text.length, hashEventJson(text)]))
    expect(JSON.parse(rows[0]!.eventJson).data.content[0].text).toBe(nul)
    expect((await store.search('after', { sessionId: 's1' })).hits[0]!.message.seq).toBe(1)
  })

  it('searches English (stemmed), Chinese, and substrings, and marks the match', async () => {
    await store.append([
      message('s1', 1, 'We decided to move the staging database to port 5433.'),
      message('s1', 2, '缓存过期时间统一改成九十秒'),
      message('s1', 3, 'handleRequestTimeout in src/server/routes.ts threw ECONNREFUSED'),
      message('s1', 4, 'unrelated chatter about lunch'),
    ])
    const seqs = async (query: string): Promise<number[]> => (await store.search(query, { sessionId: 's1' })).hits.map(hit => hit.message.seq)
    expect(await seqs('databases ports')).toEqual([1])
    expect(await seqs('缓存过期')).toEqual([2])
    expect(await seqs('过期时间')).toEqual([2])
    expect(await seqs('request timeout')).toEqual([3])
    expect(await seqs('erver/rou')).toEqual([3])
    expect(await seqs('ECONNREF')).toEqual([3])
    const result = await store.search('port 5433', { sessionId: 's1' })
    expect(result.hits[0]!.snippet).toContain('**port** **5433**')
    expect(result.coverage).toEqual({ searched: 4, matched: 1, returned: 1 })
  })

  it('ranks a tool call and its result as one unit, represented by the result', async () => {
    await store.append([
      message('s1', 1, 'read the gateway config please'),
      message('s1', 2, 'shadow_fake grep {"pattern":"retryBudget","path":"src/gateway.ts"}', { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: 'grep', callId: 'call-1' }),
      message('s1', 4, 'src/gateway.ts:88: const limit = 7', { eventType: 'tool/result', role: 'tool', sourceKind: 'tool', toolName: 'grep', callId: 'call-1' }),
      message('s1', 5, 'limit is mentioned in many places, like the limit of this chat'),
    ])
    // neither message alone holds both words; together they do
    const result = await store.search('retryBudget limit', { sessionId: 's1' })
    expect(result.hits[0]!.message.seq).toBe(4)
    expect(result.hits[0]!.call!.seq).toBe(2)
    expect(result.hits.filter(hit => hit.message.seq === 2)).toEqual([])
    expect(result.hits[0]!.snippet).toContain('**retryBudget**')
    // asked for assistant messages only, the call stays itself
    const calls = await store.search('retryBudget', { sessionId: 's1', roles: ['assistant'] })
    expect(calls.hits.map(hit => [hit.message.seq, hit.call])).toEqual([[2, undefined]])
    // asked for tool rows, the result is found by its call's arguments, as the unfiltered hit shows
    // it (the role filter left the call out of the candidates: 0 hits for `--role tool`)
    const results = await store.search('retryBudget', { sessionId: 's1', roles: ['tool'] })
    expect(results.hits.map(hit => [hit.message.seq, hit.message.role, hit.call?.seq])).toEqual([[4, 'tool', 2]])
    expect(results.hits[0]!.snippet).toContain('**retryBudget**')
    expect((await store.search('retryBudget', { sessionId: 's1', roles: ['tool'], toolName: 'grep' })).hits.map(hit => hit.message.seq)).toEqual([4])
    // a call whose result is not stored is an assistant row: not a tool hit
    await store.append([message('s1', 6, 'shadow_fake grep {"pattern":"zanzibarFlag"}', { eventType: 'assistant/message', role: 'assistant', sourceKind: 'model', toolName: 'grep', callId: 'call-2' })])
    expect((await store.search('zanzibarFlag', { sessionId: 's1', roles: ['tool'] })).hits).toEqual([])
    // nor does it when the result falls outside the time window asked for
    const callTime = (await store.messageAt('s1', 2))!.time
    const early = await store.search('retryBudget', { sessionId: 's1', timeTo: callTime })
    expect(early.hits.map(hit => [hit.message.seq, hit.call])).toEqual([[2, undefined]])
  })

  it('weights coverage by rarity: the rare identifier beats the common word', async () => {
    const filler = Array.from({ length: 30 }, (_, index) => message('s1', index + 10, `deploy step ${index} finished`))
    await store.append([...filler, message('s1', 1, 'the orders_v2 table')])
    // unweighted, thirty messages cover three of five query terms and the answer only two
    const result = await store.search('deploy step finished orders_v2', { sessionId: 's1' })
    expect(result.hits[0]!.message.seq).toBe(1)
  })

  it('answers "latest" and "目前" questions with the newest message that covers the topic', async () => {
    await store.append([
      message('s1', 1, 'The retry limit is 3 for the payment client.'),
      message('s1', 2, 'Raised the payment client retry limit to 5 after the incident.'),
      message('s1', 3, '支付客户端的重试次数设为三次'),
      message('s1', 4, '支付客户端的重试次数改成五次了'),
    ])
    const first = async (query: string): Promise<number> => (await store.search(query, { sessionId: 's1' })).hits[0]!.message.seq
    expect(await first('latest payment client retry limit')).toBe(2)
    expect(await first('目前支付客户端的重试次数是多少')).toBe(4)
    // the cue word alone is a search for that word
    expect((await store.search('latest', { sessionId: 's1' })).hits).toEqual([])
  })

  it('drops question words from Chinese queries so they do not dilute the topic', async () => {
    await store.append([
      message('s1', 1, '数据库迁移在周四晚上完成'),
      message('s1', 2, '什么时候吃午饭？大家都在问什么时候'),
    ])
    const result = await store.search('数据库迁移是什么时候做的', { sessionId: 's1' })
    expect(result.hits.map(hit => hit.message.seq)).toEqual([1])
    expect(result.literals).toContain('数据库迁移')
  })

  it('finds an older match in a wide scope even when other sessions hold many newer ones', async () => {
    for (let index = 0; index < 9; index += 1) {
      await store.registerSession({ sessionId: `a${index}`, workspace: '/A' })
      await store.append([message(`a${index}`, 1, `zebraword seen in session a${index}`)])
    }
    await store.registerSession({ sessionId: 'b', workspace: '/B' })
    await store.append(Array.from({ length: 1_500 }, (_, index) => message('b', index + 1, `zebraword again ${index}`)))
    const wide = await store.search('zebraword', { sessionId: 'a0', workspace: '/A', limit: 20 })
    expect(wide.hits.map(hit => hit.message.sessionId).toSorted()).toEqual(Array.from({ length: 9 }, (_, index) => `a${index}`))
  })

  it('treats FTS syntax in queries as data', async () => {
    await store.append([message('s1', 1, 'alpha beta'), message('s1', 2, 'NEAR(alpha beta) "quoted" *star* col:umn')])
    for (const query of ['NEAR(alpha', '"unbalanced', 'alpha OR', 'body:alpha', '*', '-alpha', '^alpha', 'alpha AND NOT beta', 'scope:x', '()', '"']) {
      const outcome = await store.search(query, { sessionId: 's1' }).then(result => result.hits.length, (error: unknown) => error)
      // either a ranked answer, or a typed refusal for a query with nothing to search for
      if (typeof outcome !== 'number') expect(outcome).toMatchObject({ code: 'INVALID_INPUT', message: 'query has no searchable words' })
    }
    expect((await store.search('NEAR(alpha', { sessionId: 's1' })).hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
    expect((await store.search('"quoted"', { sessionId: 's1' })).hits.map(hit => hit.message.seq)).toEqual([2])
  })

  it('rejects bad input with typed errors and changes nothing', async () => {
    await store.append([message('s1', 1, 'kept')])
    const before = await store.stats()
    const bad: Array<() => Promise<unknown>> = [
      () => store.append([message('s1', -1, 'x')]),
      () => store.append([{ ...message('s1', 2, 'x'), eventType: 'tool/call' as never }]),
      () => store.append([message('s1', 3, 'ok'), { ...message('s1', 4, 'x'), role: 'robot' as never }]),
      () => store.append([{ ...message('', 2, 'x') }]),
      () => store.append('nope' as never),
      () => store.search('', { sessionId: 's1' }),
      () => store.search('x'.repeat(100_000), { sessionId: 's1' }),
      () => store.search('x', { sessionId: 's1', limit: 0 }),
      () => store.search(42 as never, { sessionId: 's1' }),
      () => store.read({ sessionId: 's1' }, { fromSeq: 9, toSeq: 3 }),
      () => store.read({ sessionId: 'nobody' }),
      () => store.message('abc.x'),
      () => store.registerSession({ sessionId: 's2', parentSessionId: 's2' }),
    ]
    for (const call of bad) {
      const error = await call().then(() => undefined, (failure: unknown) => failure)
      expect(isShadowStoreError(error), String(error)).toBe(true)
      expect(['INVALID_INPUT', 'NOT_FOUND']).toContain((error as ShadowStoreError).code)
    }
    expect(await store.stats()).toEqual(before)
  })

  it('keeps checkpoint marks with the session that compacted: a fork eliding inherited rows leaves its parent\'s unmarked', async () => {
    await store.append([1, 2, 3, 4].map(seq => message('fp', seq, `parent row ${seq} zebra`)))
    await store.registerSession({ sessionId: 'fc', parentSessionId: 'fp', forkSeq: 5 })
    await store.append([message('fc', 5, 'fork row zebra')])
    const fork = await store.recordCheckpoint({ checkpointId: `${sessionTag('fc')}.c1`, sessionId: 'fc', engine: 'shadow-context', status: 'committed', shadowedSeqs: [1, 2, 5], createdAt: 1 })
    await store.ingest([{ op: 'checkpoint', checkpoint: fork, elide: true }])
    // only the fork's own row carries the mark; the parent's rows are untouched
    expect((await store.backend.messageHashesFor('fp', [1, 2, 3, 9])).map(mark => [mark.seq, mark.elidedBy])).toEqual([[1, null], [2, null], [3, null]])
    expect((await store.backend.messageHashesFor('fc', [5])).map(mark => mark.elidedBy)).toEqual([fork.checkpointId])
    // the parent reads and finds its rows live, the fork sees them in its checkpoint
    expect((await store.read({ sessionId: 'fp' })).map(row => row.elidedBy)).toEqual([null, null, null, null])
    expect((await store.read({ sessionId: 'fc' })).map(row => [row.seq, row.elidedBy])).toEqual([[1, fork.checkpointId], [2, fork.checkpointId], [3, null], [4, null], [5, fork.checkpointId]])
    expect((await store.search('zebra', { sessionId: 'fp' })).hits.every(hit => hit.message.elidedBy === null)).toBe(true)
    expect((await store.search('zebra', { sessionId: 'fc', checkpointId: fork.checkpointId })).hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2, 5])
    // the checkpoint's originals are its recorded seqs within its own history, on every backend
    expect((await store.read({ sessionId: 'fc' }, { elidedBy: fork.checkpointId })).map(row => row.seq)).toEqual([1, 2, 5])
    expect(await store.count({ sessionId: 'fp' }, { elidedBy: fork.checkpointId })).toBe(2)
    expect((await store.lookupInLineage(await store.lineage('fc'), 2))!.elidedBy).toBe(fork.checkpointId)
    expect((await store.lookupInLineage(await store.lineage('fp'), 2))!.elidedBy).toBeNull()
  })

  it('reads a fork through its parent below the fork point, without copying rows', async () => {
    await store.registerSession({ sessionId: 'parent' })
    await store.append([message('parent', 1, 'shared prefix'), message('parent', 3, 'shared too'), message('parent', 9, 'parent after fork')])
    await store.registerSession({ sessionId: 'child', parentSessionId: 'parent', forkSeq: 5 })
    await store.append([message('child', 6, 'child own')])
    const visible = await store.read({ sessionId: 'child' })
    expect(visible.map(row => [row.sessionId, row.seq])).toEqual([['parent', 1], ['parent', 3], ['child', 6]])
    expect((await store.search('after fork', { sessionId: 'child' })).hits).toHaveLength(0)
    expect((await store.search('shared', { sessionId: 'child' })).hits).toHaveLength(2)
    expect((await store.search('child', { sessionId: 'parent' })).hits).toHaveLength(0)
    expect((await store.stats()).messages).toBe(4)
    const lineage = await store.lineage('child')
    expect(lineage.map(segment => [segment.sessionId, segment.belowSeq])).toEqual([['child', Number.POSITIVE_INFINITY], ['parent', 5]])
  })

  it('keeps sessions apart unless a wider scope is asked for', async () => {
    await store.registerSession({ sessionId: 'a', workspace: '/repo' })
    await store.registerSession({ sessionId: 'b', workspace: '/repo' })
    await store.registerSession({ sessionId: 'c', workspace: '/other' })
    await store.append([message('a', 1, 'secret alpha'), message('b', 1, 'secret beta'), message('c', 1, 'secret gamma')])
    const sessionsOf = async (options: Parameters<ShadowStore['search']>[1]): Promise<string[]> =>
      (await store.search('secret', options)).hits.map(hit => hit.message.sessionId).toSorted()
    expect(await sessionsOf({ sessionId: 'a' })).toEqual(['a'])
    expect(await sessionsOf({ sessionId: 'a', workspace: '/repo' })).toEqual(['a', 'b'])
    expect(await sessionsOf({ sessionId: 'a', allSessions: true })).toEqual(['a', 'b', 'c'])
  })

  it('filters searches by time, role and tool', async () => {
    const base = Date.UTC(2026, 10, 30, 8)
    await store.append([
      message('s1', 1, 'deploy failed', { time: base }),
      message('s1', 2, 'deploy failed again', { time: base + 3_600_000, role: 'tool', eventType: 'tool/result', toolName: 'shell' }),
      message('s1', 3, 'deploy fixed', { time: base + 7_200_000, role: 'assistant', eventType: 'assistant/message', toolName: 'shell read_file' }),
    ])
    const seqs = async (options: Partial<Parameters<ShadowStore['search']>[1]>): Promise<number[]> =>
      (await store.search('deploy', { sessionId: 's1', ...options })).hits.map(hit => hit.message.seq).toSorted()
    expect(await seqs({ timeFrom: base + 1, timeTo: base + 3_600_000 })).toEqual([2])
    expect(await seqs({ roles: ['tool'] })).toEqual([2])
    expect(await seqs({ toolName: 'read_file' })).toEqual([3])
    expect(await seqs({ toolName: 'shell' })).toEqual([2, 3])
    // a tool's name is matched exactly, as every path reads it (SQLite's LIKE folded ASCII case store-wide)
    for (const toolName of ['Shell', 'SHELL', 'READ_FILE', 'read', 'hell']) {
      expect(await seqs({ toolName }), toolName).toEqual([])
      expect(await seqs({ toolName, allSessions: true }), toolName).toEqual([])
    }
    expect(await seqs({ toolName: 'read_file', allSessions: true })).toEqual([3])
  })

  it('keeps one append\'s rows in arrival order across its sessions, newest first store-wide', async () => {
    // PostgreSQL gave a batch's new rows ids in (session, seq) order: past the lists' window a store-wide
    // search saw only the first session's newest rows
    const base = Date.UTC(2026, 10, 30, 8)
    await store.append(Array.from({ length: 1_500 }, (_, at) => message(at % 2 === 0 ? 'arr-b' : 'arr-a', at + 1, `deploy note ${at}`, { time: base + at * 1_000 })))
    const hits = (await store.search('deploy note', { sessionId: 'arr-a', allSessions: true, limit: 6 })).hits
    expect(hits.map(hit => `${hit.message.sessionId}:${hit.message.seq}`)).toEqual(['arr-a:1500', 'arr-b:1499', 'arr-a:1498', 'arr-b:1497', 'arr-a:1496', 'arr-b:1495'])
  })

  it('registers the sessions of one append together: its session lookups and writes do not grow with their number', async () => {
    // each new session was three lookups and a write of its own (2,000 of them: 3.4 s on PostgreSQL)
    const calls: string[] = []
    const backend = store.backend as unknown as Record<string, (...args: unknown[]) => unknown>
    for (const name of ['getSession', 'getSessionByTag', 'upsertSession', 'getSessions', 'getSessionsByTags', 'addSessions']) {
      const original = backend[name]!.bind(store.backend)
      backend[name] = (...args: unknown[]) => {
        calls.push(name)
        return original(...args)
      }
    }
    const base = Date.UTC(2026, 10, 30, 8)
    const ids = Array.from({ length: 300 }, (_, at) => `many-${at}`)
    const rows = ids.flatMap((id, at) => [message(id, 1, `first note ${at}`, { time: base + at }), message(id, 2, `second note ${at}`, { time: base + 1_000 + at })])
    expect(await store.append(rows)).toEqual({ written: 600, unchanged: 0, replaced: 0 })
    expect(calls).toEqual(['getSessions', 'getSessionsByTags', 'addSessions'])
    calls.length = 0
    expect(await store.append(ids.map((id, at) => message(id, 3, `third note ${at}`, { time: base + 2_000 + at })))).toEqual({ written: 300, unchanged: 0, replaced: 0 })
    expect(calls).toEqual(['getSessions'])
    const sessions = await store.sessions()
    expect(sessions).toHaveLength(300)
    for (const [at, id] of ids.entries()) {
      expect(sessions.find(session => session.sessionId === id)).toMatchObject({ tag: sessionTag(id), messageCount: 3, lastSeq: 3, firstTime: base + at, lastTime: base + 2_000 + at })
    }
    expect((await store.message(`${sessionTag('many-7')}.2`))!.text).toBe('second note 7')
    expect((await store.search('second note 299', { sessionId: 'many-299' })).hits[0]!.message.shadowId).toBe(`${sessionTag('many-299')}.2`)
  })

  it('writes a session whose tag another writer took meanwhile at the retry the CONFLICT asks for, under a longer tag', async () => {
    // two ids with one default tag (30 bits: a few thousand tries)
    const seen = new Map<string, string>()
    let pair: [string, string] | undefined
    for (let index = 0; pair === undefined; index += 1) {
      const id = `taken-${index}`
      const other = seen.get(sessionTag(id))
      if (other === undefined) seen.set(sessionTag(id), id)
      else pair = [other, id]
    }
    const [mine, theirs] = pair
    const location = target.location()
    const writer = await ShadowStore.open(location)
    const other = await ShadowStore.open(location)
    // the other writer registers its session between this writer's choice of the tag and its registration
    const backend = writer.backend as unknown as { addSessions: (sessions: unknown) => Promise<void> }
    const addSessions = backend.addSessions.bind(writer.backend)
    backend.addSessions = async sessions => {
      backend.addSessions = addSessions
      await other.append([message(theirs, 1, 'theirs first')])
      return addSessions(sessions)
    }
    await expect(writer.append([message(mine, 1, 'mine')])).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/retry/) })
    // the retry chooses again (it kept the taken tag, and every retry was refused the same way)
    expect(await writer.append([message(mine, 1, 'mine')])).toEqual({ written: 1, unchanged: 0, replaced: 0 })
    expect((await other.session(mine))!.tag).toBe(sessionTag(mine, 7))
    expect((await other.session(theirs))!.tag).toBe(sessionTag(theirs))
    expect((await other.message(`${sessionTag(mine, 7)}.1`))!.text).toBe('mine')
    await writer.close()
    await other.close()
  })

  it('records checkpoints with ranges derived from the stored rows', async () => {
    const rows = [message('s1', 4, 'a'), message('s1', 6, 'b'), message('s1', 7, 'c')]
    await store.append(rows)
    const checkpoint = await store.recordCheckpoint({
      checkpointId: `${sessionTag('s1')}.c1`, sessionId: 's1', engine: 'shadow-context', status: 'committed', shadowedSeqs: [4, 6, 7], createdAt: rows[2]!.time + 10,
    })
    expect(checkpoint).toMatchObject({
      firstSeq: 4, lastSeq: 7, messageCount: 3, timeFrom: rows[0]!.time, timeTo: rows[2]!.time,
      firstShadowId: `${sessionTag('s1')}.4`, lastShadowId: `${sessionTag('s1')}.7`,
    })
    await store.ingest([{ op: 'checkpoint', checkpoint: { ...checkpoint, footer: 'footer' }, elide: true }])
    expect((await store.read({ sessionId: 's1' }, { elidedBy: checkpoint.checkpointId })).map(row => row.seq)).toEqual([4, 6, 7])
    expect((await store.checkpoints('s1'))[0]!.footer).toBe('footer')
  })

  it('reconciles against an authoritative log: writes what is missing, removes a lost lifetime', async () => {
    const captured = (seq: number, text: string) => ({
      sessionId: 's1', seq, type: 'user/message' as const, time: 1_000 + seq, turn: 1, step: 1, toolName: null,
      eventJson: JSON.stringify({ type: 'user/message', seq, time: 1_000 + seq, data: { content: [{ type: 'text', text }], source: { kind: 'user' } } }),
    })
    await store.ingest([{ op: 'events', events: [captured(1, 'one'), captured(2, 'two'), captured(8, 'lost lifetime')] }])
    const report = await store.ingest([{ op: 'reconcile', sessionId: 's1', events: [captured(1, 'one'), captured(2, 'two'), captured(3, 'three'), captured(8, 'real eight')], ownFromSeq: 0 }])
    expect(report).toMatchObject({ written: 1, unchanged: 2, replaced: 1, removed: 0 })
    const again = await store.ingest([{ op: 'reconcile', sessionId: 's1', events: [captured(1, 'one'), captured(2, 'two')], ownFromSeq: 0 }])
    expect(again).toMatchObject({ written: 0, removed: 2 })
    expect((await store.read({ sessionId: 's1' })).map(row => row.seq)).toEqual([1, 2])
  })

  it('answers the write-ahead check through the lineage', async () => {
    await store.registerSession({ sessionId: 'p' })
    const parentRow = message('p', 2, 'parent')
    await store.append([parentRow])
    await store.registerSession({ sessionId: 'c', parentSessionId: 'p', forkSeq: 5 })
    const childRow = message('c', 7, 'child')
    await store.append([childRow])
    const result = await store.confirm('c', [
      { seq: 2, hash: hashEventJson(parentRow.eventJson) },
      { seq: 7, hash: 'stale' },
      { seq: 9, hash: 'x' },
    ])
    expect(result).toEqual({ missing: [9], mismatched: [7] })
  })

  it('reports a missing store when opened read-only, and a read-only store as unavailable for writes', async () => {
    await expect(ShadowStore.open(target.location(), { readOnly: true })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    const file = target.location()
    const writer = await ShadowStore.open(file)
    await writer.append([message('s1', 1, 'x')])
    await writer.close()
    const reader = await ShadowStore.open(file, { readOnly: true })
    expect((await reader.read({ sessionId: 's1' })).length).toBe(1)
    await expect(reader.append([message('s1', 2, 'y')])).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    expect((await reader.read({ sessionId: 's1' })).length).toBe(1)
    await reader.close()
    await expect(reader.stats()).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('redacts secrets from stored text, event JSON and the index, and still verifies against the redacted original', async () => {
    const location = target.location()
    const redacting = await ShadowStore.open(location, { redact: { patterns: ['/acme-[0-9a-f]{12}/i', 'pin=(?<secret>[0-9]{4})'] } })
    const secretText = [
      'export DEEPSEEK_API_KEY=sk-0123456789abcdefABCDEF0123',
      'curl -H "Authorization: Bearer abcdefghijklmnop.qrstuvwx" https://user:hunter22@db.internal:5432/app',
      'token ghp_0123456789abcdefghijABCDEFGHIJ012345 and AKIAABCDEFGHIJKLMNOP',
      'password: "correct horse battery"',
      'ACME-DEADBEEF0042 pin=1234 port 5433',
    ].join('\n')
    const row = message('s1', 1, secretText)
    await redacting.append([row])
    const [stored] = await redacting.read({ sessionId: 's1' })
    for (const secret of ['sk-0123456789', 'abcdefghijklmnop.qrstuvwx', 'hunter22', 'ghp_0123', 'AKIAABCDEFGHIJKLMNOP', 'correct', 'DEADBEEF0042', '1234']) {
      expect(stored!.text).not.toContain(secret)
      expect(stored!.eventJson).not.toContain(secret)
      expect((await redacting.search(secret, { sessionId: 's1' })).hits, secret).toEqual([])
    }
    expect(stored!.text).toContain('[REDACTED:api-key]')
    expect(stored!.text).toContain('pin=[REDACTED:custom]')
    expect(stored!.text).toContain('port 5433')
    expect(JSON.parse(stored!.eventJson).data.content[0].text).toBe(stored!.text)
    // the row answers for the original log event, redacted alike (its hash is of the stored form)
    expect(stored!.hash).toBe(hashEventJson(stored!.eventJson))
    expect(await redacting.confirm('s1', [{ seq: 1, hash: redacting.hashOf(row.eventJson) }])).toEqual({ missing: [], mismatched: [] })
    expect(await redacting.append([row])).toEqual({ written: 0, unchanged: 1, replaced: 0 })
    await redacting.close()
    // the policy lives in the store: a later writer without the option (the CLI's repair) applies it too
    const later = await ShadowStore.open(location)
    await later.append([message('s1', 2, 'token=sk-abcdefghijklmnopqrstuvwx and pin=4321')])
    expect((await later.messageAt('s1', 2))!.text).toBe('token=[REDACTED:api-key] and pin=[REDACTED:custom]')
    await later.close()
    const off = await ShadowStore.open(location, { redact: false })
    await off.append([message('s1', 3, 'pin=4321')])
    expect((await off.messageAt('s1', 3))!.text).toBe('pin=4321')
    await off.close()
    const bad = target.location()
    for (const patterns of [['('], [''], ['a*'], [42]]) {
      await expect(ShadowStore.open(bad, { redact: { patterns: patterns as string[] } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    expect(await target.exists(bad)).toBe(false)
  })

  describe('retention', () => {
    const HOUR = 3_600_000
    const t0 = Date.UTC(2026, 9, 1)
    /** Two sessions of one workspace: s1 with checkpoints c1 (oldest) and c2 and 10 live rows; s2 with c1. */
    async function seed(): Promise<{ c: (session: string, n: number) => string }> {
      const c = (session: string, n: number): string => `${sessionTag(session)}.c${n}`
      for (const session of ['s1', 's2']) await store.registerSession({ sessionId: session, workspace: '/repo' })
      const rows = (session: string, from: number, to: number, hours: number) => Array.from({ length: to - from + 1 }, (_, index) =>
        message(session, from + index, `${session} row ${from + index} key${from + index}z ${'x'.repeat(1_000)}`, { time: t0 + hours * HOUR + index }))
      await store.append([...rows('s1', 1, 10, 0), ...rows('s1', 11, 20, 24), ...rows('s1', 21, 30, 48), ...rows('s2', 1, 10, 12)])
      const checkpoint = async (session: string, n: number, seqs: number[]): Promise<void> => {
        const recorded = await store.recordCheckpoint({ checkpointId: c(session, n), sessionId: session, engine: 'shadow-context', status: 'committed', shadowedSeqs: seqs, createdAt: t0 })
        await store.ingest([{ op: 'checkpoint', checkpoint: recorded, elide: true }])
      }
      await checkpoint('s1', 1, Array.from({ length: 10 }, (_, index) => index + 1))
      await checkpoint('s1', 2, Array.from({ length: 10 }, (_, index) => index + 11))
      await checkpoint('s2', 1, Array.from({ length: 10 }, (_, index) => index + 1))
      return { c }
    }

    it('drops the oldest checkpoint originals over a session budget, marks the pointer expired, and keeps identity and hash', async () => {
      const { c } = await seed()
      const before = await store.read({ sessionId: 's1' }, { limit: 100 })
      const rowBytes = before[0]!.text.length + before[0]!.eventJson.length
      const budget = rowBytes * 25 // 30 rows stored: one checkpoint of 10 must go
      const dry = await store.gc({ sessionBytes: budget, dryRun: true })
      expect(dry.expired.map(entry => [entry.checkpointId, entry.reason])).toEqual([[c('s1', 1), 'session']])
      expect((await store.stats()).expired).toBe(0)

      const report = await store.gc({ sessionBytes: budget })
      expect(report.expired.map(entry => entry.checkpointId)).toEqual([c('s1', 1)])
      expect(report.rows).toBe(10)
      expect(report.overBudget).toEqual([])
      const after = await store.read({ sessionId: 's1' }, { limit: 100 })
      expect(after.map(row => row.seq)).toEqual(before.map(row => row.seq))
      expect(after.map(row => row.hash)).toEqual(before.map(row => row.hash))
      expect(after.slice(0, 10).every(row => row.text === '' && row.eventJson === '' && row.expiredAt !== null)).toBe(true)
      expect(after.slice(10).every(row => row.text.length > 0 && row.expiredAt === null)).toBe(true)
      const checkpoints = await store.checkpoints('s1')
      expect(checkpoints.map(checkpoint => [checkpoint.checkpointId, checkpoint.expiredRows, checkpoint.expiredAt !== null])).toEqual([[c('s1', 1), 10, true], [c('s1', 2), 0, false]])
      // gone from search and not brought back by a re-append; the write-ahead check no longer vouches for them
      expect((await store.search('key3z', { sessionId: 's1' })).hits).toEqual([])
      expect((await store.search('key13z', { sessionId: 's1' })).hits.map(hit => hit.message.seq)).toEqual([13])
      expect(await store.confirm('s1', before.slice(0, 3).map(row => ({ seq: row.seq, hash: row.hash })))).toEqual({ missing: [1, 2, 3], mismatched: [] })
      expect(await store.confirm('s1', before.slice(10, 12).map(row => ({ seq: row.seq, hash: row.hash })))).toEqual({ missing: [], mismatched: [] })
      expect(await store.append([message('s1', 1, before[0]!.text, { time: before[0]!.time, eventJson: before[0]!.eventJson })])).toMatchObject({ written: 0, replaced: 0 })
      expect((await store.gc({ sessionBytes: budget })).expired).toEqual([])
    })

    it('counts a checkpoint expired once when a batch names it twice (both backends alike)', async () => {
      // SQLite counted the second mention 0 rows, PostgreSQL gave both the rows of the first
      const { c } = await seed()
      const results = await store.backend.expireCheckpoints([c('s1', 1), c('s2', 1), c('s1', 1)], t0)
      expect(results).toEqual([expect.objectContaining({ rows: 10 }), expect.objectContaining({ rows: 10 }), { rows: 0, bytes: 0 }])
      expect((await store.checkpoints('s1')).find(checkpoint => checkpoint.checkpointId === c('s1', 1))?.expiredRows).toBe(10)
    })

    it('never drops rows a fork registered after the candidates were chosen still sees (the check is repeated where rows are dropped)', async () => {
      const { c } = await seed()
      const backend = store.backend as unknown as { expireCheckpoints: (ids: readonly string[], time: number) => Promise<Array<{ rows: number; bytes: number }>> }
      const expire = backend.expireCheckpoints.bind(store.backend)
      backend.expireCheckpoints = async (ids, time) => {
        // another process forks s1 between the retention pass's choice and its drop
        if (ids.includes(c('s1', 1))) await store.registerSession({ sessionId: 'late-fork', parentSessionId: 's1', forkSeq: 25 })
        return expire(ids, time)
      }
      await store.gc({ workspaceBytes: 0 })
      backend.expireCheckpoints = expire
      const seen = await store.read({ sessionId: 'late-fork' }, { limit: 100 })
      expect(seen.filter(row => row.seq < 25 && row.expiredAt !== null).map(row => row.seq)).toEqual([])
      expect((await store.read({ sessionId: 's2' })).every(row => row.expiredAt !== null)).toBe(true)
    })

    it('drops by age and by workspace budget, oldest first across sessions; never the live surface', async () => {
      const { c } = await seed()
      const aged = await store.gc({ maxAgeMs: 30 * HOUR, now: t0 + 50 * HOUR })
      expect(aged.expired.map(entry => [entry.checkpointId, entry.reason])).toEqual([[c('s1', 1), 'age'], [c('s2', 1), 'age']])
      // a workspace budget of nothing drops every checkpoint left, and says the live rows are still over it
      const squeezed = await store.gc({ workspaceBytes: 0 })
      expect(squeezed.expired.map(entry => entry.checkpointId)).toEqual([c('s1', 2)])
      expect(squeezed.overBudget).toEqual([expect.objectContaining({ scope: 'workspace', id: '/repo', budget: 0 })])
      const live = await store.read({ sessionId: 's1' }, { fromSeq: 21, limit: 100 })
      expect(live.length).toBe(10)
      expect(live.every(row => row.expiredAt === null && row.text.includes(`key${row.seq}z`))).toBe(true)
      expect((await store.stats()).expired).toBe(30)
    })

    it('never drops a parent row that a fork still sees, whichever session compacted it', async () => {
      await store.registerSession({ sessionId: 'p', workspace: '/repo' })
      await store.append(Array.from({ length: 20 }, (_, index) => message('p', index + 1, `parent row ${index + 1}`, { time: t0 + index })))
      await store.registerSession({ sessionId: 'c', parentSessionId: 'p', forkSeq: 15, workspace: '/repo' })
      const checkpoint = async (session: string, n: number, seqs: number[]): Promise<void> => {
        const recorded = await store.recordCheckpoint({ checkpointId: `${sessionTag(session)}.c${n}`, sessionId: session, engine: 'shadow-context', status: 'committed', shadowedSeqs: seqs, createdAt: t0 })
        await store.ingest([{ op: 'checkpoint', checkpoint: recorded, elide: true }])
      }
      await checkpoint('c', 1, [1, 2, 3, 4, 5]) // the fork compacts inherited rows
      await checkpoint('p', 1, [6, 7, 8, 9, 10]) // the parent compacts rows the fork still shows
      await checkpoint('p', 2, [15, 16, 17]) // past the fork point: only the parent sees these
      const report = await store.gc({ maxAgeMs: 0, now: t0 + 100 * HOUR })
      expect(report.expired.map(entry => entry.checkpointId)).toEqual([`${sessionTag('p')}.c2`])
      const rows = await store.read({ sessionId: 'p' }, { limit: 100 })
      expect(rows.filter(row => row.expiredAt !== null).map(row => row.seq)).toEqual([15, 16, 17])
      // and the write-ahead check of either session still vouches only for what is really there
      expect((await store.confirm('c', rows.slice(0, 3).map(row => ({ seq: row.seq, hash: row.hash })))).missing).toEqual([])
      expect((await store.confirm('p', rows.filter(row => row.seq >= 15 && row.seq <= 17).map(row => ({ seq: row.seq, hash: row.hash })))).missing).toEqual([15, 16, 17])
    })

    it('rejects a bad policy and changes nothing', async () => {
      await seed()
      const before = await store.stats()
      for (const policy of [{}, { sessionBytes: -1 }, { workspaceBytes: 1.5 }, { maxAgeMs: 'old' }, null]) {
        await expect(store.gc(policy as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      }
      expect(await store.stats()).toEqual(before)
    })
  })

})

describe('ShadowStore on SQLite files', () => {
  it('creates its folder 0700 and file 0600, and keeps them private on reopen', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'nested', 'shadow.db')
    let store = await ShadowStore.open(file)
    expect(statSync(join(dir.path, 'nested')).mode & 0o777).toBe(0o700)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    await store.append([message('s1', 4, 'hello')])
    await store.close()
    chmodSync(file, 0o644)
    store = await ShadowStore.open(file)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    await store.close()
    dir.cleanup()
  })

  it('refuses a file that is not a database', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'shadow.db')
    writeFileSync(file, 'this is not sqlite at all, just text'.repeat(200))
    await expect(ShadowStore.open(file)).rejects.toMatchObject({ code: 'CORRUPT' })
    dir.cleanup()
  })

  it('refuses a foreign SQLite database and a newer schema', async () => {
    const dir = tempDir()
    const foreign = join(dir.path, 'foreign.db')
    const db = new DatabaseSync(foreign)
    db.exec('CREATE TABLE stuff (x)')
    db.close()
    await expect(ShadowStore.open(foreign)).rejects.toMatchObject({ code: 'CORRUPT' })
    const newer = join(dir.path, 'newer.db')
    const store = await ShadowStore.open(newer)
    await store.close()
    const raw = new DatabaseSync(newer)
    raw.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    raw.close()
    await expect(ShadowStore.open(newer)).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' })
    dir.cleanup()
  })

  it('migrates a schema v1 store in place, keeping every row searchable and every call paired', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'v1.db')
    const raw = new DatabaseSync(file)
    raw.exec(MIGRATIONS[0]!.sql)
    // analyzer v0: the upgraded store rebuilds its indexes from the stored text
    raw.exec("INSERT INTO meta(key, value) VALUES ('schema_version', '1'), ('analyzer_version', '0')")
    raw.exec("INSERT INTO sessions(session_id, tag, message_count, last_seq) VALUES ('s1', 'abcdef', 3, 3)")
    const insert = raw.prepare('INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, tool_name, call_id, time, tokens, hash, event_json, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)')
    insert.run('s1', 1, 'abcdef.1', 'assistant/message', 'assistant', 'model', 'grep read_file', 'c1 c2', 1, 'h1', '{}', Buffer.from('grep for retryBudget and read the config'))
    insert.run('s1', 2, 'abcdef.2', 'tool/result', 'tool', 'tool', 'grep', 'c1', 2, 'h2', '{}', Buffer.from('src/gateway.ts:88 limit = 7'))
    insert.run('s1', 3, 'abcdef.3', 'tool/result', 'tool', 'tool', 'read_file', 'c2', 3, 'h3', '{}', Buffer.from('timeout: 30s'))
    raw.close()
    const upgraded = await ShadowStore.open(file)
    expect((await upgraded.stats()).schemaVersion).toBe(SCHEMA_VERSION)
    expect((await upgraded.read({ sessionId: 's1' })).map(row => [row.seq, row.expiredAt])).toEqual([[1, null], [2, null], [3, null]])
    // both results of the two-call message find their call
    const hits = (await upgraded.search('retryBudget limit', { sessionId: 's1' })).hits
    expect(hits[0]!.message.seq).toBe(2)
    expect(hits[0]!.call?.seq).toBe(1)
    expect((await upgraded.search('timeout', { sessionId: 's1' })).hits[0]!.call?.seq).toBe(1)
    await upgraded.append([message('s1', 4, 'written after the upgrade')])
    expect((await upgraded.search('upgrade', { sessionId: 's1' })).hits).toHaveLength(1)
    await upgraded.close()
    dir.cleanup()
  })

  it('refuses a read-only open of an older schema with a typed error that says how to upgrade', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'old.db')
    const raw = new DatabaseSync(file)
    raw.exec(MIGRATIONS[0]!.sql)
    raw.exec("INSERT INTO meta(key, value) VALUES ('schema_version', '1'), ('analyzer_version', '1')")
    raw.close()
    await expect(ShadowStore.open(file, { readOnly: true })).rejects.toMatchObject({ code: 'SCHEMA_TOO_OLD' })
    await (await ShadowStore.open(file)).close()
    const upgraded = await ShadowStore.open(file, { readOnly: true })
    expect((await upgraded.stats()).schemaVersion).toBe(SCHEMA_VERSION)
    await upgraded.close()
    dir.cleanup()
  })

  it('fails a write cleanly when the disk is full and keeps what was stored', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'full.db')
    const store = await ShadowStore.open(file)
    await store.append([message('s1', 1, 'small')])
    await store.close()
    const tight = await ShadowStore.open(file, { maxBytes: 160 * 1024 })
    const error = await tight.append([message('s1', 2, 'y'.repeat(1_000_000))]).then(() => undefined, (failure: unknown) => failure)
    expect(error).toBeInstanceOf(ShadowStoreError)
    expect((error as ShadowStoreError).code).toBe('FULL')
    expect((await tight.read({ sessionId: 's1' })).map(row => row.seq)).toEqual([1])
    await tight.close()
    dir.cleanup()
  })
})
