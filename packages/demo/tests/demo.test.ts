/** The README's main job, as a user runs it: offline, to completion, and it finds the early decisions. */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

describe('demo', () => {
  it('runs offline to completion and answers from recalled originals', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-demo-test-'))
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url))
    const env: NodeJS.ProcessEnv = { ...process.env, DSH_SHADOW_DEMO_HOME: home, DSH_SHADOW_DEMO_TURNS: '80', NO_COLOR: '1' }
    delete env['DEEPSEEK_API_KEY']
    const run = spawnSync(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', main], { encoding: 'utf8', env })
    rmSync(home, { recursive: true, force: true })
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
    expect(run.stdout).toContain('scripted model (offline)')
    expect(run.stdout).toMatch(/⟳ \[Shadow Context checkpoint \S+\.c1/)
    expect(run.stdout).toContain('move the staging database to port 5433')
    expect(run.stdout).toContain('applied migration 0007_orders_add_refund_state')
    expect(run.stdout).toContain('缓存过期时间统一改成九十秒')
    expect(run.stdout).toMatch(/\(0 LLM calls spent on them\)/)
    expect(run.stdout).toContain('none lost')
    expect(run.stdout).toContain('npm run -s shadow -- --home')
  })
})
