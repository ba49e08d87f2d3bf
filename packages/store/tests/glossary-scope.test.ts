import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

describe.each(TARGETS)('glossary translations stay within the searcher\'s lineage on $name', target => {
  let store: ShadowStore
  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    await store.append([message('gp', 1, 'the build is green again'), message('gp', 2, 'lunch at noon')])
    await store.registerSession({ sessionId: 'gc', parentSessionId: 'gp', forkSeq: 3 })
    await store.append([message('gc', 3, 'the deploy went fine')])
    // said in the parent after the fork: the fork must not learn of it
    await store.append([message('gp', 3, '数据库连接超时是 30 秒')])
  })
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('a fork is not told that its parent, after the fork, said a word in the other language', async () => {
    const result = await store.search('database timeout deploy', { sessionId: 'gc' })
    expect(result.hits.map(hit => [hit.message.sessionId, hit.message.seq])).toEqual([['gc', 3]])
    for (const term of result.terms) expect(term.translations, term.term).toBeUndefined()
  })

  it('the parent itself is told', async () => {
    const result = await store.search('database timeout', { sessionId: 'gp' })
    expect(result.terms.find(term => term.term === 'database')?.translations).toEqual(['数据库'])
  })
})

describe.each(TARGETS)('a fork\'s term report counts only the rows it sees on $name', target => {
  let store: ShadowStore
  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    await store.append([message('tp', 1, 'we ship on friday'), message('tp', 2, 'the cache is warm')])
    await store.registerSession({ sessionId: 'tc', parentSessionId: 'tp', forkSeq: 3 })
    await store.append([message('tc', 3, 'the cache needs a flush'), message('tc', 4, 'flush it nightly')])
    // said in the parent after the fork, more often than a small count's check would look at
    await store.append([3, 4, 5, 6, 7, 8].map(seq => message('tp', seq, `the zeppelin report, part ${seq}`)))
    await store.append([9, 10, 11, 12, 13].map(seq => message('tp', seq, `one more cache entry ${seq}`)))
  })
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('a word its parent said only after the fork is not in the fork\'s scope', async () => {
    const result = await store.search('zeppelin cache', { sessionId: 'tc' })
    expect(result.terms.find(term => term.term === 'zeppelin')).toMatchObject({ inScope: 0, inHits: 0, distinctive: true })
  })

  it('a word both said counts the fork\'s own rows and the parent\'s before the fork', async () => {
    const result = await store.search('zeppelin cache', { sessionId: 'tc' })
    expect(result.terms.find(term => term.term === 'cache')?.inScope).toBe(2)
  })

  it('the parent sees its own words', async () => {
    const result = await store.search('zeppelin cache', { sessionId: 'tp' })
    expect(result.terms.find(term => term.term === 'zeppelin')?.inScope).toBe(6)
    expect(result.terms.find(term => term.term === 'cache')?.inScope).toBe(6)
  })
})
