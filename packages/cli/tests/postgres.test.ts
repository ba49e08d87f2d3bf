/** The real `dsh-shadow` binary against a store on a real PostgreSQL server (`--store postgres://…`). */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { codingSession, DshHarness, ScriptedModel, startPostgres, type PostgresServer } from '@dsh-shadow/testing'
import { ShadowCapture, ShadowCompactionEngine } from 'dsh-shadow-context'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const BIN = fileURLToPath(new URL('../bin/dsh-shadow.js', import.meta.url))
let home: string
let server: PostgresServer
let store: string

function cli(...args: string[]): { code: number; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, '--home', home, ...args], { encoding: 'utf8', env: { ...process.env, DSH_HOME: '' } })
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr }
}

beforeAll(async () => {
  server = await startPostgres()
  home = mkdtempSync(join(tmpdir(), 'dsh-shadow-cli-pg-'))
  store = server.storeDsn('cli')
  const scenario = codingSession({ turns: 30, seed: 12 })
  const harness = await DshHarness.create({
    home, invariants: false, tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 16_000 }),
    plugins: dshHome => [{ plugin: ShadowCapture, config: { home: dshHome, path: store } }],
    compaction: { plugin: ShadowCompactionEngine, config: {} },
  })
  const agent = await harness.createAgent({ sessionId: 'cli-pg-session' })
  await harness.play(agent, scenario.turns)
  await harness.dispose({ keepHome: true })
})

afterAll(() => {
  server?.stop()
  if (home !== undefined) rmSync(home, { recursive: true, force: true })
})

describe('dsh-shadow --store postgres://', () => {
  it('verifies, lists the sessions and reports the stats of a PostgreSQL store', () => {
    expect(cli('--store', store, 'verify').code).toBe(0)
    const stats = cli('--json', '--store', store, 'stats')
    expect(stats.code, stats.stderr).toBe(0)
    expect((JSON.parse(stats.stdout) as { messages: number }).messages).toBeGreaterThan(0)
    expect(cli('--store', store, 'sessions').stdout).toContain('cli-pg-session')
  })

  it('refuses a mistyped connection string as --store (usage), never echoing it nor creating a file named after it', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-shadow-cli-cwd-'))
    try {
      for (const typo of [`postgres:/writer:hunter2-secret@127.0.0.1:${server.port}/postgres`, 'postgresql:writer:hunter2-secret@db/x', 'mysql://writer:hunter2-secret@db/x']) {
        for (const command of [['stats'], ['verify'], ['repair', '--all']]) {
          const result = spawnSync(process.execPath, [BIN, '--home', home, '--store', typo, ...command], { encoding: 'utf8', cwd, env: { ...process.env, DSH_HOME: '' } })
          expect(result.status, `${command.join(' ')}: ${result.stderr}`).toBe(2)
          expect(`${result.stdout}${result.stderr}`).not.toContain('hunter2')
          expect(result.stderr).toMatch(/postgres:\/\//)
        }
      }
      expect(readdirSync(cwd)).toEqual([])
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it('says a schema holds no store, and refuses --fresh for a database store', () => {
    const absent = cli('--store', server.storeDsn('nothing_here'), 'stats')
    expect(absent.code).toBe(4)
    expect(absent.stderr).toMatch(/no shadow store at postgres:/)
    const fresh = cli('--store', store, 'repair', '--all', '--fresh')
    expect(fresh.code).toBe(2)
    expect(fresh.stderr).toMatch(/--fresh sets a store file aside/)
  })
})
