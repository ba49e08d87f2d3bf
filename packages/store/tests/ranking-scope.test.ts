import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bareValue, scanTerms, ShadowStore, valueHistory, bestStatement, type SearchResult } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

let dir: ReturnType<typeof tempDir>
let store: ShadowStore

beforeEach(async () => {
  dir = tempDir('shadow-scope-')
  store = await ShadowStore.open(join(dir.path, 'shadow.db'))
})

afterEach(async () => {
  await store.close()
  dir.cleanup()
})

const order = (result: SearchResult): Array<[number, number]> => result.hits.map(hit => [hit.message.seq, Number(hit.score.toFixed(9))])

describe('ranking statistics come from the search scope', () => {
  it('one session\'s order and scores do not change when another session writes the same words', async () => {
    const words = ['cache', 'timeout', 'retry', 'pool', 'index', 'deploy']
    const text = (seed: number): string => Array.from({ length: 6 }, (_, index) => words[(seed * 7 + index * 3) % words.length]).join(' ')
    await store.append(Array.from({ length: 40 }, (_, seq) => message('mine', seq + 1, `${text(seq)} note ${seq}`)))
    const queries = ['cache timeout', 'retry pool index', 'deploy note']
    const before = await Promise.all(queries.map(query => store.search(query, { sessionId: 'mine', limit: 15 })))
    // another session floods the store with the same words, in a different mix
    await store.append(Array.from({ length: 400 }, (_, seq) => message('other', seq + 1, `${words[seq % 2]} ${words[seq % 2]} unrelated ${seq}`)))
    const after = await Promise.all(queries.map(query => store.search(query, { sessionId: 'mine', limit: 15 })))
    expect(after.map(order)).toEqual(before.map(order))
    expect(after.map(result => result.terms)).toEqual(before.map(result => result.terms))
  })

  it('another session\'s text does not reorder this session (the side channel of store-wide statistics)', async () => {
    await store.append([message('mine', 1, 'alpha beta are set'), message('mine', 2, 'alpha gamma are set')])
    const before = (await store.search('alpha beta gamma', { sessionId: 'mine' })).hits.map(hit => hit.message.seq)
    // another session makes "beta" common store-wide; in this session it is as rare as before
    await store.append(Array.from({ length: 300 }, (_, seq) => message('other', seq + 1, `beta ray ${seq}`)))
    const after = (await store.search('alpha beta gamma', { sessionId: 'mine' })).hits.map(hit => hit.message.seq)
    expect(after).toEqual(before)
  })

  it('reports, per query word, whether the scope has it and whether the hits do', async () => {
    await store.append([message('mine', 1, 'the pool size is 20'), message('mine', 2, 'pool warmup is done')])
    await store.append([message('other', 1, 'terraform plan is clean')])
    const result = await store.search('terraform pool size', { sessionId: 'mine' })
    const byTerm = Object.fromEntries(result.terms.map(term => [term.term, term]))
    expect(byTerm['terraform']).toMatchObject({ inScope: 0, inHits: 0, distinctive: true })
    expect(byTerm['pool']).toMatchObject({ inScope: 2, inHits: 2 })
    expect(byTerm['size']).toMatchObject({ inScope: 1, inHits: 1 })
  })
})

describe('value statements', () => {
  it('finds a value near the query words, and a bare reply\'s value', () => {
    const terms = ['request', 'timeout']
    const text = 'We talked about many things. Set request_timeout to 30s for the gateway; the retry count stays 3.'
    const statement = bestStatement(text, scanTerms(text, terms), () => 1)
    expect(statement?.value).toBe('30s')
    expect([...statement!.key].toSorted()).toEqual([0, 1])
    expect(bareValue('Make it 45.')).toBe('45')
    expect(bareValue('改成 90秒 吧')).toBe('90s')
    expect(bareValue('version 1.2.3 and 4 more')).toBeUndefined()
  })

  it('builds a history only when the statements share a key and differ in value', () => {
    const key = new Set([0])
    const history = valueHistory([
      { item: 'a', time: 3, statement: { value: '45s', at: 0, key } },
      { item: 'b', time: 1, statement: { value: '30s', at: 0, key } },
      { item: 'c', time: 2, statement: undefined },
    ], () => 1)
    expect(history?.statements.map(statement => statement.item)).toEqual(['b', 'a'])
    expect(valueHistory([
      { item: 'a', time: 3, statement: { value: '30s', at: 0, key } },
      { item: 'b', time: 1, statement: { value: '30s', at: 0, key } },
    ], () => 1)).toBeUndefined()
  })
})
