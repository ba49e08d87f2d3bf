/**
 * A throwaway dsh home for tests that drive the real `dsh` launcher: `dsh plugin` runs pnpm from
 * PATH (a user installs it; tests provide the repository's pinned one through npx), telemetry off,
 * no provider keys, so nothing can leave the machine.
 */
import type { ChildProcess } from 'node:child_process'
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

/**
 * Wait until a `dsh web` process prints the URL it serves (every chunk it prints goes to `onOutput`
 * as well); rejects when it exits first or after `timeoutMs`.
 */
export function dshWebUrl(child: ChildProcess, onOutput: (text: string) => void = () => undefined, timeoutMs = 120_000): Promise<string> {
  let output = ''
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dsh web did not print its URL within ${timeoutMs / 1000} s:\n${output}`)), timeoutMs)
    const read = (chunk: Buffer): void => {
      output += chunk.toString('utf8')
      onOutput(chunk.toString('utf8'))
      const match = /dsh web: (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`dsh web exited (${code}) before serving:\n${output}`))
    })
  })
}

/** Stop a process group this test started (detached): SIGTERM, then SIGKILL after 10 s. */
export async function stopGroup(child: ChildProcess | undefined): Promise<void> {
  if (child?.pid === undefined || child.exitCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  process.kill(-child.pid, 'SIGTERM')
  await Promise.race([exited, new Promise(resolve => setTimeout(resolve, 10_000))])
  if (child.exitCode === null) process.kill(-child.pid, 'SIGKILL')
}
