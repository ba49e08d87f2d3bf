/**
 * Four dsh processes (standing in for four hosts, each with its own dsh home) capture and compact
 * their sessions concurrently into ONE PostgreSQL store; one is killed with SIGKILL in the middle of
 * a compaction pass (between the shadow commit and the surface replace). Then, per session:
 *  - wrongly elided: checkpoints of the persisted log whose originals the store does not hold
 *    exactly, checked on the store as the processes left it (before any repair);
 *  - a fresh process resumes each session (its log must replay, capture reconciles), and the store
 *    must equal the log: nothing lost, nothing duplicated or stale.
 */
import { rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShadowStore } from '@dsh-shadow/store'
import { startPostgres, type PostgresServer } from '@dsh-shadow/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { child, wronglyElided } from './fixtures/crash-driver.ts'

let server: PostgresServer
const homes: string[] = []
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(() => {
  server?.stop()
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

const WRITERS = 4
const TURNS = 30

describe('four dsh processes writing one PostgreSQL store', () => {
  it('lose, duplicate and wrongly elide nothing when one is killed mid-pass', async () => {
    const store = server.storeDsn('shared')
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', SHADOW_STORE: store }
    delete env['DSH_SHADOW_FAILPOINT']
    const writers = Array.from({ length: WRITERS }, (_, index) => {
      const home = mkdtempSync(join(tmpdir(), `shadow-host${index}-`))
      homes.push(home)
      return { home, sessionId: `host${index}-session` }
    })
    const started = Date.now()
    const runs = await Promise.all(writers.map((writer, index) =>
      // the first host dies at its first pass, after the shadow commit, before the surface replace
      child(writer.home, writer.sessionId, 'run', index === 0 ? { ...env, DSH_SHADOW_FAILPOINT: 'engine.before-replace:1' } : env, undefined, TURNS)))
    const runMs = Date.now() - started
    expect(runs[0]!.signal, runs[0]!.stderr.slice(0, 2_000)).toBe('SIGKILL')
    for (const run of runs.slice(1)) expect(run.code, run.stderr.slice(0, 2_000)).toBe(0)

    let wrong = 0
    let checkpoints = 0
    for (const writer of writers) {
      const elided = await wronglyElided(writer.home, writer.sessionId, store)
      wrong += elided.wrong
      checkpoints += elided.checked
    }
    let lost = 0
    let duplicated = 0
    let mismatched = 0
    let events = 0
    for (const writer of writers) {
      const verify = await child(writer.home, writer.sessionId, 'verify', env)
      expect(verify.code, verify.stderr.slice(0, 2_000)).toBe(0)
      const report = JSON.parse(verify.stdout.trim().split('\n').at(-1)!) as { missing: number[]; mismatched: number[]; extra: number[]; duplicated: number; events: number }
      lost += report.missing.length
      mismatched += report.mismatched.length
      duplicated += report.extra.length + report.duplicated
      events += report.events
    }
    const shared = await ShadowStore.open(store, { readOnly: true })
    const stats = await shared.stats()
    const problems = await shared.integrityCheck()
    await shared.close()
    console.log(`multi-writer: ${WRITERS} dsh processes x ${TURNS} turns into one PostgreSQL store in ${runMs} ms, host0 killed at engine.before-replace; ` +
      `${checkpoints} committed checkpoints checked, ${events} log events, ${stats.messages} stored rows in ${stats.sessions} sessions: lost=${lost} duplicated=${duplicated} mismatched=${mismatched} wrongly_elided=${wrong}`)
    expect(checkpoints).toBeGreaterThan(0)
    expect({ lost, duplicated, mismatched, wrong }).toEqual({ lost: 0, duplicated: 0, mismatched: 0, wrong: 0 })
    expect(stats.sessions).toBe(WRITERS)
    expect(problems).toEqual([])
  }, 300_000)
})
