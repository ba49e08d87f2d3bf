import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { bridgeTerms, glossary } from '../src/search/glossary.ts'
import { GLOSSARY_TEXT } from '../src/search/glossary-data.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

describe('en↔zh glossary', () => {
  it('is a few hundred well-formed pairs, Chinese sides of two characters or more', () => {
    const lines = GLOSSARY_TEXT.split('\n').filter(line => line.trim().length > 0)
    expect(lines.length).toBeGreaterThanOrEqual(300)
    for (const line of lines) expect(line, line).toMatch(/^[a-z]+\|[\p{Script=Han}]{2,}(?:, [\p{Script=Han}]{2,})*$/u)
    expect(glossary().toZh.get('databas')).toEqual(['数据库'])
  })

  it('bridges English words to Chinese and Chinese words to English, longest Chinese word first', () => {
    expect(bridgeTerms(['databases', 'timeout'], ['databases', 'timeout']).map(bridge => bridge.translation)).toEqual(['数据库', '超时'])
    const zh = bridgeTerms(['数据库', '数据', '据库'], ['数据库'])
    expect(zh.map(bridge => bridge.translation)).toEqual(['database'])
    expect(zh[0]).toMatchObject({ index: 'database', scan: 'databas' })
    // a three-character word is matched as its bigrams in the index, as a substring in text
    expect(bridgeTerms(['database'], ['database'])[0]).toMatchObject({ index: '数据 据库', scan: '数据库' })
    // said in both languages already: nothing to bridge
    expect(bridgeTerms(['database', '数据库'], ['database', '数据库'])).toEqual([])
  })
})

describe.each(TARGETS)('cross-lingual search on $name', target => {
  let store: ShadowStore
  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    await store.append([
      message('s', 1, '我们把数据库连接超时改成了 45 秒'),
      message('s', 2, 'the build is green again'),
      message('s', 3, 'lunch at noon'),
      message('s', 4, 'deploy 之前先跑一遍测试'),
    ])
    await store.append([
      message('both', 1, '数据库连接超时是 30 秒'),
      message('both', 2, 'the database connection timeout is 30 seconds'),
    ])
  })
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('an English question finds the Chinese message through the glossary', async () => {
    const result = await store.search('database connection timeout', { sessionId: 's' })
    expect(result.hits[0]?.message.seq).toBe(1)
    expect(result.hits[0]?.snippet).toContain('**数据库连接超时**')
    const byTerm = Object.fromEntries(result.terms.map(term => [term.term, term]))
    // no message says "database", one says 数据库: reported as such, and the hit counts
    expect(byTerm['database']).toMatchObject({ inScope: 0, inHits: 1, translations: ['数据库'] })
  })

  it('a Chinese question finds the English message', async () => {
    const result = await store.search('构建', { sessionId: 's' })
    expect(result.hits.map(hit => hit.message.seq)).toEqual([2])
  })

  it('the message in the question\'s own language ranks above its translation', async () => {
    const english = await store.search('database connection timeout', { sessionId: 'both' })
    expect(english.hits.map(hit => hit.message.seq)).toEqual([2, 1])
    const chinese = await store.search('数据库连接超时', { sessionId: 'both' })
    expect(chinese.hits.map(hit => hit.message.seq)).toEqual([1, 2])
  })
})
