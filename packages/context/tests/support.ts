import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect } from 'vitest'
/** Shared helpers for tests that run Shadow Context on a real dsh composition. */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import type { Message } from '@deepseek-ai/dsh-llm'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { DshHarness, type AgentStep, type DshHarnessOptions, type PluginMount } from '@dsh-shadow/testing'
import { type ReconcileReport, type ShadowStoreApi } from '@dsh-shadow/store'
import * as ShadowInvariant from '../src/invariant.ts'
import { isCapturable, ShadowCapture, ShadowCompactionEngine, ShadowRecall, type ShadowCaptureConfig, type ShadowEngineConfig, type ShadowRecallConfig } from '../src/index.ts'

export interface ShadowHarnessOptions extends DshHarnessOptions {
  readonly capture?: ShadowCaptureConfig
  readonly extraPlugins?: readonly PluginMount[]
}

/** A real dsh composition with ShadowCapture mounted (store inside the harness's dsh home). */
export async function shadowHarness(options: ShadowHarnessOptions = {}): Promise<DshHarness> {
  const base = typeof options.plugins === 'function' ? undefined : options.plugins
  return DshHarness.create({
    ...options,
    // our own invariant companion, beside dsh's
    invariantCompanions: [...(options.invariantCompanions ?? []), ShadowInvariant],
    // the store lives in the harness's own dsh home, never in the user's
    plugins: home => [...(base ?? []), { plugin: ShadowCapture, config: { ...options.capture, home } }, ...(options.extraPlugins ?? [])],
  })
}

/** The same, but the store's home must be known before the harness exists. */
export async function shadowHarnessAt(home: string, options: ShadowHarnessOptions = {}): Promise<DshHarness> {
  return shadowHarness({ ...options, home, capture: { ...options.capture, home } })
}

/** Model-visible events of a log (what the store must hold), in order. */
export function modelVisible(session: Session | { events: readonly SessionEvent[] }): SessionEvent[] {
  return session.events.filter(isCapturable)
}

/** Compare the store with a log: what is missing, stale, extra or duplicated. */
export async function compareWithLog(store: ShadowStoreApi, sessionId: string, events: readonly SessionEvent[]): Promise<ReconcileReport> {
  const visible = events.filter(isCapturable)
  const hashes = await store.hashesOf(visible.map(event => JSON.stringify(event)))
  const authority = visible.map((event, index) => ({ seq: event.seq, hash: hashes[index]! }))
  return store.reconcile(sessionId, authority)
}

/** Capture plus the Shadow Context engine (and dsh's `/compact` command) on a real composition. */
export async function engineHarness(options: ShadowHarnessOptions & { engine?: ShadowEngineConfig } = {}): Promise<DshHarness> {
  return shadowHarness({ ...options, compaction: { plugin: ShadowCompactionEngine, config: options.engine ?? {} }, commandCompact: true })
}

/** Tool-call pairing of one request as a provider checks it: every result answers an open call, none left open. */
export function pairingProblems(messages: readonly Message[]): string[] {
  const open = new Set<string>()
  const problems: string[] = []
  for (const [index, message] of messages.entries()) {
    for (const block of message.content) {
      if (block.type === 'tool-call') open.add(block.id)
      if (block.type === 'tool-result') {
        if (!open.delete(block.toolCallId)) problems.push(`message ${index}: result for ${block.toolCallId} has no open call`)
      }
    }
    if (message.role === 'user' && !message.content.some(block => block.type === 'tool-result') && open.size > 0) {
      problems.push(`message ${index}: user message while ${open.size} tool calls are open`)
    }
  }
  if (open.size > 0) problems.push(`${open.size} tool calls never answered`)
  return problems
}

/** Leading compaction checkpoints of a request. */
export function leadingCheckpoints(messages: readonly Message[]): number {
  let count = 0
  while (count < messages.length && isCompactCheckpointSource(messages[count]!.source)) count += 1
  return count
}

/** Wait for our invariant companion's asynchronous store re-checks. */
export async function settleInvariants(): Promise<void> {
  for (const checker of ShadowInvariant.checkers) await checker.settled()
}

/** Dispose the test's harnesses and temporary dsh homes after each test. */
export function cleanupAfterEach(prefix = 'shadow-test-'): { harnesses: DshHarness[]; newHome(): string } {
  const harnesses: DshHarness[] = []
  const homes: string[] = []
  afterEach(async () => {
    await settleInvariants()
    const violations = harnesses.flatMap(harness => harness.invariantFailures())
    for (const harness of harnesses.splice(0)) await harness.dispose()
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
    // an invariant a dsh companion or ours reported (thrown inside a listener, so only logged)
    expect(violations.map(line => line.text)).toEqual([])
  })
  return {
    harnesses,
    newHome: () => {
      const home = mkdtempSync(join(tmpdir(), prefix))
      homes.push(home)
      return home
    },
  }
}

/** Capture, recall tools and the engine: the whole Shadow Context mode. */
export async function recallHarness(options: ShadowHarnessOptions & { engine?: ShadowEngineConfig; recall?: ShadowRecallConfig } = {}): Promise<DshHarness> {
  return engineHarness({ ...options, extraPlugins: [...(options.extraPlugins ?? []), { plugin: ShadowRecall, config: options.recall ?? {} }] })
}

/** A bulky scenario step for needs tests: one read of a 60-line module. */
export function fillerStep(turn: number): AgentStep {
  const body = Array.from({ length: 60 }, (_, line) => `export const value${turn}_${line} = compute(${line}, 'turn ${turn}')`).join('\n')
  return { text: `Reading module ${turn}.`, calls: [{ name: 'read_file', args: { path: `src/module${turn}.ts` }, output: body }] }
}
