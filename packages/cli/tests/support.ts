/** A dsh home written by a real dsh composition with Shadow Context, and the built binary to run against it. */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { ShadowCapture, ShadowCompactionEngine, ShadowRecall } from 'dsh-shadow-context'

export const BIN = fileURLToPath(new URL('../bin/dsh-shadow.js', import.meta.url))

export interface CliHome {
  readonly home: string
  readonly sessionId: string
  readonly facts: ReturnType<typeof codingSession>['facts']
}

/** Play a 60-turn coding session that compacts and recalls once; keep its home. */
export async function cliHome(prefix: string, sessionId = 'cli-session-0001'): Promise<CliHome> {
  const home = mkdtempSync(join(tmpdir(), prefix))
  const scenario = codingSession({ turns: 60, seed: 44 })
  const harness = await DshHarness.create({
    home, invariants: false, tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 16_000 }),
    plugins: dshHome => [{ plugin: ShadowCapture, config: { home: dshHome } }, { plugin: ShadowRecall }],
    compaction: { plugin: ShadowCompactionEngine, config: {} },
  })
  const agent = await harness.createAgent({ sessionId })
  await harness.play(agent, scenario.turns)
  harness.model.enqueue({ kind: 'tools', calls: [{ name: 'shadow_search', args: { query: 'staging database port' } }] }, { kind: 'text', text: 'done' })
  await harness.send(agent, 'which port was it?')
  await harness.dispose({ keepHome: true })
  return { home, sessionId: agent.session.id, facts: scenario.facts }
}

export interface BinResult { readonly code: number; readonly stdout: string; readonly stderr: string }

/** The binary with `--home <home>` and args; DSH_HOME emptied so only the option names the home. */
export function runBin(home: string, args: readonly string[], options: SpawnSyncOptions = {}): BinResult {
  const result = spawnSync(process.execPath, [BIN, '--home', home, ...args], { encoding: 'utf8', ...options, env: { ...process.env, DSH_HOME: '', ...options.env } })
  return { code: result.status ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) }
}
