/**
 * The suite's own hygiene: every test file runs with DSH_HOME set to a fresh temp dir (the vitest
 * setup file packages/testing/src/test-home.ts), and that dir is gone when the file has finished,
 * so a run of the suite leaves nothing behind in the temp dir. Runs vitest on a small file of its
 * own in a child process whose TMPDIR is a dir this test owns, then looks at what is left there.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../..', import.meta.url))
const setup = join(repo, 'packages/testing/src/test-home.ts')
const vitest = join(repo, 'node_modules/vitest/vitest.mjs')
const root = mkdtempSync(join(tmpdir(), 'dsh-shadow-home-hygiene-'))

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('the per-file DSH_HOME of the test suite', () => {
  it('exists while a test file runs and is removed when it ends, in both pools', () => {
    const temp = join(root, 'tmp')
    const project = join(root, 'project')
    for (const dir of [temp, project]) mkdirSync(dir)
    // two files per pool, so a reused worker and a fresh one are both covered
    for (const name of ['a', 'b']) {
      writeFileSync(join(project, `${name}.spec.ts`), [
        `import { existsSync, writeFileSync } from 'node:fs'`,
        `import { join } from 'node:path'`,
        `import { expect, it } from 'vitest'`,
        `it('has a home', () => {`,
        `  const home = process.env['DSH_HOME']!`,
        `  expect(home.startsWith(${JSON.stringify(temp)})).toBe(true)`,
        `  expect(existsSync(home)).toBe(true)`,
        `  writeFileSync(join(home, 'written-by-a-test'), 'x')`,
        `})`,
      ].join('\n'))
    }
    for (const pool of ['forks', 'threads']) {
      writeFileSync(join(project, 'vitest.config.mjs'), `export default { test: { include: ['*.spec.ts'], pool: '${pool}', setupFiles: [${JSON.stringify(setup)}] } }\n`)
      const run = spawnSync(process.execPath, [vitest, 'run', '--root', project], {
        cwd: project, encoding: 'utf8', timeout: 120_000,
        env: { ...process.env, TMPDIR: temp, DSH_HOME: '', CI: 'true', FORCE_COLOR: '0' },
      })
      expect(run.status, `${pool}: ${run.stdout}\n${run.stderr}`).toBe(0)
      expect(run.stdout).toContain('2 passed')
      expect(readdirSync(temp).filter(name => name.startsWith('dsh-shadow-test-home-')), pool).toEqual([])
    }
  })
})
