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
