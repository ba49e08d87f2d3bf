/**
 * A throwaway dsh home for tests that drive the real `dsh` launcher: `dsh plugin` runs pnpm from
 * PATH (a user installs it; tests provide the repository's pinned one through npx), telemetry off,
 * no provider keys, so nothing can leave the machine.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface LauncherHome {
  /** Temporary folder holding the home and the pnpm shim; remove it when done. */
  readonly work: string
  /** The dsh home (DSH_HOME). */
  readonly home: string
  /** Environment for launcher processes. */
  readonly env: NodeJS.ProcessEnv
}

export function launcherHome(repo: string, prefix: string): LauncherHome {
  const work = mkdtempSync(join(tmpdir(), prefix))
  const home = join(work, 'home')
  mkdirSync(home, { recursive: true })
  const pnpm = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { packageManager: string }).packageManager
  const bin = join(work, 'bin')
  mkdirSync(bin)
  writeFileSync(join(bin, 'pnpm'), `#!/bin/sh\nexec npx --yes ${pnpm} "$@"\n`)
  chmodSync(join(bin, 'pnpm'), 0o755)
  const env: NodeJS.ProcessEnv = { ...process.env, DSH_HOME: home, PATH: `${bin}:${join(repo, 'node_modules/.bin')}:${process.env['PATH'] ?? ''}`, DSH_TELEMETRY_DISABLED: '1', NODE_OPTIONS: '' }
  for (const key of ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) delete env[key]
  return { work, home, env }
}

/**
 * The profile layer every launcher test needs: the rc.8 HMR workaround (the published launcher
 * crashes without the hmr row), the DeepSeek row off, an offline provider row, and the scripted
 * route as the default model. `extra` lines are appended (our own rows, preset defaults).
 */
export function launcherPatch(provider: { readonly id: string; readonly path: string; readonly config: string }, extra: readonly string[] = []): string {
  return [
    '- id: hmr',
    '  disabled: false',
    '  config: { root: [] }',
    '- id: llm-deepseek',
    '  disabled: true',
    '- insert:',
    `    - id: ${provider.id}`,
    `      name: ${provider.path}`,
    `      config: ${provider.config}`,
    '- id: agent-default-model',
    '  config: { provider: scripted, model: tiny }',
    ...extra,
  ].join('\n')
}
