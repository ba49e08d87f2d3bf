/**
 * The resident index's one-pass build (resident/text-scan.ts: pieces found by a hash of their
 * chars, anchors and CJK runs read in the same pass, pre-tests before values and days, postings
 * and trigrams settled in batches) makes exactly the index the straightforward build makes (the
 * scan's own piece walk, analyzer.ts anchorView, every pattern run, every list appended as it
 * goes): every structure, compared whole, on generated corpora of every family the build treats
 * apart (ASCII, Latin with diacritics, NFKC-changing and case-changing letters, CJK runs, astral
 * and lone surrogates, controls, tool-call rendering, time words, values, texts past the pass's
 * anchor bound and the scan's cut), and on rows appended after lists were read.
 */
import { describe, expect, it } from 'vitest'
import { SessionIndex } from '../src/resident/session-index.ts'
import { MAX_POSITIONS, RANK_TEXT_CHARS, scanTerms } from '../src/search/passage.ts'
import type { ShadowMessage, ShadowRole } from '../src/types.ts'
import { generatedText, GLUE, pointsOf, random, word } from './generated-text.ts'
import { heap } from './helpers.ts'

const CJK = ['数据库迁移', '连接池耗尽', '昨天', '三十秒', '五分钟', '테스트', 'テストー', '々々', '库迁移迁', '哈哈哈哈', '𠀀𠀁𠀀𠀁', '月3日', '一二三']
/** Letters whose lowercase is longer, final sigma, NFKC-changing forms, marks, controls, lone surrogates. */
const ODD = ['İstanbul', 'ΑΣ', 'ΣΟΦΙΑ', 'ﬀ', '²', '\u212a', 'ｐｏｏｌ', 'e\u0301', 'Ä', 'ß', '\u00a0', '\u0000', '\u0085', '\ud800', '\udc00x', '𝐀𝐁', 'Ǆ', '→', '—', 'ª', 'é2026-01-05', 'éjan 5']
const ANCHORS = ['src/db/pool.ts:42:7', 'ECONNREFUSED', 'ERR_TIMEOUT', 'getPoolSize', 'v2.3.1', '127.0.0.1:5432', 'a.b', '__init__', '$ref', '-x-', 'C:\\tmp\\x', 'FOO', 'FOOD', 'Foo_Bar', 'node:internal/net.js', 'x1', '..a..b..', 'A-', '_a_', '数据库.ts', 'pool数据']
const TIMES = ['yesterday', 'Today', 'tomorrow', 'last night', '3 days ago', 'next week', 'on Monday', '2026-01-05', 'Jan 5', '5th of March', 'maybe', 'decode', '8080', 'day', '昨天', '后天', '3月5日']
const VALUES = ['30s', '45 ms', '1.5GB', '90%', '3 retries', '十秒', '五分钟', 'x86', 'v2', 'p99', '2x', '七个']
const ROLES: readonly ShadowRole[] = ['user', 'assistant', 'tool', 'system']

function row(seq: number, text: string, role: ShadowRole, callId: string | null, expired: boolean): ShadowMessage {
  return {
    sessionId: 's', seq, shadowId: `t.${seq}`, eventType: role === 'tool' ? 'tool/result' : role === 'assistant' ? 'assistant/message' : 'user/message', role, sourceKind: role === 'tool' ? 'tool' : 'user', turn: 1, step: 1,
    toolName: callId === null ? null : 'shell', callId, time: 1_767_225_600_000 + seq * 3_600_000, tokens: 1, hash: `h${seq}`, eventJson: '', text,
    elidedBy: null, expiredAt: expired ? 1 : null,
  }
}

/** Rows of every family, with calls, questions and short replies, and a few expired rows. */
function corpus(seed: number, count: number): ShadowMessage[] {
  const next = random(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!
  const char = pointsOf([[0x20, 0x7e], [0x00, 0x1f], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x3000, 0x30ff], [0x4e00, 0x4e3f], [0xac00, 0xac3f], [0xff00, 0xff5e], [0x1d400, 0x1d43f], [0x20000, 0x2003f]], next)
  const rows: ShadowMessage[] = []
  let call = 0
  for (let seq = 1; rows.length < count; seq += 1 + Math.floor(next() * 2)) {
    const family = Math.floor(next() * 6)
    let text: string
    if (family === 0) text = generatedText(next)
    else {
      const parts: string[] = []
      for (let at = 0, length = 1 + Math.floor(next() * 40); at < length; at += 1) {
        const source = family === 1 ? ODD : family === 2 ? CJK : family === 3 ? ANCHORS : family === 4 ? (next() < 0.5 ? TIMES : VALUES) : undefined
        const piece = source === undefined ? Array.from({ length: 1 + Math.floor(next() * 4) }, char).join('') : pick(source)
        const roll = next()
        parts.push(roll < 0.25 ? piece + word(next) : roll < 0.5 ? word(next) + piece : roll < 0.8 ? piece : word(next), pick(GLUE))
      }
      if (next() < 0.15) parts.push(`[tool call ${pick(['shell', 'grep'])}] {"cmd":"retry the pool"}`)
      if (next() < 0.1) parts.push('?')
      text = parts.join('')
    }
    const role = pick(ROLES)
    const calls = role === 'assistant' && next() < 0.3 ? `c${++call}${next() < 0.2 ? ` c${++call}` : ''}` : role === 'tool' && call > 0 ? `c${call - Math.floor(next() * 2)}` : null
    rows.push(row(seq, text, role, calls, next() < 0.02))
  }
  return rows
}

/** Every structure of an index (private fields read as data: the two builds must agree on all of them). */
function structures(index: SessionIndex): Record<string, unknown> {
  // reading the lists settles what the fast build defers
  index.postings('')
  index.markSubstring('zzz', new Uint8Array(index.size), 0, index.size)
  const fields = index as unknown as Record<string, unknown>
  const anchorFields = fields.anchors as Record<string, unknown>
  const termFields = fields.terms as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const name of ['ids', 'lists', 'bytes']) {
    expect(termFields, name).toHaveProperty(name)
    out[`terms ${name}`] = termFields[name]
  }
  for (const name of ['rows', 'odd', 'calls', 'days', 'held', 'events', 'lowers', 'tokens', 'values', 'camelWholes', 'tailCjk']) {
    expect(fields, name).toHaveProperty(name)
    out[name] = fields[name]
  }
  for (const name of ['anchors', 'docs', 'grams', 'held']) {
    expect(anchorFields, name).toHaveProperty(name)
    out[`anchor ${name}`] = anchorFields[name]
  }
  for (const name of ['seq', 'time', 'length', 'role', 'flags', 'callOf', 'resultOf', 'replyOf']) out[name] = Array.from((fields[name] as { view(): ArrayLike<number> }).view())
  return out
}

function built(rows: readonly ShadowMessage[], build: 'fast' | 'reference', readEvery = 0, tails: ReadonlyMap<number, string> = new Map()): SessionIndex {
  const index = new SessionIndex('s', 't', 0, build)
  rows.forEach((message, at) => {
    index.append(message, '', tails.get(message.seq))
    // lists read between appends: what is settled then must stay right as more rows come
    if (readEvery > 0 && at % readEvery === 0) {
      index.postings('pool')
      index.markSubstring('ool', new Uint8Array(index.size), 0, index.size)
    }
  })
  return index
}

describe('resident index build', () => {
  it('makes the straightforward build\'s index, structure by structure, on every family of text', () => {
    const rows = corpus(7, 3_000)
    const fast = structures(built(rows, 'fast'))
    const reference = structures(built(rows, 'reference'))
    // not vacuous: the families reach every path
    expect((reference['anchor anchors'] as string[]).length).toBeGreaterThan(1_000)
    expect((reference['anchor anchors'] as string[]).some(anchor => /[^\p{ASCII}]/u.test(anchor))).toBe(true)
    expect((reference.odd as Map<number, unknown>).size).toBeGreaterThan(0)
    expect((reference.days as Map<number, unknown>).size).toBeGreaterThan(0)
    expect((reference.values as unknown[]).filter(values => values !== undefined).length).toBeGreaterThan(100)
    expect((reference.flags as number[]).some(flags => (flags & 4) !== 0)).toBe(true)
    // NFKC-folded keys listed at a count of 0
    expect((reference['terms lists'] as Array<{ counts: number[] }>).some(list => list.counts.includes(0))).toBe(true)
    for (const name of Object.keys(reference)) expect(fast[name], name).toEqual(reference[name])
  })

  it('stays equal when lists are read between appends, and for texts past the anchor bound and the scan cut', () => {
    const next = random(3)
    const rows = corpus(11, 600)
    // long texts: anchors through anchorView (past the pass's bound), a sample cut at RANK_TEXT_CHARS
    const long = (length: number): string => {
      let text = ''
      while (text.length < length) text += `${generatedText(next)} src/db/pool.ts:${text.length} 数据库迁移 ΑΣ ${text.length % 7 === 0 ? 'yesterday ' : ''}`
      return text
    }
    const seq = rows.at(-1)!.seq
    rows.push(row(seq + 1, long(40_000), 'tool', null, false), row(seq + 2, long(RANK_TEXT_CHARS + 5_000), 'tool', null, false), row(seq + 3, `[tool call shell] ${long(70_000)}`, 'assistant', null, false))
    // the tails of cut texts (tail.ts textTail): keys listed at 0, anchors, CJK runs; one past a tail piece
    const tails = new Map([[seq + 1, `${long(20_000)} ｆｕｌｌ ${CJK.join(' ')} ${ODD.join(' ')} ${ANCHORS.join(' ')}`], [seq + 2, long(300_000)], [rows[5]!.seq, `${ANCHORS.join(' ')} 数据漂移`]])
    for (const readEvery of [1, 37]) {
      const fast = structures(built(rows, 'fast', readEvery, tails))
      const reference = structures(built(rows, 'reference', readEvery, tails))
      expect((reference.tailCjk as Map<number, string>).size).toBe(3)
      for (const name of Object.keys(reference)) expect(fast[name], `${name} (read every ${readEvery})`).toEqual(reference[name])
    }
  })

  it('stays equal when its build is over and rows come after (its tables released, its lists copied at their size)', () => {
    const rows = corpus(13, 2_000)
    const half = 1_000
    const reference = structures(built(rows, 'reference'))
    const index = new SessionIndex('s', 't', 0, 'fast')
    let next = 0
    for (; next < half; next += 1) index.append(rows[next]!, '')
    // the registry's calls: a whole build ends (its lists copied a slice at a time, rows may come
    // between two slices: a background build yields there), then deltas of a few rows each
    index.built()
    let steps = 0
    for (const step of index.fitLists(50)) {
      void step
      steps += 1
      if (steps % 3 !== 0) continue
      index.append(rows[next++]!, '')
      // and reads: what they settle (postings, anchors' trigrams) goes to the lists being copied
      index.postings('pool')
      index.markSubstring('ool', new Uint8Array(index.size), 0, index.size)
    }
    expect(steps).toBeGreaterThan(30)
    for (; next < rows.length; next += 1) {
      index.append(rows[next]!, '')
      if (next % 7 === 0) index.built()
    }
    const fast = structures(index)
    for (const name of Object.keys(reference)) expect(fast[name], name).toEqual(reference[name])
    // released: no piece table of the build's pieces is held, no page's buffer
    const fields = index as unknown as { pieceTable: { size: number }; terms: { pendingBytes: number } }
    index.built()
    expect(fields.pieceTable.size).toBe(0)
    expect(fields.terms.pendingBytes).toBeLessThanOrEqual(64 * 4)
    expect(index.buildingBytes).toBeLessThan(2_000)
  })

  it('keeps no buffer of the pass in an index: a session of a few messages holds tens of KB', () => {
    const rows = corpus(23, 5)
    built(rows, 'fast')
    const before = heap()
    const indexes = Array.from({ length: 200 }, () => built(rows, 'fast'))
    const each = (heap() - before) / indexes.length
    // each held ~420 KB of buffers and tables at their first sizes, token chunk included
    expect(each).toBeLessThan(100_000)
    expect(indexes.every(index => index.size === rows.length)).toBe(true)
  })

  it('counts what the scan finds from stored tokens, positions cap, camelCase wholes and shifted lowercases included, without making positions', () => {
    const rows = corpus(23, 800)
    const seq = rows.at(-1)!.seq
    // past the scan's position cap: a log's repeated words, camelCase wholes among their parts, CJK runs
    rows.push(row(seq + 1, 'foo bar baz getPoolSize pool '.repeat(2_000), 'tool', null, false), row(seq + 2, `${'数据库 迁移 pool '.repeat(3_000)} getPool`, 'tool', null, false), row(seq + 3, `${'foo '.repeat(5_000)}zebra ${'数据库'.repeat(10)}`, 'tool', null, false), row(seq + 4, `İstanbul pool 数据库 ${'数据 pool '.repeat(3_000)}`, 'user', null, false))
    const index = built(rows, 'fast')
    const termSets = [['pool'], ['foo', 'bar', 'baz', 'getpoolsiz', 'pool'], ['get', 'pool', 'size', 'getpoolsiz'], ['数据库', 'pool', '迁移'], ['retri', 'zeppelin', '数据'], ['ｐｏｏｌ', 'a.b', 'x1'], ['foo', 'zebra'], ['foo', 'zebra', '数据库']]
    let capped = 0
    let shifted = 0
    for (const terms of termSets) {
      const width = terms.length
      // the scan itself (a doc with an odd key among the terms is scanned by the engine, not counted; an expired one is no candidate)
      const regular = (doc: number): boolean => rows[doc]!.expiredAt === null && !(index.oddKeys(doc) ?? []).some(key => terms.includes(key))
      const expected = new Float64Array(rows.length * width)
      for (let doc = 0; doc < rows.length; doc += 1) {
        if (!regular(doc)) continue
        const found = scanTerms(rows[doc]!.text, terms)
        for (const position of found.positions) expected[doc * width + position.term]! += 1
        found.covered.forEach((covered, term) => {
          if (covered && expected[doc * width + term] === 0) expected[doc * width + term] = 0.5
        })
        if (found.positions.length >= MAX_POSITIONS) capped += 1
        if (found.covered.some(Boolean) && rows[doc]!.text.toLowerCase().length !== rows[doc]!.text.length && terms.some(term => /\p{Script=Han}/u.test(term))) shifted += 1
      }
      const counted = new Float64Array(rows.length * width)
      index.counts(terms, count => {
        for (let doc = 0; doc < rows.length; doc += 1) if (regular(doc)) count(doc, counted, doc * width)
      })
      expect(Array.from(counted), terms.join(' ')).toEqual(Array.from(expected))
      expect(expected.some(value => value > 0), terms.join(' ')).toBe(true)
    }
    expect(capped).toBeGreaterThan(2)
    expect(shifted).toBeGreaterThan(1)
  })

  it('answers what a search asks the same way', () => {
    const rows = corpus(19, 1_500)
    const fast = built(rows, 'fast')
    const reference = built(rows, 'reference')
    const next = random(5)
    const keys = [...(reference as unknown as { terms: { ids: Map<string, number> } }).terms.ids.keys()]
    for (let at = 0; at < 300; at += 1) {
      const key = keys[Math.floor(next() * keys.length)]!
      expect(fast.postings(key), key).toEqual(reference.postings(key))
    }
    let listed = 0
    for (const term of ['ool', 'src/db', 'err_', '数据库', 'econnref', ':42:', '.ts', 'σοφ', 'istanbul']) {
      const seen = (index: SessionIndex): Uint8Array => {
        const marks = new Uint8Array(index.size + 5)
        // a mark made before is not listed again: the list is of the marks this call made
        marks[5] = 1
        const found: number[] = []
        index.markSubstring(term, marks, 5, index.size - 7, found)
        const made = [...marks.keys()].filter(gid => gid !== 5 && marks[gid] === 1)
        expect(found.toSorted((a, b) => a - b), term).toEqual(made)
        return marks
      }
      expect(seen(fast), term).toEqual(seen(reference))
      listed += seen(fast).filter(mark => mark === 1).length - 1
    }
    expect(listed).toBeGreaterThan(100)
    for (let doc = 0; doc < rows.length; doc += 1) {
      expect(fast.oddKeys(doc)).toEqual(reference.oddKeys(doc))
      expect(fast.valuesOf(doc)).toEqual(reference.valuesOf(doc))
      expect(fast.lowerText(doc)).toBe(reference.lowerText(doc))
    }
    const terms = ['pool', 'retri', 'connect', '数据', 'get', 'name']
    expect(fast.scans(terms, scan => rows.map((_, doc) => scan(doc)))).toEqual(reference.scans(terms, scan => rows.map((_, doc) => scan(doc))))
  })
})
