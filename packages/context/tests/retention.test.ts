import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { RecallResolver } from '../src/index.ts'
import { cleanupAfterEach, compareWithLog, engineHarness } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-retention-')

describe('retention budget in a real composition', () => {
  it('drops the oldest checkpoint originals at open, marks their pointers expired, and compaction goes on', async () => {
    const home = newHome()
    const scenario = codingSession({ turns: 60, seed: 12, outputChars: 1_400 })
    const engine = { thresholdRatio: 0.25, retainRatio: 0.05 }
    const first = await engineHarness({ home, tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 32_000 }), engine })
    harnesses.push(first)
    const agent = await first.createAgent({ sessionId: 'budgeted' })
    await first.play(agent, scenario.turns.slice(0, 40))
    const checkpointsBefore = await first.ctx.shadowCapture.store.checkpoints(agent.session.id)
    expect(checkpointsBefore.length).toBeGreaterThanOrEqual(3)
    await first.dispose({ keepHome: true })

    const second = await engineHarness({
      home, tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 32_000 }), engine,
      capture: { retention: { sessionBytes: 60_000 } },
    })
    harnesses.push(second)
    const resumed = await second.resume(agent.session.id)
    const capture = second.ctx.shadowCapture
    await capture.flush()
    const store = await capture.opened()
    // applied once at open, before anything else was written
    const checkpoints = await store.checkpoints(agent.session.id)
    const expired = checkpoints.filter(checkpoint => checkpoint.expiredAt !== null)
    expect(expired.length).toBeGreaterThan(0)
    expect(expired[0]!.checkpointId).toBe(checkpointsBefore[0]!.checkpointId)
    // the live surface keeps every original
    const rows = await store.read({ sessionId: agent.session.id }, { limit: 100_000 })
    const surface = new Set(resumed.session.surface.nodes)
    expect(rows.filter(row => surface.has(row.seq) && row.expiredAt !== null)).toEqual([])
    // the model is told what happened when it follows an expired pointer
    const resolver = new RecallResolver(store, { sessionId: agent.session.id })
    const page = await resolver.read({ checkpoint: expired[0]!.checkpointId })
    expect(page.text).toContain('retention removed')
    expect(page.text).toContain('original removed by retention')

    await second.play(resumed, scenario.turns.slice(40, 60))
    expect((await store.checkpoints(agent.session.id)).length).toBeGreaterThan(checkpoints.length)
    await capture.flush()
    expect(await compareWithLog(store, agent.session.id, resumed.session.events)).toMatchObject({ missing: [], mismatched: [], extra: [] })
  }, 120_000)
})
