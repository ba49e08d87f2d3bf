/**
 * Install Shadow Context into a real dsh 0.1.0-rc.8 launcher the way the README tells a user to,
 * boot the headless profile offline, and show that our engine — not compaction-basic — compacted.
 * Needs `npm run build` first (`npm test` does) and the npm registry (the profile install fetches
 * the package's own dependencies).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openDshLogs } from 'dsh-shadow-context'
import { ShadowStore } from '@dsh-shadow/store'
import { launcherHome, launcherPatch } from '@dsh-shadow/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../..', import.meta.url))
const launcher = fileURLToPath(new URL('../node_modules/@deepseek-ai/dsh/lib/bin.js', import.meta.url))
const provider = fileURLToPath(new URL('./fixtures/scripted-provider.mjs', import.meta.url))

let work: string
let home: string
let env: NodeJS.ProcessEnv

function run(args: readonly string[], cwd = work): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [launcher, ...args], { cwd, env, encoding: 'utf8', timeout: 300_000 })
}

beforeAll(() => {
  ;({ work, home, env } = launcherHome(repo, 'dsh-shadow-e2e-'))
})

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe('Shadow Context installed into the real dsh launcher', () => {
  it('replaces compaction-basic in the headless profile and compacts losslessly', () => {
    // 1. the package a user installs
    const packed = spawnSync(process.execPath, [join(repo, 'scripts/pack.mjs')], { cwd: repo, encoding: 'utf8' })
    expect(packed.stderr).toBe('')
    const tarball = packed.stdout.trim().split('\n').at(-1)!
    expect(existsSync(tarball)).toBe(true)

    // 2. dsh plugin --profile headless add -w <tarball>
    const added = run(['plugin', '--profile', 'headless', 'add', '-w', tarball])
    expect(added.status, added.stderr).toBe(0)
    const profile = join(home, 'profiles', 'headless')
    const installed = join(profile, 'node_modules', 'dsh-shadow-context')
    expect(existsSync(join(installed, 'package.json'))).toBe(true)

    // 3. the profile patch: our documented rows, plus this test's offline provider and the rc.8 HMR workaround
    const ours = readFileSync(join(installed, 'patches', 'headless.cordis.patch.yml'), 'utf8')
    writeFileSync(join(profile, 'cordis.patch.yml'), launcherPatch({ id: 'e2e-scripted-provider', path: provider, config: '{ contextWindow: 16000, steps: 14, padRepeat: 30 }' }, [ours]))
    const config = run(['--profile', 'headless', '--dump-config'])
    expect(config.status, config.stderr).toBe(0)
    expect(config.stdout).toContain('dsh-shadow-context/rows/engine')

    // 4. one headless task, offline
    const task = run(['--profile', 'headless', 'prune the CI caches and tell me which ports the items used'])
    expect(task.status, `${task.stdout}\n${task.stderr}`).toBe(0)
    expect(task.stdout).toContain('E2E-DONE')
    expect(task.stderr).toBe('')
  })

  it('left a shadow store whose checkpoints are ours, and a log with no compaction-basic summary', async () => {
    const logs = await openDshLogs(home)
    const [meta] = await logs.list()
    expect(meta).toBeDefined()
    const { events } = await logs.load(meta!.id)
    await logs.close()
    const summaries = events.filter(event => event.type === 'compaction/summary')
    console.log(`launcher session ${meta!.id}: ${events.length} events, ${summaries.length} compaction passes by ${[...new Set(summaries.map(event => event.type === 'compaction/summary' ? event.data.provider : ''))].join(', ')}`)
    expect(summaries.length).toBeGreaterThan(0)
    expect(summaries.every(event => event.type === 'compaction/summary' && event.data.provider === 'shadow-context')).toBe(true)
    expect(events.some(event => event.type === 'tool/call' && event.data.name === 'shadow_search')).toBe(true)

    const store = await ShadowStore.open(join(home, 'shadow-context', 'shadow.db'), { readOnly: true })
    const checkpoints = await store.checkpoints(meta!.id)
    expect(checkpoints.length).toBe(summaries.length)
    expect(checkpoints.every(checkpoint => checkpoint.engine === 'shadow-context' && checkpoint.footer !== null)).toBe(true)
    await store.close()

    // the installed CLI agrees: nothing lost, nothing stale
    const verify = spawnSync(process.execPath, [join(home, 'profiles', 'headless', 'node_modules', 'dsh-shadow-context', 'bin', 'dsh-shadow.js'), '--home', home, '--json', 'verify'], { encoding: 'utf8', env })
    expect(verify.status, verify.stderr).toBe(0)
    expect(JSON.parse(verify.stdout)).toMatchObject({ clean: true })
  })
})
