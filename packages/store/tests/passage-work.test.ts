/**
 * A candidate's scan costs work bounded by its length whatever its characters: 256 KB of short
 * non-ASCII tokens, emoji, kana or one-letter-prefix tokens must not cost a normalization or a
 * regex test per character (a search reads ~100 such candidates: that was seconds). Work is
 * counted, not timed; every crafted text scans exactly as the exhaustive token walk does.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { scanTerms } from '../src/search/passage.ts'

const LENGTH = 200_000
const fill = (unit: string): string => `needle ${unit.repeat(Math.ceil(LENGTH / unit.length)).slice(0, LENGTH)} needles`

const CRAFTED: Record<string, string> = {
  'short accented tokens': fill('é '),
  'emoji': fill('😀'),
  'hiragana': fill('あ'),
  'one-letter-prefix tokens': fill('ab '),
  'letters between CJK ideographs': fill('中a'),
  'lone surrogates': fill('\ud800a'),
  'zero-width spaces': fill('a\u200b'),
  'one dotted capital I token': fill('İ'),
  'combining marks': fill('a\u0301'),
  'Kelvin signs': fill('\u212aelvin '),
}
const TERMS = [['needl'], ['needl', 'a', 'ab'], ['needl', 'kelvin', 'i']]

describe('scan work on crafted 200 KB texts', () => {
  afterEach(() => vi.restoreAllMocks())

  it.each(Object.keys(CRAFTED))('scans %s as the exhaustive walk does', name => {
    const text = CRAFTED[name]!
    for (const terms of TERMS) expect(scanTerms(text, terms)).toEqual(scanTerms(text, terms, undefined, 'exhaustive'))
  })

  it('folds a repeated non-ASCII token head once, not once per token', () => {
    const text = CRAFTED['short accented tokens']!
    scanTerms(text, ['warmup'])
    const normalize = vi.spyOn(String.prototype, 'normalize')
    const scan = scanTerms(text, ['needl'])
    expect(scan.covered).toEqual([true])
    // 100,000 tokens 'é': it was two normalizations each
    expect(normalize.mock.calls.length).toBeLessThan(100)
  })

  it.each(['emoji', 'hiragana'])('tests a repeated %s character with a regex a few times, not per character', name => {
    const text = CRAFTED[name]!
    scanTerms(text, ['warmup'])
    const test = vi.spyOn(RegExp.prototype, 'test')
    const exec = vi.spyOn(RegExp.prototype, 'exec')
    const scan = scanTerms(text, ['needl'])
    expect(scan.covered).toEqual([true])
    // 200,000 code units: it was one exec and one test each
    expect(test.mock.calls.length + exec.mock.calls.length).toBeLessThan(2_000)
  })
})
