/**
 * The `dsh-shadow` setup commands a user runs from the root README (install, try, doctor) against
 * the real dsh 0.1.0-rc.8 launcher: a profile whose capture row names another store, and a profile
 * patch the user broke. Needs `npm run build` first (`npm test` does) and the npm registry (the
 * profile install fetches the package's own dependencies).
 */
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launcherHome } from '@dsh-shadow/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../..', import.meta.url))
const cli = join(repo, 'packages/cli/bin/dsh-shadow.js')
const launcherBin = fileURLToPath(new URL('../node_modules/.bin', import.meta.url))

let work: string
let home: string
let env: NodeJS.ProcessEnv

function shadow(args: readonly string[]): { code: number; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd: work, env, encoding: 'utf8', timeout: 300_000 })
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr }
}

beforeAll(() => {
  ;({ work, home, env } = launcherHome(repo, 'dsh-shadow-setup-'))
  // the launcher a user installs with npm install -g, and this Node, first on PATH
  env = { ...env, PATH: `${launcherBin}:${join(process.execPath, '..')}:${env['PATH'] ?? ''}` }
  const packed = spawnSync(process.execPath, [join(repo, 'scripts/pack.mjs')], { cwd: repo, encoding: 'utf8' })
  expect(packed.status, packed.stderr).toBe(0)
  const installed = shadow(['--home', home, 'install', '--profile', 'headless', '--package', packed.stdout.trim().split('\n').at(-1)!])
  expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0)
}, 300_000)

/** Run with `lines` appended to the headless profile patch, then put the patch back as it was. */
function withPatchLines<T>(lines: string, run: (patch: string) => T): T {
  const patch = join(home, 'profiles', 'headless', 'cordis.patch.yml')
  const before = readFileSync(patch, 'utf8')
  appendFileSync(patch, lines)
  try {
    return run(patch)
  } finally {
    writeFileSync(patch, before)
  }
}

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe('dsh-shadow install, try and doctor on the real launcher', () => {
  it('try names the option dsh refused in a row of the user\'s, not only "4 entries did not activate"', () => {
    withPatchLines('- id: shadow-capture\n  config: { retention: { maxAge: 30 } }\n', () => {
      const tried = shadow(['--home', home, 'try'])
      expect(tried.code).toBe(1)
      expect(tried.stderr).toContain('dsh-shadow-context/rows/capture: TypeError: ShadowCaptureConfig.retention: unknown option "maxAge"')
    })
  })

  it('doctor names a misspelt option of our row, which dsh --dump-config composes without building the row', () => {
    withPatchLines('- id: shadow-capture\n  config: { retention: { maxAge: 30 } }\n', patch => {
      const checked = shadow(['--home', home, 'doctor', '--profile', 'headless'])
      // it said "doctor: everything is in place", and the first session failed
      expect(checked.code, checked.stdout).toBe(1)
      const line = checked.stdout.split('\n').find(text => text.includes('row options'))!
      expect(line).toMatch(/^FAIL  headless: row options: row shadow-capture \(dsh-shadow-context\/rows\/capture\): ShadowCaptureConfig\.retention: unknown option "maxAge"/)
      expect(line).toContain(`fix: correct the option in the row's config in ${patch}`)
    })
    withPatchLines('- id: shadow-capture\n  config: { retention: { maxAgeDays: 30 } }\n', () => {
      const checked = shadow(['--home', home, 'doctor', '--profile', 'headless'])
      expect(checked.code, checked.stdout).toBe(0)
      expect(checked.stdout).toContain('ok    headless: row options: 3 row(s) of ours take their options')
    })
  })

  it('try in a home without the install tells the install command for that home', () => {
    const other = join(work, 'other-home')
    const tried = shadow(['--home', other, 'try'])
    expect(tried.code).toBe(4)
    expect(tried.stderr).toContain(`run: dsh-shadow install --profile headless --dsh-home ${other}`)
  })

  it('try with --store shows the session in that store (the capture row names it), not the default file', () => {
    const other = join(work, 'team.db')
    // the user's row after our block, as the root README shows for recall's scope
    withPatchLines(`- id: shadow-capture\n  config: { path: ${JSON.stringify(other)} }\n`, () => {
      const tried = shadow(['--home', home, '--store', other, 'try'])
      expect(tried.code, `${tried.stdout}\n${tried.stderr}`).toBe(0)
      expect(existsSync(other)).toBe(true)
      expect(existsSync(join(home, 'shadow-context', 'shadow.db'))).toBe(false)
      // the timeline and the search it prints read the store the session went to
      expect(tried.stdout).toMatch(/saved: \d+ checkpoint\(s\)/)
      expect(tried.stdout).toMatch(/\d+ of \d+ matches/)
      expect(tried.stdout).toContain('5433')
      // the commands it prints for the user to copy read that store too (they named the default one)
      const session = /\$ dsh-shadow .*timeline (\S+)/.exec(tried.stdout)![1]!
      // (the home is this environment's $DSH_HOME: a copy finds it without --home)
      const same = `dsh-shadow --store ${other}`
      expect(tried.stdout).toContain(`$ ${same} timeline ${session}\n`)
      expect(tried.stdout).toContain(`$ ${same} search --session ${session} staging database port\n`)
      expect(tried.stdout).toContain(`remove it with: ${same} forget ${session}\n`)
      // the tool row whose snippet shows 5433 (from its call's arguments) is found with --role tool too (0 hits before)
      const tool = shadow(['--store', other, 'search', '5433', '--role', 'tool', '--session', session])
      expect(tool.code, tool.stderr).toBe(0)
      expect(tool.stdout).toMatch(/^[1-9]\d* of /)
      expect(tool.stdout).toMatch(/ {2}tool:\w+/)
    })
  })

  it('says what dsh could not read when the user\'s patch is broken (try and doctor), not the last line of a stack trace', () => {
    // a mapping after the row list: YAML that dsh cannot parse
    withPatchLines('shadow-context/capture:\n  path: /tmp/elsewhere.db\n', patch => {
      const tried = shadow(['--home', home, 'try'])
      expect(tried.code).toBe(1)
      expect(tried.stderr).toContain('failed to parse')
      expect(tried.stderr).toContain(patch)
      expect(tried.stderr).not.toMatch(/\| Node\.js v\d/)
      const checked = shadow(['--home', home, 'doctor', '--profile', 'headless'])
      expect(checked.code).toBe(1)
      const line = checked.stdout.split('\n').find(text => text.includes('composed config'))!
      expect(line).toContain('failed to parse')
      expect(line).toContain(`fix: correct the YAML of ${patch}`)
    })
  })
})
