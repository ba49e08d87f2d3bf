import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { ANALYZER_VERSION } from '../src/analyzer.ts'
import { hashEventJson, sessionTag, ShadowStore } from '../src/index.ts'
import { packEventJson, unpackEventJson } from '../src/event-json.ts'
import { MIGRATIONS, SCHEMA_VERSION } from '../src/sqlite/schema.ts'
import { gramsMatch, holdsTerms, trigrams, wordsMatch } from '../src/sqlite/terms.ts'
import { essentialTerms } from '../src/substring-terms.ts'
import { message, tempDir } from './helpers.ts'

describe('schema v4: event JSON stored without its text', () => {
  it('splices the text out and back byte for byte, and deflates JSON that does not hold it verbatim', () => {
    const cases: Array<[string, string]> = [
      ['a line\nwith "quotes", a tab\t, 中文 and \u0000 NUL', ''],
      ['x'.repeat(40), ''],
      ['short', ''],
      ['the rendered text of two blocks, joined', 'not verbatim'],
    ]
    for (const [text, mode] of cases) {
      const json = mode === '' ? JSON.stringify({ type: 'user/message', seq: 3, data: { content: [{ type: 'text', text }] } })
        : JSON.stringify({ type: 'assistant/message', data: { content: [{ type: 'text', text: text.slice(0, 20) }, { type: 'text', text: text.slice(20) }] } })
      const packed = packEventJson(json, text)
      expect(unpackEventJson(packed, text)).toBe(json)
      if (text.length >= 16) expect(typeof packed === 'string' ? packed.length : packed.byteLength).toBeLessThan(Buffer.byteLength(json))
    }
    // rows written before v4 hold plain JSON text
    expect(unpackEventJson('{"a":1}', 'whatever')).toBe('{"a":1}')
    expect(() => unpackEventJson(Buffer.of(9, 1, 2), 'x')).toThrow(/unknown format/)
  })
})

describe('schema v4: single-token MATCH expressions', () => {
  it('turns a term into the AND of its tokens or trigrams, quoted', () => {
    expect(wordsMatch(['pool'], 'or')).toBe('"pool"')
    expect(wordsMatch(['src/db', 'pool'], 'or')).toBe('("src" AND "db") OR "pool"')
    expect(wordsMatch(['+++', 'pool'], 'or')).toBe('"pool"')
    expect(wordsMatch(['+++', 'pool'], 'and')).toBeUndefined()
    expect(wordsMatch(['ab"c'], 'or')).toBe('("ab" AND "c")')
    expect(trigrams('db/pool')).toEqual(['db/', 'b/p', '/po', 'poo', 'ool'])
    expect(trigrams('a'.repeat(3) + 'bcdefghijklmnopqrstuvwxyz')).toHaveLength(12)
    expect(gramsMatch(['db/pool', 'ab'], 'or')).toBe('("db/" AND "b/p" AND "/po" AND "poo" AND "ool")')
    expect(gramsMatch(['ab'], 'or')).toBeUndefined()
    expect(holdsTerms('See src/DB/Pool.ts', ['db/pool'], 'or')).toBe(true)
    expect(holdsTerms('db pool', ['db/pool'], 'or')).toBe(false)
    expect(holdsTerms('ｄｂ／ｐｏｏｌ full width', ['db/pool'], 'or')).toBe(true)
  })

  it('checks only the substring terms that decide an OR or an AND', () => {
    const nested = Array.from({ length: 48 }, (_, at) => 'a'.repeat(41 + at))
    expect(essentialTerms(nested, 'or')).toEqual(['a'.repeat(41)])
    expect(essentialTerms(nested, 'and')).toEqual(['a'.repeat(88)])
    expect(essentialTerms(['db/pool', 'pool', 'src/db/pool.ts', 'queue'], 'or')).toEqual(['pool', 'queue'])
    expect(essentialTerms(['db/pool', 'pool', 'src/db/pool.ts', 'queue'], 'and')).toEqual(['src/db/pool.ts', 'queue'])
    expect(essentialTerms(['pool', 'pool'], 'or')).toEqual(['pool'])
    // the trigram AND of the OR is the shorter term's alone; of the AND, the longer's
    expect(gramsMatch(['pool', 'db/pool'], 'or')).toBe('("poo" AND "ool")')
    expect(gramsMatch(['pool', 'db/pool'], 'and')).toBe(gramsMatch(['db/pool'], 'and'))
    // a term too short for a trigram still empties an AND
    expect(gramsMatch(['db/pool', 'db'], 'and')).toBeUndefined()
    // the same answers as every term checked: random texts and terms over a small alphabet
    let seed = 7
    const next = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2_147_483_648) % n
    const word = (length: number): string => Array.from({ length }, () => 'ab'[next(2)]!).join('')
    for (let round = 0; round < 400; round += 1) {
      const text = word(3 + next(30))
      const terms = Array.from({ length: 1 + next(5) }, () => word(3 + next(5)))
      for (const operator of ['or', 'and'] as const) {
        const every = operator === 'or' ? terms.some(term => text.includes(term)) : terms.every(term => text.includes(term))
        expect(holdsTerms(text, terms, operator), `${operator} ${terms.join(' ')} in ${text}`).toBe(every)
      }
    }
  })

  it('finds words SQLite splits differently, substrings, and keeps sessions apart', async () => {
    const dir = tempDir()
    const store = await ShadowStore.open(join(dir.path, 'v4.db'))
    await store.append([
      message('s1', 1, 'हिन्दी में एक संदेश'),
      message('s1', 2, 'the pool lives in src/db/pool.ts now'),
      message('s1', 3, 'a db and a pool, apart'),
      message('s2', 1, 'src/db/pool.ts of another session'),
    ])
    expect((await store.search('हिन्दी', { sessionId: 's1' })).hits.map(hit => hit.message.seq)).toEqual([1])
    const path = await store.search('db/pool', { sessionId: 's1' })
    expect(path.hits[0]!.message.seq).toBe(2)
    expect(path.hits.every(hit => hit.message.sessionId === 's1')).toBe(true)
    expect((await store.search('erver/rou', { sessionId: 's1' })).hits).toHaveLength(0)
    expect((await store.search('db/pool', { sessionId: 's1', allSessions: true })).hits.map(hit => hit.message.sessionId).toSorted()).toEqual(['s1', 's1', 's2'])
    // the AND of a term's trigrams also matches them apart or reordered: only true substrings come back
    await store.append([
      message('s1', 4, 'see tests/payments/refund.test.ts'),
      message('s1', 5, 'fixed src/payments/refund.ts'),
      message('s1', 6, 'ｓｒｃ／ｐａｙｍｅｎｔｓ／ｒｅｆｕｎｄ．ｔｓ in full width'),
    ])
    const segments = await store.scopeSegments({ sessionId: 's1' })
    const grams = await store.backend.searchIndex({ segments, index: 'grams', terms: ['payments/refund.ts'], operator: 'or', limit: 10, rankWindow: 1000, order: 'newest' })
    expect(grams.hits.map(hit => hit.message.seq)).toEqual([6, 5])
    await store.close()
    dir.cleanup()
  })
})

describe('schema v4: what the recall search asks of the substring index', () => {
  it('answers existence checks and counts with true substrings only, and checks a light read past its cut', async () => {
    const dir = tempDir()
    const store = await ShadowStore.open(join(dir.path, 'v4.db'))
    const WORD = '数据库连接池'
    await store.append([
      message('c', 1, `${WORD}满了，需要调大`),
      // newer rows holding every trigram of the word, apart: candidates of the AND, not matches
      ...Array.from({ length: 40 }, (_, index) => message('c', 2 + index, `数据库，据库连，库连接，连接池 ${index}`)),
      // the term lies past what a light read returns
      message('c', 50, `${'filler '.repeat(40_000)} see needle/path.ts`),
    ])
    const segments = await store.scopeSegments({ sessionId: 'c' })
    const exists = async (term: string): Promise<number[]> => (await store.backend.searchIndex({ segments, index: 'grams', terms: [term], operator: 'or', limit: 1, rankWindow: Number.POSITIVE_INFINITY, order: 'newest', light: true })).hits.map(hit => hit.message.seq)
    expect(await exists(WORD)).toEqual([1])
    expect(await exists('needle/path.ts')).toEqual([50])
    expect(await exists('needle/path.js')).toEqual([])
    expect(await store.backend.documentFrequencies({ segments, index: 'grams', terms: [WORD, '数据库', 'needle/path.ts'], cap: 2_000 })).toEqual([1, 41, 1])
    await store.close()
    dir.cleanup()
  })

  it('a redaction pass keeps the event JSON packed, its size and hash those of the redacted JSON', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'v4.db')
    const SECRET = 'hunter2-secret'
    const plain = await ShadowStore.open(path, { redact: false })
    await plain.append([message('r', 1, `the password: ${SECRET} was rotated yesterday afternoon`)])
    await plain.close()
    const store = await ShadowStore.open(path, { redact: {} })
    const [row] = await store.read({ sessionId: 'r' })
    expect(row!.text).not.toContain(SECRET)
    expect(row!.eventJson).toContain(JSON.stringify(row!.text).slice(1, -1))
    expect(row!.hash).toBe(store.hashOf(row!.eventJson))
    expect((await store.search('rotated', { sessionId: 'r' })).hits.map(hit => hit.message.seq)).toEqual([1])
    await store.close()
    const raw = new DatabaseSync(path, { readOnly: true })
    const stored = raw.prepare('SELECT event_json, event_bytes FROM messages').get() as { event_json: unknown; event_bytes: number }
    raw.close()
    expect(stored.event_json).toBeInstanceOf(Uint8Array)
    expect(unpackEventJson(stored.event_json, row!.text)).toBe(row!.eventJson)
    expect(stored.event_bytes).toBe(Buffer.byteLength(row!.eventJson, 'utf8'))
    dir.cleanup()
  })
})

describe('schema v4 migration', () => {
  /** A store exactly as schema v3 wrote it: rows, plain event JSON, and v3 index entries with scope tokens. */
  function v3Store(file: string): Array<{ sessionId: string; seq: number; text: string; json: string }> {
    const raw = new DatabaseSync(file)
    for (const migration of MIGRATIONS.filter(entry => entry.version <= 3)) raw.exec(migration.sql)
    raw.exec(`INSERT INTO meta(key, value) VALUES ('schema_version', '3'), ('analyzer_version', '${ANALYZER_VERSION}')`)
    raw.prepare('INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, message_count, last_seq) VALUES (?, ?, ?, ?, ?, ?)').run('parent', sessionTag('parent'), null, null, 3, 3)
    raw.prepare('INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, message_count, last_seq) VALUES (?, ?, ?, ?, ?, ?)').run('fork', sessionTag('fork'), 'parent', 3, 1, 4)
    const rows = [
      { sessionId: 'parent', seq: 1, text: 'the ledger migration 0042_add_refund_index ran twice' },
      { sessionId: 'parent', seq: 2, text: 'retry budget exceeded in src/server/routes.ts' },
      { sessionId: 'parent', seq: 3, text: 'after the fork point: the ledger was rebuilt' },
      { sessionId: 'fork', seq: 4, text: 'the fork asks about the ledger migration again' },
    ].map(row => ({ ...row, json: JSON.stringify({ type: 'user/message', seq: row.seq, data: { content: [{ type: 'text', text: row.text }] } }) }))
    const insert = raw.prepare('INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, time, tokens, hash, event_json, text) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)')
    const words = raw.prepare('INSERT INTO messages_words(rowid, body, scope) VALUES (?, ?, ?)')
    const grams = raw.prepare('INSERT INTO messages_grams(rowid, body, scope) VALUES (?, ?, ?)')
    for (const row of rows) {
      const tag = sessionTag(row.sessionId)
      const id = Number(insert.run(row.sessionId, row.seq, `${tag}.${row.seq}`, 'user/message', 'user', 'user', 1_000 + row.seq, hashEventJson(row.json), row.json, Buffer.from(row.text)).lastInsertRowid)
      words.run(id, row.text, `s${tag}`)
      grams.run(id, row.text.split(' ').filter(word => /[_./\d]/.test(word)).join(' '), `s${tag}`)
    }
    raw.close()
    return rows
  }

  it('upgrades a v3 store in place: same rows and JSON, packed event JSON, rebuilt single-token indexes, same scoping', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'v3.db')
    const rows = v3Store(file)
    const store = await ShadowStore.open(file)
    const stats = await store.stats()
    expect(stats.schemaVersion).toBe(SCHEMA_VERSION)
    expect(stats.analyzerVersion).toBe(ANALYZER_VERSION)
    // every row reads back exactly as written, hash included
    const read = [...await store.read({ sessionId: 'parent' }, { limit: 10 }), ...await store.read({ sessionId: 'fork' }, { limit: 10 })]
    for (const row of rows) {
      const got = read.find(entry => entry.sessionId === row.sessionId && entry.seq === row.seq)!
      expect(got.eventJson).toBe(row.json)
      expect(got.text).toBe(row.text)
      expect(got.hash).toBe(hashEventJson(row.json))
    }
    // the fork sees its parent below the fork point only; substrings come from the rebuilt trigram index
    expect((await store.search('ledger', { sessionId: 'fork' })).hits.map(hit => `${hit.message.sessionId}:${hit.message.seq}`).toSorted()).toEqual(['fork:4', 'parent:1'])
    expect((await store.search('add_refund', { sessionId: 'parent' })).hits.map(hit => hit.message.seq)).toEqual([1])
    expect((await store.search('erver/rou', { sessionId: 'parent' })).hits.map(hit => hit.message.seq)).toEqual([2])
    // retention still counts the event JSON as given
    await store.append([message('fork', 5, 'written after the upgrade')])
    expect((await store.search('upgrade', { sessionId: 'fork' })).hits).toHaveLength(1)
    await store.close()

    const raw = new DatabaseSync(file, { readOnly: true })
    const stored = raw.prepare("SELECT event_json, event_bytes FROM messages WHERE session_id = 'parent' AND seq = 1").get() as { event_json: unknown; event_bytes: number }
    expect(stored.event_json).toBeInstanceOf(Uint8Array)
    expect((stored.event_json as Uint8Array).byteLength).toBeLessThan(rows[0]!.json.length - rows[0]!.text.length + 10)
    expect(stored.event_bytes).toBe(Buffer.byteLength(rows[0]!.json))
    const schema = (raw.prepare("SELECT group_concat(sql, ';') AS sql FROM sqlite_master").get() as { sql: string }).sql
    expect(schema).toContain('detail=none')
    expect(schema).not.toContain('messages_time')
    raw.close()
    // a read-only open of the upgraded store works
    const readOnly = await ShadowStore.open(file, { readOnly: true })
    expect((await readOnly.search('ledger', { sessionId: 'parent' })).hits.length).toBeGreaterThan(0)
    await readOnly.close()
    dir.cleanup()
  })

  it('refuses a read-only open of a v3 store, and a failed upgrade changes nothing', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'v3.db')
    v3Store(file)
    await expect(ShadowStore.open(file, { readOnly: true })).rejects.toMatchObject({ code: 'SCHEMA_TOO_OLD' })
    // a store the upgrade cannot take (here: an index it expects is gone) fails to open and stays v3, untouched
    let raw = new DatabaseSync(file)
    raw.exec('DROP INDEX messages_time')
    raw.close()
    await expect(ShadowStore.open(file)).rejects.toMatchObject({ name: 'ShadowStoreError' })
    raw = new DatabaseSync(file, { readOnly: true })
    expect((raw.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value).toBe('3')
    expect(raw.prepare('SELECT typeof(event_json) AS t, count(*) AS n FROM messages GROUP BY 1').all().map(row => ({ ...row }))).toEqual([{ t: 'text', n: 4 }])
    expect((raw.prepare("SELECT count(*) AS n FROM messages_words WHERE messages_words MATCH 'scope : s' || ?").get(sessionTag('parent')) as { n: number }).n).toBe(3)
    raw.close()
    dir.cleanup()
  })
})
