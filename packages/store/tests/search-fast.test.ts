/**
 * Issue 14 fast path: the cheaper ways of doing the same work give the same answers. The ASCII
 * scan (indexOf over term prefixes) against the exhaustive token walk on a generated corpus, and
 * event JSON format 3 (fixed pieces as control bytes) byte for byte.
 */
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { scanTerms } from '../src/search/passage.ts'
import { coverageTerms } from '../src/search/ranking.ts'
import { packEventJson, unpackEventJson } from '../src/event-json.ts'
import { SCHEMA_VERSION } from '../src/sqlite/schema.ts'
import { message, SQLITE_BEFORE_V7, tempDir } from './helpers.ts'
import { generatedText, GLUE, pointsOf, random, word } from './generated-text.ts'

/** Scans a text for 1-4 ASCII query terms both ways, expects the same scan; whether it found any term. */
function sameAsExhaustive(body: string, next: () => number): boolean {
  const terms = coverageTerms(Array.from({ length: 1 + Math.floor(next() * 4) }, () => word(next).replace(/[^\p{L}\p{N}]/gu, '').toLowerCase()).filter(term => /^[a-z0-9]+$/.test(term)))
  const fast = scanTerms(body, terms)
  expect(fast, `${JSON.stringify(body)} ${JSON.stringify(terms)}`).toEqual(scanTerms(body, terms, undefined, 'exhaustive'))
  return fast.covered.some(Boolean)
}

describe('fast ASCII scan', () => {
  it('finds exactly what the exhaustive token walk finds, on 3,000 generated texts', () => {
    const next = random(14)
    let compared = 0
    let covered = 0
    for (let index = 0; index < 3_000; index += 1) {
      const body = generatedText(next)
      const terms = coverageTerms(Array.from({ length: 1 + Math.floor(next() * 4) }, () => word(next).replace(/[^\p{L}\p{N}]/gu, '').toLowerCase()).filter(term => term.length > 0))
      const fast = scanTerms(body, terms)
      expect(fast, `${JSON.stringify(body)} ${JSON.stringify(terms)}`).toEqual(scanTerms(body, terms, undefined, 'exhaustive'))
      compared += 1
      if (fast.covered.some(Boolean)) covered += 1
    }
    // the comparison is not vacuous: many texts hold some query term
    expect(covered).toBeGreaterThan(compared / 3)
  })

  it('finds exactly what the exhaustive token walk finds in texts mixing scripts, marks and symbols', () => {
    // non-ASCII next to ASCII words: separators (→ … ·), letters that join a token (é, a combining
    // mark, Greek, CJK, full-width, the Kelvin sign that lowercases to k), digits (²), and İ, whose
    // lowercase is longer (the fast scan must step aside)
    const NEAR = ['→', '…', '·', ' — ', 'é', '\u0301', 'λ', '连接', 'ｐｏｏｌ', '\u212a', '²', 'İ', 'ü', '\u00a0', '', '𝐀', '\u{10400}', 'ア', '한', '〇', '⺀', '数\u0301', '\u{20000}', '٣', 'ー', '゛', 'ﬀ', 'וּ', 'ゲ', '⾷']
    const next = random(41)
    let covered = 0
    for (let index = 0; index < 3_000; index += 1) {
      const parts: string[] = []
      const length = 1 + Math.floor(next() * 40)
      for (let at = 0; at < length; at += 1) {
        const near = NEAR[Math.floor(next() * NEAR.length)]!
        const roll = next()
        parts.push(roll < 0.3 ? near + word(next) : roll < 0.6 ? word(next) + near : word(next), GLUE[Math.floor(next() * GLUE.length)]!)
      }
      if (sameAsExhaustive(parts.join(''), next)) covered += 1
    }
    expect(covered).toBeGreaterThan(500)
  })

  it('finds exactly what the exhaustive token walk finds in texts of random code points around the terms', () => {
    // letters, marks and digits of many scripts (astral ones too), CJK, separators and lone
    // surrogates, glued to ASCII words: every piece boundary the fast scan walks is one the token walk cuts
    const RANGES: Array<[number, number]> = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x660, 0x669], [0x2000, 0x206f], [0x2e80, 0x2eff], [0x3000, 0x30ff], [0x4e00, 0x4e3f], [0xac00, 0xac3f], [0xd800, 0xdfff], [0xff00, 0xff5e], [0x10400, 0x1044f], [0x1d400, 0x1d4ff], [0x20000, 0x2003f]]
    const next = random(77)
    const char = pointsOf(RANGES, next)
    let covered = 0
    for (let index = 0; index < 3_000; index += 1) {
      const parts: string[] = []
      const length = 1 + Math.floor(next() * 30)
      for (let at = 0; at < length; at += 1) {
        const noise = Array.from({ length: Math.floor(next() * 3) }, char).join('')
        const roll = next()
        parts.push(roll < 0.4 ? noise + word(next) : roll < 0.8 ? word(next) + noise : noise)
      }
      if (sameAsExhaustive(parts.join(''), next)) covered += 1
    }
    expect(covered).toBeGreaterThan(150)
  })

  it('finds exactly what the exhaustive token walk finds around ligatures, folded letters and symbols of many blocks', () => {
    // words a fold changes (café, ﬁle, ẞ, ǅ) or a camelCase part starts, in noise from letter,
    // mark, symbol and surrogate blocks (kana marks of Common script, Kangxi radicals, emoji, tags)
    const WORDS = ['pool', 'Pooling', 'connect', 'connéction', 'getPoolName', 'db', 'DB', 'retry', 'retries', 'happy', 'ay', 'HTTPServer', 'x1', '42', 'idempotent', 'café', 'naïve', 'ﬁle', 'ǅ', 'ẞ']
    const BLOCKS: Array<[number, number]> = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x1e00, 0x1eff], [0x2000, 0x2bff], [0x2e80, 0x2fff], [0x3000, 0x30ff], [0x4e00, 0x4e3f], [0xac00, 0xac3f], [0xd800, 0xdfff], [0xfb00, 0xfb4f], [0xff00, 0xffef], [0x10400, 0x1044f], [0x1d400, 0x1d7ff], [0x20000, 0x2003f], [0x1f600, 0x1f64f], [0xe0000, 0xe007f]]
    const QUERY = ['pool', 'connect', 'db', 'retry', 'happy', 'x1', 'name', 'server', 'file', 'cafe']
    const next = random(2026)
    const char = pointsOf(BLOCKS, next)
    let covered = 0
    for (let index = 0; index < 20_000; index += 1) {
      const parts: string[] = []
      for (let at = 0, length = 1 + Math.floor(next() * 20); at < length; at += 1) {
        const picked = WORDS[Math.floor(next() * WORDS.length)]!
        const noise = Array.from({ length: Math.floor(next() * 3) }, char).join('')
        const roll = next()
        parts.push(roll < 0.3 ? noise + picked : roll < 0.6 ? picked + noise : roll < 0.8 ? noise + picked + noise : noise)
      }
      const body = parts.join('')
      const terms = coverageTerms(QUERY.filter(() => next() < 0.4))
      if (terms.length === 0) continue
      const fast = scanTerms(body, terms)
      expect(fast, `${JSON.stringify(body)} ${JSON.stringify(terms)}`).toEqual(scanTerms(body, terms, undefined, 'exhaustive'))
      if (fast.covered.some(Boolean)) covered += 1
    }
    expect(covered).toBeGreaterThan(4_000)
  })

  it('keeps the position cap and the linear bound on a long token', () => {
    const long = `${'ab'.repeat(20_000)} pool`
    const scan = scanTerms(long, ['ab', 'pool'])
    expect(scan).toEqual(scanTerms(long, ['ab', 'pool'], undefined, 'exhaustive'))
    const many = 'pool '.repeat(10_000)
    expect(scanTerms(many, ['pool']).positions).toHaveLength(4_000)
  })
})

describe('event JSON format 3', () => {
  const time = Date.UTC(2026, 0, 5, 8, 2, 28, 44)
  const text = 'Move staging to port 5433, then "retry" the migration\n\tdone'
  const events = [
    { type: 'user/message', seq: 4, time: new Date(time).toISOString(), data: { message: { role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } } },
    { type: 'tool/result', seq: 9, time: new Date(time).toISOString(), data: { callId: 'call_26', toolName: 'read_file', content: [{ type: 'text', text }] } },
    { type: 'assistant/message', seq: 5, time: '2020-01-01T00:00:00.000Z', data: { content: [{ type: 'text', text }], toolCalls: [{ id: 'c1', name: 'shell', arguments: { cmd: 'ls' } }] } },
    { type: 'custom', text, other: { '","': '":"', '}}': time } },
  ]

  it('reads back every event byte for byte and stores dsh events in a fraction of the splice', () => {
    for (const event of events) {
      const json = JSON.stringify(event)
      const packed = packEventJson(json, text, time)
      expect(unpackEventJson(packed, text, time)).toBe(json)
      expect(Buffer.from(packed as Uint8Array)[0]).toBe(3)
    }
    const json = JSON.stringify(events[1])
    const spliced = Buffer.byteLength(json) - Buffer.byteLength(JSON.stringify(text).slice(1, -1))
    expect((packEventJson(json, text, time) as Uint8Array).byteLength).toBeLessThan(spliced / 2)
  })

  it('needs the row time only when it stored the time as a mark, and keeps JSON with control bytes as before', () => {
    const json = JSON.stringify(events[0])
    expect(() => unpackEventJson(packEventJson(json, text, time), text)).toThrow(/row time/)
    // packed without a time: no mark, readable without one
    expect(unpackEventJson(packEventJson(json, text), text)).toBe(json)
    const raw = `{"type":"user/message","text":"${JSON.stringify(text).slice(1, -1)}","bad":"\u0003"}`
    const packed = packEventJson(raw, text, time)
    expect(Buffer.from(packed as Uint8Array)[0]).toBe(1)
    expect(unpackEventJson(packed, text, time)).toBe(raw)
  })
})

describe('schema v6 (event JSON format 3)', () => {
  it('opens a v4 store, reads its v4 rows as they are, and writes new rows in format 3', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'v4.db')
    const text = 'the staging database moved to port 5433 on Monday'
    const first = message('s', 1, text)
    const store = await ShadowStore.open(path)
    await store.append([first])
    await store.close()
    // rewrite the row as v4 stored it (format 1: splice offset, then the remainder) and mark the file v4
    const raw = new DatabaseSync(path)
    const escaped = JSON.stringify(text).slice(1, -1)
    const at = first.eventJson.indexOf(escaped)
    const head = Buffer.alloc(5)
    head[0] = 1
    head.writeUInt32BE(Buffer.byteLength(first.eventJson.slice(0, at)), 1)
    raw.prepare('UPDATE messages SET event_json = ?').run(Buffer.concat([head, Buffer.from(first.eventJson.slice(0, at) + first.eventJson.slice(at + escaped.length))]))
    // (a v4 file has no message_days either: v5 adds it; nor v7's columns)
    raw.exec(`${SQLITE_BEFORE_V7} DROP TABLE message_days; UPDATE meta SET value = '4' WHERE key = 'schema_version'`)
    raw.close()
    const reopened = await ShadowStore.open(path)
    expect((await reopened.stats()).schemaVersion).toBe(SCHEMA_VERSION)
    const second = message('s', 2, `${text}, confirmed`, { eventJson: JSON.stringify({ type: 'user/message', seq: 2, time: new Date(Date.UTC(2026, 0, 5)).toISOString(), data: { content: [{ type: 'text', text: `${text}, confirmed` }] } }), time: Date.UTC(2026, 0, 5) })
    await reopened.append([second])
    const rows = await reopened.read({ sessionId: 's' })
    expect(rows.map(row => row.eventJson)).toEqual([first.eventJson, second.eventJson])
    expect(rows.map(row => row.hash)).toEqual([reopened.hashOf(first.eventJson), reopened.hashOf(second.eventJson)])
    await reopened.close()
    const check = new DatabaseSync(path, { readOnly: true })
    const formats = check.prepare('SELECT seq, event_json FROM messages ORDER BY seq').all() as Array<{ seq: number; event_json: Uint8Array }>
    check.close()
    expect(formats.map(row => row.event_json[0])).toEqual([1, 3])
    dir.cleanup()
  })
})
