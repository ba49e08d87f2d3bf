/**
 * `dsh-shadow try`: one headless dsh task, offline, on the package's own scripted model
 * (`dsh-shadow-context/rows/try-model`, mounted by a `--patch` overlay, so the profile itself is
 * not changed), then what the shadow store holds about it. No provider key, no network.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { ShadowStore } from '@dsh-shadow/store'
import { CliError, EXIT } from './format.ts'
import { failureOf, PACKAGE, profileDir, profileManifest, run, which } from './profile.ts'
import type { SetupContext } from './setup.ts'

export const TRY_TASK = 'Prune the CI caches step by step, then tell me which port the staging database uses.'
const TRY_DONE = 'SHADOW-TRY-DONE'

const OVERLAY = [
  '# dsh-shadow try: an offline scripted model instead of DeepSeek, for this one run',
  '- id: llm-deepseek',
  '  disabled: true',
  '- insert:',
  '    - id: shadow-try-model',
  '      name: dsh-shadow-context/rows/try-model',
  '- id: agent-default-model',
  '  config: { provider: scripted, model: shadow-try }',
  '',
].join('\n')

/** Runs the task; returns the session id it left in the store. */
export async function tryOffline(ctx: SetupContext): Promise<string> {
  const env = { ...ctx.env, DSH_HOME: ctx.home }
  const dsh = which('dsh', env)
  if (dsh === undefined) throw new CliError('no `dsh` on PATH; install the launcher: npm install -g @deepseek-ai/dsh@0.1.0-rc.8', EXIT.unavailable)
  if (profileManifest(ctx.home, 'headless')?.dependencies?.[PACKAGE] === undefined) {
    // a home given with --home / --dsh-home: the install goes there too, not into the default one
    const where = ctx.home === resolve(resolveDshHome()) ? '' : ` --dsh-home ${ctx.home}`
    throw new CliError(`Shadow Context is not installed in ${profileDir(ctx.home, 'headless')}; run: dsh-shadow install --profile headless${where}`, EXIT.notFound)
  }
  const work = mkdtempSync(join(tmpdir(), 'dsh-shadow-try-'))
  try {
    const overlay = join(work, 'try.cordis.patch.yml')
    writeFileSync(overlay, OVERLAY)
    const workspace = join(work, 'project')
    mkdirSync(workspace)
    const started = Date.now()
    if (!ctx.output.json) ctx.output.out(`running: dsh --profile headless --patch <offline model> "${TRY_TASK}"`)
    const result = run(dsh, ['--profile', 'headless', '--patch', overlay, TRY_TASK], { cwd: workspace, env, timeoutMs: 300_000 })
    const answer = result.stdout.split('\n').find(line => line.includes(TRY_DONE))
    if (result.status !== 0 || answer === undefined) {
      throw new CliError(`the dsh task failed (exit ${result.status ?? result.signal}): ${failureOf(result)}; run dsh-shadow doctor`, EXIT.failure)
    }
    if (!ctx.output.json) ctx.output.out(`dsh answered in ${((Date.now() - started) / 1000).toFixed(1)} s: ${answer.replace(`${TRY_DONE}: `, '')}`)
    const store = await ShadowStore.open(ctx.storePath, { readOnly: true })
    try {
      const session = (await store.sessions()).find(candidate => candidate.workspace !== null && candidate.workspace.startsWith(work))
      if (session === undefined) throw new CliError(`the task ran but left no session in ${ctx.storePath}; run dsh-shadow doctor`, EXIT.failure)
      return session.sessionId
    } finally {
      await store.close()
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
