/**
 * `dsh-shadow forget` of a session that a running dsh still captures (another process on the same
 * store file): what the capture writes next must make a whole session again, not a bare row.
 */
import { join } from 'node:path'
import { ShadowStore } from '@dsh-shadow/store'
import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { cleanupAfterEach, compareWithLog, engineHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-forget-live-')

describe('forget while the session runs', () => {
  it('the capture writes the session back with its working directory and creation time, and the next pass restores what it elides', async () => {
    const scenario = codingSession({ turns: 24, seed: 7, plantFacts: false })
    const harness = await engineHarness({ tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 12_000 }) })
    harnesses.push(harness)
    const cwd = join(harness.home, 'repo')
    const agent = await harness.createAgent({ sessionId: 'forget-live', cwd })
    await harness.play(agent, scenario.turns.slice(0, 8))
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    const before = await capture.store.session('forget-live')
    expect(before?.workspace).toBe(cwd)

    // the CLI's forget, as another process on the same file
    const other = await ShadowStore.open(join(harness.home, 'shadow-context', 'shadow.db'))
    try {
      expect((await other.forget('forget-live')).forgotten).toEqual(['forget-live'])
    } finally {
      await other.close()
    }

    await harness.play(agent, scenario.turns.slice(8))
    await capture.flush()
    const after = await capture.store.session('forget-live')
    expect(after).toMatchObject({ workspace: cwd, createdAt: before!.createdAt, tag: before!.tag })
    // the forget took every checkpoint; each one since elides only originals the store holds again
    const checkpoints = await capture.store.checkpoints('forget-live')
    expect(checkpoints.length).toBeGreaterThan(0)
    const report = await compareWithLog(capture.store, 'forget-live', agent.session.events)
    const elided = new Set(checkpoints.flatMap(checkpoint => checkpoint.shadowedSeqs))
    expect(report.missing.filter(seq => elided.has(seq))).toEqual([])
    expect(report.mismatched).toEqual([])
    expect(report.extra).toEqual([])
    expect(harness.problems()).toEqual([])
  })
})
