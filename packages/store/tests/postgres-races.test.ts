/**
 * Races between PostgreSQL writers and the store's other passes over the same rows (separate
 * stores = separate connection pools, as separate hosts would be). The counter race is staged with
 * a held row lock (deterministic); the pass races are loops that hit them in every run before the
 * fixes.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

/** Until `n` other backends wait on a lock (a statement of ours is parked where the test wants it). */
async function lockWaiters(client: pg.Client, n: number): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
    if (rows[0]!.n >= n) return
    await sleep(5)
  }
}

describe('PostgreSQL passes racing writers', () => {
  it('keeps a session counter exact when a removal recounts it while an append of it is committing', async () => {
    const location = target.server().storeDsn('race_remove')
    const [writer, remover] = await Promise.all([ShadowStore.open(location), ShadowStore.open(location)])
    await writer.append([message('r', 0, 'first'), message('r', 1, 'second'), message('z', 0, 'other session')])
    // an append bumps its sessions' counters in id order: holding 'z' pauses it right after it
    // bumped 'r', uncommitted — the moment a concurrent recount of 'r' must not overwrite
    const holder = new pg.Client({ connectionString: target.server().dsn })
    await holder.connect()
    await holder.query('BEGIN')
    await holder.query("SELECT 1 FROM race_remove.sessions WHERE session_id = 'z' FOR UPDATE")
    const appending = writer.append([message('r', 2, 'third'), message('z', 1, 'other again')])
    await lockWaiters(holder, 1)
    const removing = remover.remove('r', [0])
    await lockWaiters(holder, 2)
    await holder.query('COMMIT')
    await Promise.all([appending, removing])
    await holder.end()
    expect(await remover.integrityCheck()).toEqual([])
    expect((await remover.session('r'))!.messageCount).toBe(2)
    await Promise.all([writer.close(), remover.close()])
  })

  it('a redaction pass never writes back a row a writer replaced meanwhile', async () => {
    const location = target.server().storeDsn('race_redact')
    const writer = await ShadowStore.open(location, { redact: false })
    const rows = 1_500
    for (let start = 0; start < rows; start += 500) {
      await writer.append(Array.from({ length: 500 }, (_, index) => message('p', start + index, `row ${start + index} v1 password: hunter2-hunter2`)))
    }
    // the writer replaces rows (its policy: none) while another host's open runs the redaction pass
    const replaced = new Map<number, string>()
    const state = { running: true }
    const replacing = (async () => {
      for (let round = 0; state.running; round += 1) {
        const seq = (round * 7919) % rows
        const text = `row ${seq} v2 round ${round}`
        await writer.append([message('p', seq, text)])
        replaced.set(seq, text)
      }
    })()
    const redacting = await ShadowStore.open(location, { redact: {} })
    state.running = false
    await replacing
    expect(replaced.size).toBeGreaterThan(5)
    const stored = new Map((await writer.read({ sessionId: 'p' }, { limit: 10_000 })).map(row => [row.seq, row.text]))
    const lost = [...replaced].filter(([seq, text]) => stored.get(seq) !== text)
    expect(lost).toEqual([])
    // and every row not replaced was redacted
    expect([...stored].filter(([seq, text]) => !replaced.has(seq) && text.includes('hunter2'))).toEqual([])
    await Promise.all([writer.close(), redacting.close()])
  })

  it('a reindex never writes a replaced row\'s index from its old text', async () => {
    const location = target.server().storeDsn('race_reindex')
    const [writer, indexer] = await Promise.all([ShadowStore.open(location), ShadowStore.open(location)])
    const rows = 6_000
    for (let start = 0; start < rows; start += 1_000) {
      await writer.append(Array.from({ length: 1_000 }, (_, index) => message('x', start + index, `row ${start + index} alpha`)))
    }
    const replaced = new Set<number>()
    const state = { running: true }
    const replacing = (async () => {
      for (let round = 0; state.running; round += 1) {
        const seq = (round * 7919) % rows
        await writer.append([message('x', seq, `row ${seq} omega round ${round}`)])
        replaced.add(seq)
      }
    })()
    await indexer.reindex()
    state.running = false
    await replacing
    expect(replaced.size).toBeGreaterThan(5)
    const stale = await target.sql(`SELECT seq::int AS seq FROM race_reindex.messages WHERE seq = ANY($1::bigint[]) AND NOT (words @@ '''omega'''::tsquery)`, [[...replaced]])
    expect(stale).toEqual([])
    await Promise.all([writer.close(), indexer.close()])
  })

  it('leaves no rows without a session when another host forgets the session while an append of it commits', async () => {
    const location = target.server().storeDsn('race_forget')
    const [writer, forgetter] = await Promise.all([ShadowStore.open(location), ShadowStore.open(location)])
    await writer.append([message('f', 0, 'old row'), message('f', 1, 'old row two')])
    const holder = new pg.Client({ connectionString: target.server().dsn })
    await holder.connect()
    // a lock on an old row parks the forget after it locked the session, before it deletes rows;
    // the append (new rows only) then inserts and waits for the session the forget holds
    await holder.query('BEGIN')
    await holder.query("SELECT 1 FROM race_forget.messages WHERE session_id = 'f' AND seq = 0 FOR UPDATE")
    const forgetting = forgetter.forget('f')
    await lockWaiters(holder, 1)
    const appending = writer.append([message('f', 2, 'new row')])
    await lockWaiters(holder, 2)
    await holder.query('COMMIT')
    await Promise.all([forgetting, appending])
    await holder.end()
    expect(await forgetter.integrityCheck()).toEqual([])
    expect((await forgetter.read({ sessionId: 'f' })).map(row => row.text)).toEqual(['new row'])
    expect((await forgetter.session('f'))!.messageCount).toBe(1)
    await Promise.all([writer.close(), forgetter.close()])
  })
})
