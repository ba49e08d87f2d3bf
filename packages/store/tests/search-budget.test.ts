/**
 * One search scans at most RANK_BUDGET_CHARS characters of its candidates per pass (budget.ts),
 * whatever their number and length; ordinary messages are scanned whole.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { RANK_BUDGET_CHARS, RANK_FLOOR_CHARS, scanCaps } from '../src/search/budget.ts'
import { RANK_TEXT_CHARS } from '../src/search/passage.ts'
import { message, tempDir } from './helpers.ts'

/** Characters of text the search scan (passage.ts scanTerms) has read, counted (every call passes through). */
const scanned = vi.hoisted(() => ({ chars: 0, calls: 0 }))
vi.mock('../src/search/passage.ts', async original => {
  const actual = await original<typeof import('../src/search/passage.ts')>()
  return { ...actual, scanTerms: (...args: Parameters<typeof actual.scanTerms>) => {
    scanned.chars += Math.min(args[0].length, args[2] ?? actual.RANK_TEXT_CHARS)
    scanned.calls += 1
    return actual.scanTerms(...args)
  } }
})

const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0)

describe('scanCaps: one budget shared by a pass over the candidates', () => {
  it('leaves every text whole (up to a scan\'s own cut) while they fit', () => {
    expect(scanCaps([10, 0, 300, 5_000])).toEqual([10, 0, 300, 5_000])
    expect(scanCaps([RANK_TEXT_CHARS * 2, 12])).toEqual([RANK_TEXT_CHARS, 12])
    expect(scanCaps([])).toEqual([])
  })

  it('past the budget, scans short texts whole and shares the rest equally among the long ones', () => {
    const caps = scanCaps([100, 900_000, 50, 900_000, 200_000], 1_000, undefined, 0)
    expect(sum(caps)).toBeLessThanOrEqual(1_000)
    expect(caps[0]).toBe(100)
    expect(caps[2]).toBe(50)
    // 850 left for three long texts: equal shares, to a character
    expect(caps[1]! + caps[3]! + caps[4]!).toBe(850)
    for (const at of [1, 3, 4]) expect(caps[at]).toBeGreaterThanOrEqual(283)
    for (const at of [1, 3, 4]) expect(caps[at]).toBeLessThanOrEqual(284)
  })

  it('never passes the budget, never gives a text more than it has, and spends the budget when the texts could take it', () => {
    let seed = 7
    const random = (): number => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647
    for (let round = 0; round < 500; round += 1) {
      const lengths = Array.from({ length: Math.floor(random() * 60) }, () => Math.floor(random() ** 3 * 3_000_000))
      const budget = Math.floor(random() * 2_000_000) + 1
      const floor = round % 2 === 0 ? 0 : Math.floor(random() * 50_000)
      const caps = scanCaps(lengths, budget, undefined, floor)
      const wanted = lengths.map(length => Math.min(length, RANK_TEXT_CHARS))
      expect(caps).toHaveLength(lengths.length)
      caps.forEach((cap, at) => {
        // never more than a text has, never less than the floor (or the whole text below it)
        expect(cap).toBeLessThanOrEqual(wanted[at]!)
        expect(cap).toBeGreaterThanOrEqual(Math.min(wanted[at]!, floor))
      })
      // within the budget, or within what the floor alone takes
      expect(sum(caps)).toBeLessThanOrEqual(Math.max(budget, sum(wanted.map(length => Math.min(length, floor)))))
      // rounding down loses less than one character per text
      if (sum(wanted) > budget && floor === 0) expect(sum(caps)).toBeGreaterThan(budget - lengths.length)
      if (sum(wanted) <= budget) expect(caps).toEqual(wanted)
      // a text that was cut got as much as any text longer than it (to a character of rounding)
      caps.forEach((cap, at) => {
        if (cap < wanted[at]!) caps.forEach((other, at2) => { if (wanted[at2]! >= wanted[at]!) expect(other).toBeGreaterThanOrEqual(cap - 1) })
      })
    }
  })
})

describe('scanCaps: the floor', () => {
  it('cuts no text of up to RANK_FLOOR_CHARS characters, however many share the budget', () => {
    // a search with limit 200 ranks ~1,200 candidates: an equal share was 1,666 characters each
    const caps = scanCaps(Array.from({ length: 1_200 }, (_, at) => (at === 0 ? 300_000 : 2_500)))
    expect(caps.slice(1).every(cap => cap === 2_500)).toBe(true)
    expect(caps[0]).toBe(RANK_FLOOR_CHARS)
    expect(scanCaps(Array.from({ length: 400 }, () => RANK_FLOOR_CHARS))).toEqual(Array.from({ length: 400 }, () => RANK_FLOOR_CHARS))
  })
})

describe('a search with a large limit over ordinary messages (review, 2026-12-06)', () => {
  const dir = tempDir()
  let store: ShadowStore
  const filler = (seq: number, chars: number): string => {
    const words: string[] = []
    for (let at = 0, length = 0; length < chars - 40; at += 1) {
      words.push(`w${seq}x${at}`)
      length += words.at(-1)!.length + 1
    }
    return words.join(' ')
  }
  beforeAll(async () => {
    store = await ShadowStore.open(join(dir.path, 'limit.db'))
    // the oldest message holds both words, its second at its end; 1,200 newer ones hold only the first
    const rows = [message('s1', 1, `alpha start ${filler(1, 2_500)} omega`)]
    for (let seq = 2; seq <= 1_201; seq += 1) rows.push(message('s1', seq, `alpha start ${filler(seq, 2_500)} alpha`))
    // and 250 tool outputs of 12,000 characters, each with both words, the second at its end
    for (let seq = 1; seq <= 250; seq += 1) rows.push(message('s2', seq, `kappa start ${filler(seq, 12_000)} sigma`))
    await store.append(rows)
  })
  afterAll(async () => {
    await store.close()
    dir.cleanup()
  })

  it('ranks first, with its passage where the words are, the one message holding every word', async () => {
    const result = await store.search('alpha omega', { sessionId: 's1', allSessions: true, limit: 200 })
    expect(result.hits[0]!.message.seq).toBe(1)
    expect(result.hits[0]!.message.sessionId).toBe('s1')
    // the passage shows the end, where omega is
    expect(result.hits[0]!.passage.end).toBeGreaterThan(result.hits[0]!.message.text.length - 100)
  })

  it('counts a word in every hit that holds it (terms[].inHits)', async () => {
    const result = await store.search('kappa sigma', { sessionId: 's2', allSessions: true, limit: 200 })
    expect(result.hits).toHaveLength(200)
    expect(result.terms.find(term => term.term === 'sigma')!.inHits).toBe(200)
  })
})

describe('a search over many long candidates', () => {
  const dir = tempDir()
  let store: ShadowStore
  beforeAll(async () => {
    store = await ShadowStore.open(join(dir.path, 'budget.db'))
    // forty 300,000-character outputs that all hold the query's words: every one is a candidate
    const long = (seq: number): string => `run ${seq}: ${'alpha beta gamma '.repeat(18_000)} done`
    for (let seq = 1; seq <= 40; seq += 1) await store.append([message('s1', seq, long(seq))])
    await store.append([message('s1', 41, 'alpha beta delta in one short line')])
  })
  afterAll(async () => {
    await store.close()
    dir.cleanup()
  })

  it.each([
    ['every session (index lists)', { sessionId: 's1', allSessions: true, limit: 10 }],
    ['a larger limit', { sessionId: 's1', allSessions: true, limit: 20 }],
  ] as const)('scans at most the budget per pass: %s', async (_name, options) => {
    scanned.chars = 0
    scanned.calls = 0
    const result = await store.search('alpha beta delta', options)
    // the short line holds every word: first
    expect(result.hits[0]!.message.seq).toBe(41)
    expect(result.hits.length).toBeGreaterThan(5)
    expect(scanned.calls).toBeGreaterThan(40)
    // three passes (candidates, pairs, hits), and each winner whose scan was cut scanned again for its
    // passage; unbudgeted, one search scanned 12.5M (limit 10) and 15.1M (limit 20) characters
    const limit = options.limit ?? 10
    expect(scanned.chars).toBeLessThanOrEqual(3 * RANK_BUDGET_CHARS + limit * RANK_TEXT_CHARS)
  })

  it('scans ordinary messages whole', async () => {
    await store.append([message('s2', 1, `short ${'words '.repeat(100)} epsilon`), message('s2', 2, 'epsilon here too')])
    scanned.chars = 0
    const result = await store.search('epsilon', { sessionId: 's2', allSessions: true })
    expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
    // each found text scanned whole at least once (its passage is where the word is, past the head)
    expect(scanned.chars).toBeGreaterThanOrEqual(`short ${'words '.repeat(100)} epsilon`.length + 'epsilon here too'.length)
    expect(result.hits.find(hit => hit.message.seq === 1)!.passage.start).toBeGreaterThan(0)
  })
})
