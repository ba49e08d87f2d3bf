/**
 * Per-session revisions and the delta read a resident search index keeps itself exact with
 * (backend.ts SessionChanges), on both backends: every kind of write moves a session's revision by
 * exactly one per transaction and stamps exactly the rows it changed; a write that changes nothing
 * moves nothing; a reader never sees a revision without its rows, also while others write.
 */
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { hashEventJson, type PostgresBackend, type SessionChanges, ShadowStore, type ShadowMessageInput, sessionTag } from '../src/index.ts'
import { MIGRATIONS, SCHEMA_VERSION } from '../src/sqlite/schema.ts'
import { unpackEventJson } from '../src/event-json.ts'
import { PG_SCHEMA_VERSION } from '../src/postgres/schema.ts'
import { message, tempDir } from './helpers.ts'
import { TARGETS, type PostgresTarget } from './targets.ts'

const SECRET = 'hunter2-secret'

async function changes(store: ShadowStore, sessionId: string, since: number): Promise<SessionChanges | undefined> {
  return (await store.backend.sessionChanges([{ sessionId, since }]))[0]
}

async function revisionOf(store: ShadowStore, sessionId: string): Promise<number | undefined> {
  return (await changes(store, sessionId, -1))?.revision
}

/** Seqs of the rows changed since `since`. */
async function changedSince(store: ShadowStore, sessionId: string, since: number): Promise<number[]> {
  return (await changes(store, sessionId, since))!.rows.map(row => row.seq)
}

/** Each row's rev, told by the delta reads alone: a row is in every delta since a revision below its own. */
async function revsOf(store: ShadowStore, sessionId: string): Promise<Map<number, number>> {
  const revision = (await revisionOf(store, sessionId))!
  const revs = new Map<number, number>()
  for (let since = 0; since < revision; since += 1) for (const seq of await changedSince(store, sessionId, since)) revs.set(seq, since + 1)
  for (const seq of await changedSince(store, sessionId, -1)) if (!revs.has(seq)) revs.set(seq, 0)
  return revs
}

describe.each(TARGETS)('session revisions on $name', target => {
  let store: ShadowStore

  beforeAll(() => target.setup())
  afterAll(() => target.teardown())
  beforeEach(async () => {
    store = await ShadowStore.open(target.location())
  })
  afterEach(async () => {
    await store.close()
  })

  it('an append bumps each session it changes once and stamps its rows; an idempotent re-append bumps nothing', async () => {
    expect(await changes(store, 'a', -1)).toBeUndefined()
    const rows = [message('a', 1, 'one'), message('a', 2, 'two'), message('b', 1, 'bee')]
    await store.append(rows)
    expect(await changes(store, 'a', 0)).toMatchObject({ revision: 1, removedRev: 0 })
    expect(await revisionOf(store, 'b')).toBe(1)
    expect(await changedSince(store, 'a', 0)).toEqual([1, 2])
    // with the session's row count, and each row's event JSON as stored (its text spliced out, put back on read)
    const stamped = (await changes(store, 'a', 0))!
    expect(stamped.messageCount).toBe(2)
    expect(stamped.events).toHaveLength(2)
    expect(unpackEventJson(stamped.events[0], stamped.rows[0]!.text, stamped.rows[0]!.time)).toBe(rows[0]!.eventJson)
    expect(await store.append(rows)).toEqual({ written: 0, unchanged: 3, replaced: 0 })
    expect([await revisionOf(store, 'a'), await revisionOf(store, 'b')]).toEqual([1, 1])
    // a replaced row and a new one in one transaction: one revision, both rows stamped with it
    expect(await store.append([message('a', 2, 'two, from another lifetime'), message('a', 3, 'three'), rows[2]!])).toEqual({ written: 1, unchanged: 1, replaced: 1 })
    expect([await revisionOf(store, 'a'), await revisionOf(store, 'b')]).toEqual([2, 1])
    const delta = (await changes(store, 'a', 1))!
    expect(delta.rows.map(row => [row.seq, row.text])).toEqual([[2, 'two, from another lifetime'], [3, 'three']])
    // nothing since the current revision; everything, light, since -1
    expect(await changes(store, 'a', 2)).toMatchObject({ revision: 2, removedRev: 0, rows: [], events: [] })
    const all = (await changes(store, 'a', -1))!
    expect(all.rows.map(row => row.seq)).toEqual([1, 2, 3])
    expect(all.rows.every(row => row.eventJson === '')).toBe(true)
    expect(all.rows[0]).toMatchObject({ sessionId: 'a', shadowId: `${sessionTag('a')}.1`, text: 'one', hash: hashEventJson(rows[0]!.eventJson) })
  })

  it('answers several sessions in request order, undefined for one not stored, and cuts texts as a light read does', async () => {
    const long = 'x'.repeat(300_000)
    await store.append([message('c', 1, long), message('d', 1, 'short')])
    const answers = await store.backend.sessionChanges([{ sessionId: 'd', since: -1 }, { sessionId: 'nobody', since: -1 }, { sessionId: 'c', since: 0 }, { sessionId: 'd', since: 1 }])
    expect(answers.map(answer => answer?.rows.map(row => row.text.length))).toEqual([[5], undefined, [256_000], []])
    expect(await store.backend.sessionChanges([])).toEqual([])
  })

  it('says whether a byte bound left rows out: counted on the text as read, not as the light rows hold it', async () => {
    // 600k characters: read as 600k bytes, held as 256k characters
    await store.append([message('e', 1, 'short'), message('e', 2, 'y'.repeat(600_000)), message('e', 3, 'after'), message('e', 4, 'last')])
    const bounded = async (bytes: number, rows = 100): Promise<{ seqs: number[]; complete: boolean }> => {
      const [answer] = await store.backend.sessionChanges([{ sessionId: 'e', since: 0, bound: { rows, bytes } }])
      return { seqs: answer!.rows.map(row => row.seq), complete: answer!.complete }
    }
    expect(await bounded(500_000)).toEqual({ seqs: [1, 2], complete: false })
    expect(await bounded(600_009)).toEqual({ seqs: [1, 2, 3], complete: false })
    expect(await bounded(600_014)).toEqual({ seqs: [1, 2, 3, 4], complete: true })
    expect(await bounded(10_000_000)).toEqual({ seqs: [1, 2, 3, 4], complete: true })
    // the row bound is the caller's to judge (more rows than it asked for)
    expect(await bounded(10_000_000, 2)).toEqual({ seqs: [1, 2], complete: true })
    const [page] = await store.backend.sessionChanges([{ sessionId: 'e', since: -1, page: { afterSeq: 1, rows: 10, bytes: 500_000 } }])
    expect([page!.rows.map(row => row.seq), page!.complete]).toEqual([[2], false])
    const [unbounded] = await store.backend.sessionChanges([{ sessionId: 'e', since: 0 }])
    expect(unbounded!.complete).toBe(true)
  })

  it('a delete bumps once and records removedRev; deleting absent rows bumps nothing', async () => {
    await store.append([1, 2, 3, 4].map(seq => message('r', seq, `row ${seq}`)))
    expect(await store.remove('r', [2, 3])).toBe(2)
    expect(await changes(store, 'r', 1)).toMatchObject({ revision: 2, removedRev: 2, rows: [], events: [] })
    expect(await store.remove('r', [9])).toBe(0)
    expect(await changes(store, 'r', 2)).toMatchObject({ revision: 2, removedRev: 2, rows: [], events: [] })
    expect(await changedSince(store, 'r', -1)).toEqual([1, 4])
    await store.append([message('r', 5, 'after the delete')])
    expect(await changes(store, 'r', 2)).toMatchObject({ revision: 3, removedRev: 2 })
  })

  it('a mark bumps only when it changes a row; an expiry of several sessions bumps each once', async () => {
    await store.append([message('s', 1, 'one'), message('s', 2, 'two'), message('s', 3, 'three'), message('t', 1, 'tee'), message('t', 2, 'tee two')])
    await store.markElided('s', [1, 2], 'c1')
    expect(await revisionOf(store, 's')).toBe(2)
    expect((await changes(store, 's', 1))!.rows.map(row => [row.seq, row.elidedBy])).toEqual([[1, 'c1'], [2, 'c1']])
    // marked so already: no change
    await store.markElided('s', [1, 2], 'c1')
    await store.markElided('s', [7], 'c1')
    expect(await revisionOf(store, 's')).toBe(2)
    await store.markElided('s', [2, 3], 'c1')
    expect(await changes(store, 's', 2)).toMatchObject({ revision: 3, rows: [{ seq: 3, elidedBy: 'c1' }] })
    await store.markElided('t', [1], 'c2')
    expect(await revisionOf(store, 't')).toBe(2)
    // one transaction over two checkpoints of two sessions: each session once
    expect(await store.backend.expireCheckpoints(['c1', 'c2'], 5_000)).toEqual([{ rows: 3, bytes: expect.any(Number) }, { rows: 1, bytes: expect.any(Number) }])
    expect([await revisionOf(store, 's'), await revisionOf(store, 't')]).toEqual([4, 3])
    expect((await changes(store, 's', 3))!.rows.map(row => [row.seq, row.expiredAt, row.text])).toEqual([[1, 5_000, ''], [2, 5_000, ''], [3, 5_000, '']])
    expect((await changes(store, 't', 2))!.rows.map(row => row.seq)).toEqual([1])
    // nothing left to expire: nothing moves
    expect(await store.backend.expireCheckpoints(['c1', 'c2'], 6_000)).toEqual([{ rows: 0, bytes: 0 }, { rows: 0, bytes: 0 }])
    expect([await revisionOf(store, 's'), await revisionOf(store, 't')]).toEqual([4, 3])
  })

  it('a redaction pass bumps only the sessions whose rows it rewrote; a reindex bumps none; a forgotten session is undefined', async () => {
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    await plain.append([message('p', 1, 'nothing to hide'), message('p', 2, `the password: ${SECRET} was rotated`), message('q', 1, 'plain words')])
    await plain.close()
    const redacting = await ShadowStore.open(location, { redact: {} })
    try {
      expect([await revisionOf(redacting, 'p'), await revisionOf(redacting, 'q')]).toEqual([2, 1])
      const [row] = (await changes(redacting, 'p', 1))!.rows
      expect(row!.seq).toBe(2)
      expect(row!.text).not.toContain(SECRET)
      await redacting.reindex()
      expect([await revisionOf(redacting, 'p'), await revisionOf(redacting, 'q')]).toEqual([2, 1])
      await redacting.forget('q', { force: true })
      expect(await redacting.backend.sessionChanges([{ sessionId: 'q', since: -1 }, { sessionId: 'p', since: 2 }])).toMatchObject([undefined, { revision: 2, removedRev: 0, rows: [], events: [] }])
    } finally {
      await redacting.close()
    }
  })

  it('a reconcile stamps what it rewrites and records what it removes', async () => {
    const captured = (seq: number, text: string) => ({ sessionId: 'log', seq, type: 'user/message' as const, time: 1_000 + seq, turn: 1, step: 1, toolName: null,
      eventJson: JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text }] } }) })
    await store.ingest([{ op: 'events', events: [captured(1, 'kept'), captured(2, 'stale'), captured(3, 'gone')] }])
    expect(await revisionOf(store, 'log')).toBe(1)
    // the log says seq 2 differently and has no seq 3: a replace, then a removal
    expect(await store.ingest([{ op: 'reconcile', sessionId: 'log', events: [captured(1, 'kept'), captured(2, 'rewritten')], ownFromSeq: 0 }])).toMatchObject({ replaced: 1, removed: 1 })
    const delta = (await changes(store, 'log', 1))!
    expect(delta).toMatchObject({ revision: 3, removedRev: 3 })
    expect(delta.rows.map(row => [row.seq, row.text])).toEqual([[2, 'rewritten']])
    // the same log again changes nothing
    await store.ingest([{ op: 'reconcile', sessionId: 'log', events: [captured(1, 'kept'), captured(2, 'rewritten')], ownFromSeq: 0 }])
    expect(await revisionOf(store, 'log')).toBe(3)
  })

  it('sees what another store object (another connection, or process) writes to the same session', async () => {
    const location = target.location()
    const [first, second] = [await ShadowStore.open(location), await ShadowStore.open(location)]
    try {
      await first.append([message('shared', 1, 'from the first')])
      expect(await revisionOf(first, 'shared')).toBe(1)
      await second.append([message('shared', 2, 'from the second')])
      expect(await changes(first, 'shared', 1)).toMatchObject({ revision: 2, rows: [{ seq: 2, text: 'from the second' }] })
      await second.markElided('shared', [1], 'c9')
      expect(await changes(first, 'shared', 2)).toMatchObject({ revision: 3, rows: [{ seq: 1, elidedBy: 'c9' }] })
      await second.remove('shared', [2])
      expect(await changes(first, 'shared', 3)).toMatchObject({ revision: 4, removedRev: 4, rows: [], events: [] })
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('concurrent writers of one session: one revision per committed change, each stamped on its own rows, and a reader never sees a revision without its rows', async () => {
    const location = target.location()
    const WRITERS = 4
    const BATCHES = 10
    const writers = await Promise.all(Array.from({ length: WRITERS }, () => ShadowStore.open(location)))
    const reader = await ShadowStore.open(location)
    try {
      await writers[0]!.registerSession({ sessionId: 'busy' })
      const batch = (writer: number, index: number): ShadowMessageInput[] => [0, 1].map(part => message('busy', writer * 1_000 + index * 2 + part, `writer ${writer} batch ${index} part ${part}`))
      // the reader follows the session by deltas while the writers append, noting what it held at each revision
      const held = new Map<number, string>()
      const seen: Array<{ revision: number; seqs: number[] }> = []
      const progress = { writing: true }
      const reading = (async () => {
        let revision = -1
        while (progress.writing) {
          const delta = (await changes(reader, 'busy', revision))!
          for (const row of delta.rows) held.set(row.seq, row.text)
          revision = delta.revision
          seen.push({ revision, seqs: [...held.keys()].toSorted((a, b) => a - b) })
          await new Promise(resolve => setImmediate(resolve))
        }
      })()
      const changing = await Promise.all(writers.map(async (writer, index) => {
        let count = 0
        for (let at = 0; at < BATCHES; at += 1) {
          const result = await writer.append(batch(index, at))
          if (result.written + result.replaced > 0) count += 1
          // let the reader in between (SQLite answers synchronously)
          await new Promise(resolve => setImmediate(resolve))
        }
        return count
      }))
      progress.writing = false
      await reading
      const committed = changing.reduce((sum, count) => sum + count, 0)
      expect(committed).toBe(WRITERS * BATCHES)
      expect(await revisionOf(reader, 'busy')).toBe(committed)
      // each transaction's two rows share one revision, no other transaction has it
      const revs = await revsOf(reader, 'busy')
      expect(revs.size).toBe(committed * 2)
      const byRev = new Map<number, number[]>()
      for (const [seq, rev] of revs) byRev.set(rev, [...byRev.get(rev) ?? [], seq])
      expect([...byRev.keys()].toSorted((a, b) => a - b)).toEqual(Array.from({ length: committed }, (_, index) => index + 1))
      for (const seqs of byRev.values()) {
        const [low, high] = seqs.toSorted((a, b) => a - b)
        expect([low! % 2, high]).toEqual([0, low! + 1])
      }
      // every read held exactly the rows of its revision and below: none missing, none newer
      expect(seen.length).toBeGreaterThan(1)
      for (const read of seen) {
        const expected = [...revs].filter(([, rev]) => rev <= read.revision).map(([seq]) => seq).toSorted((a, b) => a - b)
        expect(read.seqs, `read at revision ${read.revision}`).toEqual(expected)
      }
      // the same rows from every writer at once: one transaction changes them, the others change nothing
      const before = (await revisionOf(reader, 'busy'))!
      const shared = [message('busy', 9_000, 'the same row from every writer'), message('busy', 9_001, 'and another')]
      const results = await Promise.all(writers.map(writer => writer.append(shared)))
      expect(results.filter(result => result.written + result.replaced > 0)).toHaveLength(1)
      expect(await revisionOf(reader, 'busy')).toBe(before + 1)
    } finally {
      await Promise.all([...writers, reader].map(opened => opened.close()))
    }
  })

  it.runIf(target.name === 'postgres')('a bulk copy stamps the rows it copies and bumps the session it fills', async () => {
    const copying = await ShadowStore.open(target.location())
    try {
      await copying.append([message('from', 1, 'the source row'), message('from', 2, 'another')])
      await copying.registerSession({ sessionId: 'into' })
      expect(await revisionOf(copying, 'into')).toBe(0)
      const bulk = await (copying.backend as PostgresBackend).beginBulkLoad()
      expect(await bulk.copySession('from', 'into', 1)).toBe(2)
      await bulk.end()
      expect(await changes(copying, 'into', 0)).toMatchObject({ revision: 1, rows: [{ seq: 1 }, { seq: 2 }] })
      expect(await revisionOf(copying, 'from')).toBe(1)
    } finally {
      await copying.close()
    }
  })

  it(`opens a store of the previous schema (SQLite v6, PostgreSQL ${PG_SCHEMA_VERSION - 1}) upgraded: its rows at rev 0, all read since -1`, async () => {
    let location: string
    let dir: ReturnType<typeof tempDir> | undefined
    const json = (seq: number, text: string): string => JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text }] } })
    if (target.name === 'sqlite') {
      // a v6 file as v6 code made it: its migrations, its rows (plain event JSON, as v3 wrote them, still read by v6)
      dir = tempDir()
      location = join(dir.path, 'v6.db')
      const raw = new DatabaseSync(location)
      // v4 and v5 fill their columns through these (on no rows here)
      raw.function('compact_event', { varargs: true }, () => '')
      raw.function('referred_days', { varargs: true }, () => '[]')
      for (const migration of MIGRATIONS.filter(entry => entry.version <= 6)) raw.exec(migration.sql)
      raw.exec("INSERT INTO meta(key, value) VALUES ('schema_version', '6')")
      raw.prepare('INSERT INTO sessions(session_id, tag, message_count, last_seq) VALUES (?, ?, 2, 2)').run('old', sessionTag('old'))
      const insert = raw.prepare("INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, time, tokens, hash, event_json, event_bytes, text) VALUES ('old', ?, ?, 'user/message', 'user', 'user', ?, 1, ?, ?, ?, ?)")
      for (const [seq, text] of [[1, 'stored before revisions'], [2, 'also before']] as const) {
        insert.run(seq, `${sessionTag('old')}.${seq}`, 1_000 + seq, hashEventJson(json(seq, text)), json(seq, text), Buffer.byteLength(json(seq, text)), Buffer.from(text))
      }
      raw.close()
    } else {
      // the previous PostgreSQL schema: a store of it is this one without the revision columns
      location = target.location()
      const schema = new URL(location).searchParams.get('schema')!
      const made = await ShadowStore.open(location)
      await made.append([message('old', 1, 'stored before revisions'), message('old', 2, 'also before')])
      await made.close()
      await (target as PostgresTarget).sql(`
        ALTER TABLE ${schema}.messages DROP COLUMN rev;
        ALTER TABLE ${schema}.sessions DROP COLUMN revision, DROP COLUMN removed_rev;
        UPDATE ${schema}.meta SET value = '${PG_SCHEMA_VERSION - 1}' WHERE key = 'schema_version'`)
      await expect(ShadowStore.open(location, { readOnly: true })).rejects.toMatchObject({ code: 'SCHEMA_TOO_OLD' })
    }
    const upgraded = await ShadowStore.open(location)
    try {
      expect((await upgraded.stats()).schemaVersion).toBe(target.name === 'sqlite' ? SCHEMA_VERSION : PG_SCHEMA_VERSION)
      expect(await changes(upgraded, 'old', -1)).toMatchObject({ revision: 0, removedRev: 0, rows: [{ seq: 1, text: 'stored before revisions' }, { seq: 2, text: 'also before' }] })
      expect(await changes(upgraded, 'old', 0)).toMatchObject({ revision: 0, removedRev: 0, rows: [], events: [] })
      expect(await revsOf(upgraded, 'old')).toEqual(new Map([[1, 0], [2, 0]]))
      await upgraded.append([message('old', 3, 'the first row after the upgrade')])
      expect(await changes(upgraded, 'old', 0)).toMatchObject({ revision: 1, rows: [{ seq: 3 }] })
      expect(await upgraded.integrityCheck()).toEqual([])
    } finally {
      await upgraded.close()
      dir?.cleanup()
    }
  })
})
