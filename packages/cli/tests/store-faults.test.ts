/**
 * Store faults on a real dsh composition: a full store, a corrupt or truncated file, a missing
 * file, a read-only file and a lock held by another process. For each: compaction fails closed
 * (nothing leaves the surface), every turn completes, the failure shows in the projection and
 * the capture health, `dsh-shadow verify` says what is wrong, and after the fault is cleared
 * (or `dsh-shadow repair --fresh` has rebuilt the store) the next pass commits and the store
 * equals the dsh log. The binary runs from lib/ (`npm test` builds first).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Session } from '@deepseek-ai/dsh-session'
import { hashEventJson } from '@dsh-shadow/store'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { isCapturable, PROJECTION_KEY, ShadowCapture, ShadowCompactionEngine, ShadowProjection, ShadowRecall, type ShadowCaptureConfig, type ShadowContextView } from 'dsh-shadow-context'
import { afterEach, describe, expect, it } from 'vitest'

type Agent = Awaited<ReturnType<DshHarness['createAgent']>>

const BIN = fileURLToPath(new URL('../bin/dsh-shadow.js', import.meta.url))
const scenario = codingSession({ turns: 70, seed: 31, outputChars: 1_200 })
const cleanup: Array<() => Promise<void> | void> = []

afterEach(async () => {
  for (const step of cleanup.splice(0).toReversed()) await step()
})

function newHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'shadow-faults-'))
  cleanup.push(() => rmSync(home, { recursive: true, force: true }))
  return home
}

function storeFile(home: string): string {
  return join(home, 'shadow-context', 'shadow.db')
}

async function boot(home: string, capture: ShadowCaptureConfig = {}): Promise<DshHarness> {
  const harness = await DshHarness.create({
    home,
    invariants: false,
    tools: scenario.tools(),
    model: new ScriptedModel({ contextWindow: 32_000 }),
    plugins: dshHome => [
      { plugin: ShadowCapture, config: { home: dshHome, batchDelayMs: 20, busyTimeoutMs: 200, ...capture } },
      { plugin: ShadowRecall },
      { plugin: ShadowProjection },
    ],
    // pressure at 20% of the window: refused passes leave plenty of room before an overflow; small
    // passes allowed, so pressure asks for one as soon as it is over the threshold
    compaction: { plugin: ShadowCompactionEngine, config: { thresholdRatio: 0.2, retainRatio: 0.05, minRegionRatio: 0.05 } },
  })
  let disposed = false
  cleanup.push(async () => {
    if (!disposed) await harness.dispose({ keepHome: true })
  })
  const dispose = harness.dispose.bind(harness)
  harness.dispose = async options => {
    disposed = true
    await dispose(options)
  }
  return harness
}

function cli(home: string, ...args: string[]): { code: number; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, '--home', home, ...args], { encoding: 'utf8', env: { ...process.env, DSH_HOME: '' } })
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr }
}

interface Degraded {
  readonly refusals: string[]
  readonly view: ShadowContextView
}

/** Play turns against a faulty store: all complete, compaction is refused, nothing leaves the surface. */
async function playDegraded(harness: DshHarness, agent: Agent, from: number, to: number): Promise<Degraded> {
  const generation = agent.session.surface.replaceGeneration
  const firstSeq = agent.session.events.length
  await harness.play(agent, scenario.turns.slice(from, to), (_index, end) => {
    expect(end.data.reason.kind).toBe('completed')
  })
  const refusals = agent.session.events.slice(firstSeq).flatMap(event => (event.type === 'compaction/end' && event.data.error !== undefined ? [event.data.error] : []))
  expect(refusals.length, 'pressure should have asked for compaction').toBeGreaterThan(0)
  expect(agent.session.surface.replaceGeneration).toBe(generation)
  const view = harness.ctx.sessionProjections.snapshot(agent.session).values[PROJECTION_KEY] as ShadowContextView
  expect(view.active).toBe(true)
  expect(view.lastFailure).not.toBeNull()
  const failure = harness.ctx.shadowCapture.health.lastFailure
  console.log(`fault ${expect.getState().currentTestName?.split(' > ').at(-1)?.split(':')[0]}: ${to - from} turns completed, ${refusals.length} passes refused, 0 elided · capture ${failure?.code ?? '-'}: ${failure?.message.slice(0, 160) ?? '-'} · projection: ${view.lastFailure!.message.slice(0, 120)}`)
  return { refusals, view }
}

/**
 * Wait until the capture has the store open again. A broken store is retried at most every half
 * second and the open runs in a worker; scripted turns are faster than that, and under load all
 * of the recovered turns could end before the reopen (seen once: no pass committed in 20 turns).
 */
async function storeBack(harness: DshHarness): Promise<void> {
  const capture = harness.ctx.shadowCapture
  await expect.poll(async () => capture.opened().then(() => true, () => false), { timeout: 30_000, interval: 100 }).toBe(true)
  await capture.flush()
}

/** After recovery: the next passes commit and the store holds the visible log exactly. */
async function playRecovered(harness: DshHarness, agent: Agent, from: number, to: number): Promise<void> {
  const generation = agent.session.surface.replaceGeneration
  await harness.play(agent, scenario.turns.slice(from, to), (_index, end) => {
    expect(end.data.reason.kind).toBe('completed')
  })
  expect(agent.session.surface.replaceGeneration).toBeGreaterThan(generation)
  await expectStoreEqualsLog(harness, agent.session)
}

async function expectStoreEqualsLog(harness: DshHarness, session: Session): Promise<void> {
  const capture = harness.ctx.shadowCapture
  await capture.flush()
  const store = await capture.opened()
  const visible = session.events.filter(isCapturable)
  const rows = await store.read({ sessionId: session.id }, { limit: 100_000 })
  expect(rows.map(row => [row.seq, row.hash])).toEqual(visible.map(event => [event.seq, hashEventJson(JSON.stringify(event))]))
}

/** A session with some compacted history, then the harness is shut down (the store is closed). */
async function history(home: string, turns = 16): Promise<string> {
  const harness = await boot(home)
  const agent = await harness.createAgent({ sessionId: 'faulty-session' })
  await harness.play(agent, scenario.turns.slice(0, turns))
  expect(agent.session.surface.replaceGeneration).toBeGreaterThan(0)
  await harness.dispose({ keepHome: true })
  return agent.session.id
}

/** Make the store file read-only in a way that binds this process (root ignores file modes). */
function makeReadOnly(file: string): { how: string; undo(): void } | undefined {
  if (process.getuid?.() !== 0) {
    const mode = statSync(file).mode & 0o777
    spawnSync('chmod', ['0400', file])
    return { how: 'chmod 0400', undo: () => spawnSync('chmod', [mode.toString(8), file]) }
  }
  const immutable = spawnSync('chattr', ['+i', file])
  if (immutable.status === 0) return { how: 'chattr +i (running as root)', undo: () => spawnSync('chattr', ['-i', file]) }
  return undefined
}

describe('store faults on a real dsh session', () => {
  it('full store (maxBytes): fails closed with FULL, then catches up under a larger limit', async () => {
    const home = newHome()
    const harness = await boot(home, { maxBytes: 200_000 })
    const agent = await harness.createAgent({ sessionId: 'full-store' })
    // compaction works until the store fills up
    let turn = 0
    while (harness.ctx.shadowCapture.health.lastFailure === null && turn < 40) {
      await harness.play(agent, scenario.turns.slice(turn, turn + 1))
      await harness.ctx.shadowCapture.flush().catch(() => undefined)
      turn += 1
    }
    expect(harness.ctx.shadowCapture.health.lastFailure?.code).toBe('FULL')
    const degraded = await playDegraded(harness, agent, turn, turn + 14)
    expect(harness.ctx.shadowCapture.health.lastFailure?.code).toBe('FULL')
    expect(degraded.view.lastFailure!.message).toMatch(/shadow store|could not confirm/)
    expect(statSync(storeFile(home)).size).toBeLessThanOrEqual(200_000)
    await harness.dispose({ keepHome: true })

    const larger = await boot(home)
    const resumed = await larger.resume(agent.session.id)
    await playRecovered(larger, resumed, turn + 14, turn + 30)
    await larger.dispose({ keepHome: true })
    expect(cli(home, 'verify', agent.session.id).code).toBe(0)
  }, 120_000)

  it('corrupt file: the open fails CORRUPT, verify says so, repair --fresh rebuilds and the live process picks it up', async () => {
    const home = newHome()
    const sessionId = await history(home)
    const file = storeFile(home)
    const bytes = readFileSync(file)
    bytes.fill(0x5a, 0, 4096) // header and first page
    writeFileSync(file, bytes)

    const harness = await boot(home)
    const agent = await harness.resume(sessionId)
    await playDegraded(harness, agent, 16, 30)
    expect(harness.ctx.shadowCapture.health.lastFailure?.code).toBe('CORRUPT')

    const verify = cli(home, 'verify', sessionId)
    expect(verify.code).toBe(3)
    expect(verify.stderr).toMatch(/cannot open the shadow store .*corrupt/i)
    const repair = cli(home, 'repair', '--all', '--fresh')
    expect(repair.code, repair.stderr).toBe(0)
    expect(`${repair.stdout}${repair.stderr}`).toMatch(/set the old store aside/)

    // no restart: a call after the retry interval reopens the rebuilt store
    await storeBack(harness)
    await playRecovered(harness, agent, 30, 50)
    await harness.dispose({ keepHome: true })
    expect(cli(home, 'verify', sessionId).code).toBe(0)
  }, 120_000)

  it('truncated file: damage is detected, nothing is elided on it, repair --fresh rebuilds', async () => {
    const home = newHome()
    const sessionId = await history(home, 24)
    const file = storeFile(home)
    truncateSync(file, Math.floor(statSync(file).size * 0.4))

    const harness = await boot(home)
    const agent = await harness.resume(sessionId)
    await playDegraded(harness, agent, 24, 38)
    expect(['CORRUPT', 'UNAVAILABLE']).toContain(harness.ctx.shadowCapture.health.lastFailure?.code)
    await harness.dispose({ keepHome: true })

    const verify = cli(home, 'verify', sessionId)
    expect(verify.code).not.toBe(0)
    expect(cli(home, 'repair', '--all', '--fresh').code).toBe(0)
    const again = await boot(home)
    const resumed = await again.resume(sessionId)
    await playRecovered(again, resumed, 38, 56)
    await again.dispose({ keepHome: true })
    expect(cli(home, 'verify', sessionId).code).toBe(0)
  }, 120_000)

  it('missing file: deleted while dsh is down, the store is rebuilt from the log on resume', async () => {
    const home = newHome()
    const sessionId = await history(home)
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${storeFile(home)}${suffix}`, { force: true })
    expect(cli(home, 'verify', sessionId).code).toBe(4)

    const harness = await boot(home)
    const agent = await harness.resume(sessionId)
    await expectStoreEqualsLog(harness, agent.session)
    await playRecovered(harness, agent, 16, 30)
    await harness.dispose({ keepHome: true })
    expect(cli(home, 'verify', sessionId).code).toBe(0)
  }, 120_000)

  it('missing file: deleted while dsh runs, nothing more is elided until a restart rebuilds it', async () => {
    const home = newHome()
    const harness = await boot(home)
    const agent = await harness.createAgent({ sessionId: 'deleted-live' })
    await harness.play(agent, scenario.turns.slice(0, 10))
    await harness.ctx.shadowCapture.flush()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${storeFile(home)}${suffix}`, { force: true })
    const degraded = await playDegraded(harness, agent, 10, 26)
    expect(degraded.refusals.some(reason => reason.includes('deleted while open'))).toBe(true)
    await harness.dispose({ keepHome: true })

    const again = await boot(home)
    const resumed = await again.resume(agent.session.id)
    await playRecovered(again, resumed, 26, 44)
  }, 120_000)

  it('read-only file: writes are refused, compaction fails closed, and resumes once writable', async () => {
    const home = newHome()
    const sessionId = await history(home)
    const readOnly = makeReadOnly(storeFile(home))
    const harness = await boot(home)
    const agent = await harness.resume(sessionId)
    if (readOnly === undefined) {
      // No way to make a file read-only for this user here (root without chattr): refuse writes
      // through SQLite's own read-only switch instead, which fails the same way (SQLITE_READONLY).
      console.log('read-only fault: emulated with the store frozen (query_only); file modes do not bind this user')
      await (await harness.ctx.shadowCapture.opened()).setWritable(false)
    } else {
      console.log(`read-only fault: ${readOnly.how}`)
    }
    await playDegraded(harness, agent, 16, 30)
    expect(harness.ctx.shadowCapture.health.lastFailure?.code).toBe('UNAVAILABLE')
    expect(harness.ctx.shadowCapture.health.lastFailure?.message).toMatch(/readonly|read-only|unable to open|attempt to write/i)
    if (readOnly === undefined) await (await harness.ctx.shadowCapture.opened()).setWritable(true)
    else readOnly.undo()
    await storeBack(harness)
    await playRecovered(harness, agent, 30, 50)
  }, 120_000)

  it('locked by another process: writes time out as UNAVAILABLE, compaction fails closed, then catches up', async () => {
    const home = newHome()
    const sessionId = await history(home)
    // another process takes the write lock and keeps it until its stdin closes
    const holder = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', `
      import { DatabaseSync } from 'node:sqlite'
      const db = new DatabaseSync(${JSON.stringify(storeFile(home))})
      db.exec('BEGIN EXCLUSIVE')
      console.log('locked')
      process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0) })
      process.stdin.resume()
    `], { stdio: ['pipe', 'pipe', 'inherit'] })
    cleanup.push(() => {
      holder.kill('SIGKILL')
    })
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', chunk => {
        if (String(chunk).includes('locked')) resolve()
      })
      holder.on('exit', code => reject(new Error(`lock holder exited early (${code})`)))
    })

    const harness = await boot(home)
    const agent = await harness.resume(sessionId)
    await playDegraded(harness, agent, 16, 30)
    const failure = harness.ctx.shadowCapture.health.lastFailure
    expect(failure?.code).toBe('UNAVAILABLE')
    expect(failure?.message).toMatch(/locked|busy/i)
    expect(existsSync(storeFile(home))).toBe(true)

    await new Promise<void>(resolve => {
      holder.removeAllListeners('exit')
      holder.on('exit', () => resolve())
      holder.stdin.end()
    })
    await playRecovered(harness, agent, 30, 50)
  }, 120_000)
})
