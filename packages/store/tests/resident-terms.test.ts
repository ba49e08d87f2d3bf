/**
 * The resident index counts what the search scan counts (resident/terms.ts): for every message
 * and query terms, the count a term's list holds for the message is the number of positions
 * `scanTerms` records for it, and the scan rebuilt from the stored tokens is `scanTerms`' own —
 * unless the message is flagged for a scan (an odd head, a lowercase of another length). Generated
 * texts: stemmed words, camelCase, punctuation, mixed scripts, CJK runs, tool-call rendering.
 */
import { describe, expect, it } from 'vitest'
import { scanTerms } from '../src/search/passage.ts'
import { coverageTerms } from '../src/search/ranking.ts'
import { SessionIndex } from '../src/resident/session-index.ts'
import { messageTerms } from '../src/resident/terms.ts'
import { mayPassCap, ScopeView } from '../src/resident/view.ts'
import type { ShadowMessage } from '../src/types.ts'
import { generatedText, GLUE, pointsOf, random, word } from './generated-text.ts'

const CJK_TEXT = ['数据库迁移', '连接池耗尽', '内存泄漏', '证书过期', '哈哈哈哈', '数据数据据', 'テストー', '々々', '한국어', '库迁移迁', '𠀀𠀁𠀀𠀁']
const NEAR = ['→', '…', ' — ', 'é', '\u0301', 'λ', 'ｐｏｏｌ', '\u212a', '²', 'ü', '\u00a0', '𝐀', 'ア', '〇', 'ー', 'ﬀ', 'ゲ', 'ayed', 'AYED', 'İ']

function row(seq: number, text: string): ShadowMessage {
  return {
    sessionId: 's', seq, shadowId: `t.${seq}`, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1,
    toolName: null, callId: null, time: 1_700_000_000_000 + seq, tokens: 1, hash: `h${seq}`, eventJson: '', text, elidedBy: null, expiredAt: null,
  }
}

/** Texts of every family: generated prose and code, mixed scripts, CJK runs, tool-call rendering. */
function corpus(seed: number, count: number): string[] {
  const next = random(seed)
  const char = pointsOf([[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x3000, 0x30ff], [0x4e00, 0x4e3f], [0xac00, 0xac3f], [0xff00, 0xff5e], [0x20000, 0x2003f]], next)
  const texts: string[] = []
  for (let index = 0; index < count; index += 1) {
    const family = index % 4
    if (family === 0) texts.push(generatedText(next))
    else {
      const parts: string[] = []
      for (let at = 0, length = 1 + Math.floor(next() * 30); at < length; at += 1) {
        const roll = next()
        const piece = family === 1 ? NEAR[Math.floor(next() * NEAR.length)]! : family === 2 ? CJK_TEXT[Math.floor(next() * CJK_TEXT.length)]! : Array.from({ length: 1 + Math.floor(next() * 3) }, char).join('')
        parts.push(roll < 0.3 ? piece + word(next) : roll < 0.6 ? word(next) + piece : roll < 0.8 ? piece : word(next), GLUE[Math.floor(next() * GLUE.length)]!)
      }
      if (next() < 0.1) parts.push('[tool call shell] {"cmd":"retry the pool"}')
      texts.push(parts.join(''))
    }
  }
  return texts
}

/** Query terms for a text: some of its own keys (Latin stems, CJK of 1-4 characters), some other words. */
function termsFor(text: string, next: () => number): string[] {
  const keys = [...messageTerms(text).counts.keys()].filter(key => !key.startsWith('\u0001'))
  const cjk = [...text.matchAll(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}ー々]{1,4}/gu)].map(match => match[0].toLowerCase())
  const picked = [
    ...keys.filter(() => next() < 0.3).slice(0, 4),
    ...cjk.filter(() => next() < 0.3).slice(0, 3),
    ...coverageTerms([word(next).replace(/[^\p{L}\p{N}]/gu, '').toLowerCase()]),
  ]
  return [...new Set(picked)].filter(term => term.length > 0)
}

describe('resident index counts', () => {
  it('holds, per message and term, the number of positions the scan records, and rebuilds its scan', () => {
    const texts = corpus(14, 4_000)
    const index = new SessionIndex('s', 't', 0)
    texts.forEach((text, seq) => index.append(row(seq, text), ''))
    const view = new ScopeView([{ index, belowSeq: Number.POSITIVE_INFINITY }])
    const next = random(99)
    let compared = 0
    let flagged = 0
    let covering = 0
    let recounted = 0
    let shiftedCovering = 0
    texts.forEach((text, doc) => {
      const terms = termsFor(text, next)
      if (terms.length === 0) return
      const scan = scanTerms(text, terms)
      const positions = terms.map((_, term) => scan.positions.filter(position => position.term === term).length)
      const odd = index.oddKeys(doc) ?? []
      const cjk = terms.some(term => /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(term))
      const shifted = text.toLowerCase().length !== text.length
      const counts = terms.map(term => {
        const list = view.holders(term)
        const at = list.gids.slice(0, list.length).indexOf(doc)
        return at < 0 ? 0 : list.counts[at]!
      })
      if (odd.some(key => terms.includes(key))) {
        flagged += 1
        return
      }
      compared += 1
      if (positions.some(count => count > 0)) covering += 1
      // the stored tokens give the scan itself, whatever the terms (a shifted lowercase's CJK terms held at no position, as the scan's)
      expect(index.scans(terms, stored => stored(doc)), `${JSON.stringify(text)} ${JSON.stringify(terms)}`).toEqual(scan)
      // the lists' counts are not the scan's past a cap, or for a CJK term of a shifted lowercase: the engine counts those again
      if ((cjk && shifted) || mayPassCap(counts, 0, terms.map(term => /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(term)))) {
        flagged += 1
        if (cjk && shifted && scan.covered.some(Boolean)) shiftedCovering += 1
        return
      }
      // the lists' counts do too, unless a term is the whole of a camelCase piece (the engine recounts from the tokens then)
      if (terms.length > 1 && terms.some((term, at) => index.camelWhole(term) && counts[at]! > 0)) {
        recounted += 1
        return
      }
      expect(counts, `${JSON.stringify(text)} ${JSON.stringify(terms)}`).toEqual(positions)
    })
    // not vacuous: most texts compared, many cover a term; the flags do fire (ayed, İ)
    expect(compared).toBeGreaterThan(3_000)
    expect(covering).toBeGreaterThan(1_500)
    expect(flagged).toBeGreaterThan(0)
    expect(recounted).toBeGreaterThan(0)
    expect(shiftedCovering).toBeGreaterThan(0)
  })

  it('flags a piece whose head is not its stem\'s and a text whose lowercase is longer', () => {
    const index = new SessionIndex('s', 't', 0)
    index.append(row(1, 'the AI stayed, ayed twice'), '')
    index.append(row(2, 'İstanbul 数据库'), '')
    expect(index.oddKeys(0)).toContain('ai')
    // the scan skips "ayed" for the term "ai" (its head "ay" is no term's): the index says so
    expect(scanTerms('the AI stayed, ayed twice', ['ai']).positions).toHaveLength(1)
    expect(messageTerms('the AI stayed, ayed twice').counts.get('ai')).toBe(2)
    expect(messageTerms('İstanbul 数据库').lowerShift).toBe(true)
  })

  it('counts a CJK pair as indexOf steps past each match, and longer terms in the text', () => {
    const index = new SessionIndex('s', 't', 0)
    const text = '哈哈哈哈哈 数据数据据 数据库数据库'
    index.append(row(1, text), '')
    const view = new ScopeView([{ index, belowSeq: Number.POSITIVE_INFINITY }])
    for (const term of ['哈哈', '哈', '数据', '据据', '数据库', '哈哈哈', '库数据']) {
      const scan = scanTerms(text, [term])
      const list = view.holders(term)
      expect(list.length === 0 ? 0 : list.counts[0], term).toBe(scan.positions.length)
    }
  })
})
