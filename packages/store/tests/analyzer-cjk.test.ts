/**
 * The words view's CJK part made in bulk (analyzer.ts): the dictionary words of a text's CJK runs
 * from one pass of the segmenter, long runs' bigrams written into one buffer, and no dictionary
 * words past MAX_DICTIONARY_CHARS. Below the cap the view is the run-by-run construction's, on
 * generated mixed-script texts; past it a word is still found by its bigrams, on both backends.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { camelParts, camelWords, cjkBigrams, cjkBigramText, cjkWords, cjkWordsOfRuns, indexViews, MAX_DICTIONARY_CHARS, MAX_INDEXED_CHARS, withoutBoilerplate } from '../src/analyzer.ts'
import { ShadowStore } from '../src/index.ts'
import { fold, RUN_CHARS } from '../src/scripts.ts'
import { generatedText, pointsOf, random } from './generated-text.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

const CJK_RUN = new RegExp(`[${RUN_CHARS}]+`, 'gv')
const PIECES = ['数据库', '迁移', '连接池', '耗尽', '服务器', '的', '了', '和', '是', 'データベース', 'の', 'ひらがな', 'カタカナー', '한국어', '서버', '々', 'ー', '𠀀', '𠀁𠀂', '你好', '中华人民共和国']

/** A CJK run of 1-40 pieces, or of random characters of the CJK blocks (astral Han included). */
function cjkRun(next: () => number): string {
  if (next() < 0.3) {
    const char = pointsOf([[0x3040, 0x30ff], [0x4e00, 0x4fff], [0xac00, 0xacff], [0x20000, 0x2003f]], next)
    return Array.from({ length: 1 + Math.floor(next() * 12) }, char).join('')
  }
  return Array.from({ length: 1 + Math.floor(next() * 40) }, () => PIECES[Math.floor(next() * PIECES.length)]!).join('')
}

/** The words view as it was made run by run (analyzer.ts before the bulk construction), for texts below the cap. */
function runByRun(text: string): string {
  const clean = fold(withoutBoilerplate(text)).replace(/\p{Cc}/gu, ' ')
  const extra: string[] = []
  for (const match of clean.matchAll(/\b[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b/g)) extra.push(camelParts(match[0]).join(' '))
  const words = clean.replace(CJK_RUN, run => ` ${[...cjkWords(run), ...cjkBigrams(run)].join(' ')} `)
  return extra.length === 0 ? words : `${words}\n${extra.join(' ')}`
}

describe('CJK words view in bulk', () => {
  it('segments runs together into the words each run has alone', () => {
    const next = random(41)
    let words = 0
    for (let batch = 0; batch < 60; batch += 1) {
      const runs = Array.from({ length: 1 + Math.floor(next() * 80) }, () => cjkRun(next))
      const together = cjkWordsOfRuns(runs)
      expect(JSON.stringify(together) === JSON.stringify(runs.map(run => cjkWords(run).join(' '))), runs.join(' ')).toBe(true)
      words += together.join(' ').split(' ').length
    }
    expect(words).toBeGreaterThan(10_000)
    expect(cjkWordsOfRuns([])).toEqual([])
  })

  it('writes a run\'s bigrams as the gram list joined, for BMP and astral runs of every length', () => {
    const next = random(43)
    for (let length = 1; length < 300; length += 1) {
      const bmp = Array.from({ length }, () => PIECES[Math.floor(next() * 5)]![0]!).join('')
      expect(cjkBigramText(bmp) === cjkBigrams(bmp).join(' '), `bmp ${length}`).toBe(true)
      const astral = `${bmp.slice(0, length >> 1)}𠀁${bmp.slice(length >> 1)}`
      expect(cjkBigramText(astral) === cjkBigrams(astral).join(' '), `astral ${length}`).toBe(true)
    }
    expect(cjkBigramText('的')).toBe('')
    // all astral, and lone surrogates ([...run] takes each as a character)
    for (const run of ['𠀁'.repeat(100), `${'中'.repeat(70)}\ud800${'文'.repeat(10)}\udc00`, `\ud800${'中'.repeat(80)}`, '𠀁中'.repeat(50)]) {
      expect(cjkBigramText(run) === cjkBigrams(run).join(' ')).toBe(true)
    }
  })

  it('makes the run-by-run words view for texts below the cap (generated mixed scripts, camelCase, tool calls)', () => {
    const next = random(47)
    let cjk = 0
    for (let index = 0; index < 1_500; index += 1) {
      const parts: string[] = []
      for (let piece = 0; piece < 1 + Math.floor(next() * 8); piece += 1) parts.push(next() < 0.5 ? generatedText(next) : cjkRun(next), next() < 0.3 ? '，' : ' ')
      const text = parts.join('')
      if (CJK_RUN.test(text)) cjk += 1
      CJK_RUN.lastIndex = 0
      expect(indexViews(text).words === runByRun(text), text).toBe(true)
    }
    expect(cjk).toBeGreaterThan(1_000)
  })

  it('calls the segmenter once for a text of many runs, over no more than the cap\'s characters', () => {
    const lengths: number[] = []
    const original = Intl.Segmenter.prototype.segment
    Intl.Segmenter.prototype.segment = function (this: Intl.Segmenter, input: string) {
      lengths.push(input.length)
      return original.call(this, input)
    }
    try {
      // 200k runs of Korean words (run by run: 200k calls, 13 s for 2M characters)
      indexViews('한국어 서버 '.repeat(100_000))
    } finally {
      Intl.Segmenter.prototype.segment = original
    }
    expect(lengths.length).toBe(1)
    // the cap's characters and a space between two runs
    expect(lengths[0]!).toBeLessThanOrEqual(2 * MAX_DICTIONARY_CHARS)
    expect(lengths[0]!).toBeGreaterThan(MAX_DICTIONARY_CHARS)
  })

  it('segments no dictionary word past the cap: a word there is indexed as its bigrams', () => {
    const filler = '数据迁移完成，'.repeat(Math.ceil(MAX_DICTIONARY_CHARS / 6) + 10)
    const before = indexViews(`中华人民共和国成立。${filler}`).words
    const after = indexViews(`${filler}中华人民共和国成立。`).words
    // not vacuous: within the cap the segmenter makes the three-character word (bigrams are two)
    expect(before.includes(' 共和国 ')).toBe(true)
    expect(after.includes(' 共和国 ')).toBe(false)
    for (const gram of ['共和', '和国', '国成']) expect(after.includes(` ${gram} `), gram).toBe(true)
    // one run across the cap, astral characters at its edge: cut between characters, never inside a pair
    const astral = indexViews(`中${'𠀁'.repeat(MAX_DICTIONARY_CHARS)}`).words
    // (in a u-mode class only an unpaired surrogate matches)
    expect(/[\ud800-\udfff]/u.test(astral)).toBe(false)
    expect(astral.includes('𠀁𠀁')).toBe(true)
  })
})

describe.each(TARGETS)('a CJK word past the dictionary cap on $name', target => {
  beforeAll(async () => {
    await target.setup()
  })
  afterAll(async () => {
    await target.teardown()
  })

  it('is found by its bigrams, in the session and store-wide', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      const filler = '数据迁移完成，'.repeat(Math.ceil(MAX_DICTIONARY_CHARS / 6) + 10)
      await store.append([message('cap', 1, 'nothing here'), message('cap', 2, `${filler}中华人民共和国成立。`), message('cap', 3, '数据迁移完成')])
      for (const options of [{ sessionId: 'cap' }, { sessionId: 'cap', allSessions: true }]) {
        const result = await store.search('共和国', options)
        expect(result.hits.map(hit => hit.message.seq), JSON.stringify(options)).toContain(2)
      }
    } finally {
      await store.close()
    }
  })
})

describe('tool-call rendering blanked', () => {
  // the regex it replaces: an opening whose line closes a bracket after it
  const reference = (text: string): string => text.replace(/\[tool call (?=[^\]\n]*\])/g, match => ' '.repeat(match.length))

  it('blanks what the lookahead regex blanks, on generated texts of openings, brackets and line breaks', () => {
    const next = random(53)
    const pieces = ['[tool call ', '[tool call shell] {"cmd":"ls"}', ']', '\n', 'x', ' ', '[', '[tool', 'call ', '数据', '[tool call [tool call ']
    let blanked = 0
    for (let index = 0; index < 5_000; index += 1) {
      const text = Array.from({ length: Math.floor(next() * 30) }, () => pieces[Math.floor(next() * pieces.length)]!).join('')
      const expected = reference(text)
      expect(withoutBoilerplate(text) === expected, JSON.stringify(text)).toBe(true)
      if (expected !== text) blanked += 1
    }
    expect(blanked).toBeGreaterThan(1_000)
  })

  it('blanks in one pass: no regex, at most three searches per opening (openings without a bracket)', () => {
    // 200k characters of openings, no bracket: the lookahead regex scanned to the end for each (3.8 s per append, 7 s per search)
    const text = '[tool call '.repeat(20_000) + ']'
    const indexOf = vi.spyOn(String.prototype, 'indexOf')
    const regex = [vi.spyOn(RegExp.prototype, 'exec'), vi.spyOn(RegExp.prototype, 'test'), vi.spyOn(RegExp.prototype, Symbol.replace)]
    const out = withoutBoilerplate(text)
    const searches = indexOf.mock.calls.length
    const regexCalls = regex.reduce((sum, spy) => sum + spy.mock.calls.length, 0)
    vi.restoreAllMocks()
    expect(out === reference(text)).toBe(true)
    expect(regexCalls).toBe(0)
    expect(searches).toBeLessThan(3 * 20_000 + 10)
  })
})

describe('camelCase identifiers', () => {
  const CAMEL_WORD = /\b[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b/g

  it('are what the camelCase regex matched, on generated texts', () => {
    const next = random(59)
    const pieces = ['get', 'Pool', 'ID', 'x', 'X', '1', '_', ' ', '-', '.', 'é', 'Ⅷ', 'fooBar', 'HTTPServer', '9a', 'aB', '数据', '\n']
    let found = 0
    for (let index = 0; index < 5_000; index += 1) {
      const text = Array.from({ length: Math.floor(next() * 20) }, () => pieces[Math.floor(next() * pieces.length)]!).join('')
      const expected = [...text.matchAll(CAMEL_WORD)].map(match => match[0])
      expect(camelWords(text), JSON.stringify(text)).toEqual(expected)
      found += expected.length
    }
    expect(found).toBeGreaterThan(2_000)
  })

  it('are found in a run of millions of capitals (NFKC of 2M \'Ⅷ\': the regex overflowed the stack)', () => {
    expect(camelWords('VIII'.repeat(2_000_000))).toHaveLength(1)
    expect(indexViews('Ⅷ'.repeat(2_000_000)).words.length).toBeGreaterThan(2_000_000)
  })

  it('folds at most MAX_INDEXED_CHARS characters of a text NFKC lengthens (runs of millions overflowed the view\'s regexes)', () => {
    for (const char of ['㌀', 'ﷲ', 'ﷺ', '㍿']) {
      const views = indexViews(`deploy ${char.repeat(2_000_000)}`)
      expect(views.words.startsWith('deploy '), char).toBe(true)
      // the folded text cut at the cap (a CJK run's view is its words and bigrams: a few times its length)
      expect(views.words.length, char).toBeLessThan(8 * MAX_INDEXED_CHARS)
    }
    // a text NFKC does not lengthen is folded whole
    expect(indexViews('ｐｏｏｌ '.repeat(300_000)).words.length).toBe(1_500_000)
  })
})
