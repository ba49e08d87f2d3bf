/**
 * kill -9 of a process in the middle of PostgreSQL maintenance (a reindex after its first page, a
 * VACUUM parked on a lock), then verify: the self-check is clean, every row is still found by its
 * own marker, the pass runs to the end when asked again (after the dead process's server backend
 * ends its VACUUM).
 */
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { markersFound, message, seedMarkers } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

const ROWS = 4_500

const seeded = (location: string): Promise<void> => seedMarkers(location, 'k', ROWS)
const searchable = (store: ShadowStore, count: number): Promise<number> => markersFound(store, 'k', ROWS, count)

/** A child process running `body` on the store (`store` is open), its exit signal once it ends. */
function child(location: string, body: string): { done: Promise<NodeJS.Signals | null>; kill(): void; output(): string } {
  // a short lock wait: its open meets the held lock too (the owed VACUUM), and gives up on it
  const script = `
    const { ShadowStore } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)})
    const store = await ShadowStore.open(${JSON.stringify(location)}, { busyTimeoutMs: 2_000 })
    ${body}
  `
  let output = ''
  const proc = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return { done: new Promise(resolve => proc.on('exit', (_code, signal) => resolve(signal))), kill: () => proc.kill('SIGKILL'), output: () => output }
}

async function verify(location: string): Promise<void> {
  const store = await ShadowStore.open(location)
  try {
    expect(await store.integrityCheck()).toEqual([])
    expect(await searchable(store, 45)).toBe(45)
    expect(await store.reindex()).toBe(ROWS)
    await store.vacuum()
    expect(await searchable(store, 45)).toBe(45)
    expect((await store.stats()).messages).toBe(ROWS)
  } finally {
    await store.close()
  }
}

describe('kill -9 during PostgreSQL maintenance', () => {
  it('a reindex killed after its first page leaves every row searchable; a new one completes', async () => {
    const location = target.server().storeDsn('kill_reindex')
    await seeded(location)
    const run = child(location, "await store.reindex(done => { if (done >= 2000) process.kill(process.pid, 'SIGKILL') })")
    expect(await run.done, run.output()).toBe('SIGKILL')
    await verify(location)
  })

  it('a VACUUM killed while it waits on a lock leaves the store whole; the next open vacuums and verifies', async () => {
    const location = target.server().storeDsn('kill_vacuum')
    await seeded(location)
    // dead rows for the VACUUM to clean, and a vacuum owed (as a redaction pass leaves it): every open runs one
    const store = await ShadowStore.open(location)
    await store.remove('k', [ROWS - 1])
    await store.append([message('k', ROWS - 1, `row marker${ROWS - 1} common words here`)])
    await store.close()
    await target.sql("INSERT INTO kill_vacuum.meta(key, value) VALUES ('vacuum_due', 'test')")
    const holder = new pg.Client({ connectionString: target.server().dsn })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query('LOCK TABLE kill_vacuum.messages IN SHARE UPDATE EXCLUSIVE MODE')
      const run = child(location, "console.log('open'); await store.vacuum(); console.log('vacuumed')")
      // its open ran the owed VACUUM (lock timeout: still owed), then vacuum() waits on the lock: killed there
      for (let waited = 0; ; waited += 1) {
        // (activity is read outside the holder's transaction: inside it, one snapshot of it is kept)
        const [{ n }] = await target.sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'VACUUM%'") as [{ n: number }]
        if (n > 0 && run.output().includes('open')) break
        expect(waited, run.output()).toBeLessThan(2_000)
        await sleep(10)
      }
      run.kill()
      expect(await run.done).toBe('SIGKILL')
      expect(run.output()).not.toContain('vacuumed')
    } finally {
      await holder.query('COMMIT')
      await holder.end()
    }
    await verify(location)
  })
})
