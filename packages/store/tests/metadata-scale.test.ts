/**
 * A long-lived store's metadata at scale: tens of thousands of sessions, checkpoints and forks.
 * Retention (which capture runs in line with its writes) and forget walk that metadata; none of it
 * may grow quadratically. The fixtures are written with SQL straight into a fresh store's file
 * (tens of thousands of rows in milliseconds); what is measured goes through the store's API.
 */
import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { tempDir } from './helpers.ts'
import { postgresTarget } from './targets.ts'
import { counted, restoreDrivers } from './work.ts'

const DAY = 86_400_000
const BASE = Date.UTC(2026, 0, 1)

/**
 * `count` sessions s0..s<count-1> of two rows each in workspaces w0..w9; seq 0 of each is elided by
 * its checkpoint s<i>.c1 (a retention candidate). With `chain`, each session is a fork of the previous one.
 */
async function seedSessions(path: string, count: number, options: { chain?: boolean; forksOf?: string } = {}): Promise<void> {
  await (await ShadowStore.open(path)).close()
  const db = new DatabaseSync(path)
  try {
    db.exec('BEGIN')
    db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
      INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, workspace, message_count, last_seq, first_time, last_time)
      SELECT 's' || i, 't' || i, CASE WHEN ? = 1 AND i > 0 THEN 's' || (i - 1) WHEN ? IS NOT NULL AND i > 0 THEN ? END, CASE WHEN ? = 1 OR ? IS NOT NULL THEN 1 END,
        'w' || (i % 10), 2, 1, ? + i, ? + i FROM n
    `).run(count, options.chain === true ? 1 : 0, options.forksOf ?? null, options.forksOf ?? null, options.chain === true ? 1 : 0, options.forksOf ?? null, BASE, BASE)
    db.prepare(`
      INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, time, tokens, hash, event_json, text, elided_by, event_bytes)
      SELECT s.session_id, k.seq, s.tag || '.' || k.seq, 'user/message', 'user', 'user', s.first_time + k.seq, 3, 'h', '{}', CAST('row of ' || s.session_id AS BLOB),
        CASE WHEN k.seq = 0 THEN s.session_id || '.c1' END, 2
      FROM sessions s, (SELECT 0 AS seq UNION ALL SELECT 1) k
    `).run()
    db.prepare(`
      INSERT INTO checkpoints(checkpoint_id, session_id, engine, status, replace_seq, shadowed_seqs, message_count, created_at)
      SELECT session_id || '.c1', session_id, 'test', 'committed', 1, '[0]', 1, first_time FROM sessions
    `).run()
    db.exec('COMMIT')
  } finally {
    db.close()
  }
}

const dirs: Array<{ cleanup(): void }> = []
afterEach(() => { for (const dir of dirs.splice(0)) dir.cleanup() })

function storePath(): string {
  const dir = tempDir('shadow-metadata-')
  dirs.push(dir)
  return join(dir.path, 'shadow.db')
}

/** Seconds `run` takes. */
async function seconds(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await run()
  return (performance.now() - start) / 1000
}

/** A first retention pass over seedSessions' `count` checkpoints: every one expires, quickly (a generous guard), once. */
async function expectFirstPass(store: ShadowStore, count: number): Promise<void> {
  const policy = { maxAgeMs: DAY, now: BASE + 2 * DAY }
  const dry = await store.gc({ ...policy, dryRun: true })
  let report: Awaited<ReturnType<ShadowStore['gc']>> | undefined
  // the work, not the time (7 s at load 4 on 2 cores, 1 s idle): a transaction per checkpoint was
  // `count` of them (8.3 s for 40k idle); batches of a few hundred are count / 256 or so
  const begun = (await counted(async () => { report = await store.gc(policy) })).writeTransactions
  expect(begun).toBeGreaterThan(0)
  expect(begun).toBeLessThan(count / 100)
  expect([report!.expired.length, report!.rows, report!.bytes]).toEqual([count, count, dry.bytes])
  expect(report!.expired.map(entry => entry.checkpointId)).toEqual(dry.expired.map(entry => entry.checkpointId))
  for (const id of ['s0', `s${count / 2}`, `s${count - 1}`]) {
    expect(await store.checkpoint(`${id}.c1`)).toMatchObject({ expiredRows: 1, expiredAt: policy.now })
    expect((await store.read({ sessionId: id })).map(row => [row.seq, row.expiredAt])).toEqual([[0, policy.now], [1, null]])
  }
  expect((await store.gc(policy)).expired).toEqual([])
}

describe('retention over 20k sessions of one checkpoint each (SQLite)', () => {
  it('lists, chooses and reports every candidate without scanning the sessions per row or the candidates per choice', async () => {
    const path = storePath()
    await seedSessions(path, 20_000)
    const store = await ShadowStore.open(path)
    try {
      // before: 34 s to list the candidates (every elided row scanned every session for forks), then
      // seconds more to choose (a scan of the candidate list per taken checkpoint); a generous guard
      let report: Awaited<ReturnType<ShadowStore['gc']>> | undefined
      expect(await seconds(async () => { report = await store.gc({ maxAgeMs: DAY, now: BASE + 2 * DAY, dryRun: true }) })).toBeLessThan(5)
      expect(report!.expired).toHaveLength(20_000)
      expect(report!.expired.slice(0, 2).map(entry => entry.checkpointId)).toEqual(['s0.c1', 's1.c1'])
      expect(await seconds(async () => { report = await store.gc({ sessionBytes: 0, now: BASE, dryRun: true }) })).toBeLessThan(5)
      expect(new Set(report!.expired.map(entry => entry.reason))).toEqual(new Set(['session']))
      expect(report!.overBudget).toHaveLength(20_000)
      // 2,000 sessions a workspace: the workspace's candidates go oldest first
      expect(await seconds(async () => { report = await store.gc({ workspaceBytes: 0, now: BASE, dryRun: true }) })).toBeLessThan(5)
      expect(report!.expired).toHaveLength(20_000)
      expect(report!.expired.slice(0, 3).map(entry => entry.checkpointId)).toEqual(['s0.c1', 's10.c1', 's20.c1'])
    } finally {
      await store.close()
    }
  }, 120_000)
})

describe('a first retention pass over 40k checkpoints (SQLite)', () => {
  it('expires them in a few transactions, not one commit each', async () => {
    const path = storePath()
    await seedSessions(path, 40_000)
    const store = await ShadowStore.open(path)
    try {
      // indexed, as appended rows are: each expiry then deletes index entries
      await store.reindex()
      // before: 8.3 s (a transaction per checkpoint), now ~1 s
      await expectFirstPass(store, 40_000)
    } finally {
      await store.close()
    }
  }, 120_000)
})

describe('forget in a store of many forks (SQLite)', () => {
  it('finds the forks of a chain 40k deep without a scan of every session per level', async () => {
    const path = storePath()
    await seedSessions(path, 40_000, { chain: true })
    const store = await ShadowStore.open(path)
    try {
      let refused: unknown
      expect(await seconds(async () => { refused = await store.forget('s0').catch((error: unknown) => error) })).toBeLessThan(5)
      expect(refused).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('has 39999 fork(s) (s1, s2, s3, s4, s5, …)') })
    } finally {
      await store.close()
    }
  }, 120_000)

  it('finds the forks of forks of one parent with 60k children without a scan of the forks per session', async () => {
    const path = storePath()
    await seedSessions(path, 60_000, { forksOf: 's0' })
    const store = await ShadowStore.open(path)
    try {
      // a grandchild per child, so the second level asks about 60k parents at once
      await store.registerSession({ sessionId: 'g1', parentSessionId: 's59999', forkSeq: 1 })
      let refused: unknown
      expect(await seconds(async () => { refused = await store.forget('s0').catch((error: unknown) => error) })).toBeLessThan(5)
      expect(refused).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('has 60000 fork(s)') })
      const report = await store.forget('s59999', { force: true })
      expect(report.forgotten).toEqual(['s59999', 'g1'])
    } finally {
      await store.close()
    }
  }, 120_000)
})

describe('a first retention pass over 20k checkpoints (PostgreSQL)', () => {
  const target = postgresTarget()
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('expires them in a few transactions, not one each', async () => {
    const location = target.location()
    await (await ShadowStore.open(location)).close()
    const schema = new URL(location).searchParams.get('schema')!
    await target.sql(`INSERT INTO "${schema}".sessions(session_id, tag, workspace, message_count, last_seq, first_time, last_time)
      SELECT 's' || i, 't' || i, 'w' || (i % 10), 2, 1, $1::bigint + i, $1::bigint + i FROM generate_series(0, 19999) i`, [BASE])
    await target.sql(`INSERT INTO "${schema}".messages(session_id, seq, shadow_id, event_type, role, source_kind, time, tokens, hash, event_json, text, elided_by, event_bytes, words, grams)
      SELECT s.session_id, k, s.tag || '.' || k, 'user/message', 'user', 'user', s.first_time + k, 3, 'h', '\\x'::bytea, convert_to('row of ' || s.session_id, 'UTF8'),
        CASE WHEN k = 0 THEN s.session_id || '.c1' END, 2, ''::tsvector, '' FROM "${schema}".sessions s, generate_series(0, 1) k`)
    await target.sql(`INSERT INTO "${schema}".checkpoints(checkpoint_id, session_id, engine, status, replace_seq, shadowed_seqs, message_count, created_at)
      SELECT session_id || '.c1', session_id, 'test', 'committed', 1, '[0]', 1, first_time FROM "${schema}".sessions`)
    const store = await ShadowStore.open(location)
    try {
      // before: 15 s (a transaction per checkpoint, each three statements), now ~0.7 s
      await expectFirstPass(store, 20_000)
    } finally {
      await store.close()
    }
  }, 120_000)
})

describe('the fork index of a SQLite file made without it', () => {
  it('is built at the next writable open, with no schema version change; a read-only open works without it', async () => {
    const path = storePath()
    await (await ShadowStore.open(path)).close()
    const indexes = (): string[] => {
      const db = new DatabaseSync(path)
      try {
        return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'sessions_parent'").all() as Array<{ name: string }>).map(row => row.name)
      } finally {
        db.close()
      }
    }
    expect(indexes()).toEqual(['sessions_parent'])
    const db = new DatabaseSync(path)
    db.exec('DROP INDEX sessions_parent')
    db.close()
    const reader = await ShadowStore.open(path, { readOnly: true })
    const version = (await reader.stats()).schemaVersion
    expect((await reader.gc({ maxAgeMs: 0, dryRun: true })).expired).toEqual([])
    await reader.close()
    expect(indexes()).toEqual([])
    const writer = await ShadowStore.open(path)
    expect((await writer.stats()).schemaVersion).toBe(version)
    await writer.close()
    expect(indexes()).toEqual(['sessions_parent'])
  })
})

afterAll(restoreDrivers)
