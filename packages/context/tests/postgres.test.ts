/**
 * Shadow Context on a real dsh composition with its store on a real PostgreSQL server (loopback,
 * temp data dir): capture and compaction through `path: postgres://…`, and fail-closed behaviour
 * when the server goes down mid-session, exactly as with a locked SQLite file.
 */
import { codingSession, ScriptedModel, startPostgres, type PostgresServer } from '@dsh-shadow/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanupAfterEach, compareWithLog, engineHarness, modelVisible } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-pg-')
let server: PostgresServer

beforeAll(async () => {
  server = await startPostgres()
})
afterAll(() => server?.stop())

describe('Shadow Context on PostgreSQL', () => {
  it('captures and compacts a session into a postgres:// store, losslessly', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const scenario = codingSession({ turns: 30, seed: 5 })
    const harness = await engineHarness({ model, tools: scenario.tools(), capture: { path: server.storeDsn('capture') }, engine: { thresholdRatio: 0.2, retainRatio: 0.05 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'pg-session' })
    await harness.play(agent, scenario.turns, (_index, end) => expect(end.data.reason.kind).toBe('completed'))
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    expect(capture.store.path).toMatch(/^postgres:\/\/.*schema=capture/)
    const commits = agent.session.events.filter(event => event.type === 'compaction/summary')
    expect(commits.length).toBeGreaterThan(0)
    expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    expect(await capture.store.count({ sessionId: agent.session.id })).toBe(modelVisible(agent.session).length)
    expect((await capture.store.integrityCheck())).toEqual([])
  })

  it('fails closed when the server stops mid-session: nothing elided, every turn completes, one clear error; resumes when it is back', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const scenario = codingSession({ turns: 40, seed: 8 })
    const harness = await engineHarness({ model, tools: scenario.tools(), capture: { path: server.storeDsn('down') }, engine: { thresholdRatio: 0.2, retainRatio: 0.05 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'pg-down' })
    const capture = harness.ctx.shadowCapture
    await harness.play(agent, scenario.turns.slice(0, 6))
    await capture.flush()
    server.halt('immediate')
    try {
      const surfaceBefore = agent.session.surface.replaceGeneration
      const started = Date.now()
      await harness.play(agent, scenario.turns.slice(6, 20), (_index, end) => expect(end.data.reason.kind).toBe('completed'))
      const refusals = agent.session.events.filter(event => event.type === 'compaction/end' && event.data.error !== undefined)
      // pressure asked for compaction, the write-ahead check refused every time, nothing left the surface
      expect(refusals.length).toBeGreaterThan(0)
      expect(agent.session.surface.replaceGeneration).toBe(surfaceBefore)
      expect(capture.health.lastFailure).toMatchObject({ code: 'UNAVAILABLE' })
      expect(capture.health.lastFailure!.message).toMatch(/unreachable|terminated|ECONNREFUSED/)
      const warnings = harness.problems().filter(line => line.level === 'warn' && line.text.includes('shadow store'))
      // one clear error: the capture reports the failure once (not per write), and every layer names the same cause
      expect(warnings.filter(line => line.text.startsWith('Shadow Context: shadow store')).length).toBe(1)
      expect([...new Set(warnings.map(line => /shadow store \S+ is unreachable/.exec(line.text)?.[0] ?? line.text))]).toHaveLength(1)
      console.log(`server down: ${refusals.length} refused passes over 14 turns in ${Date.now() - started} ms; warning: ${warnings[0]!.text.slice(0, 200)}`)
    } finally {
      server.start()
    }
    // back up: the next pass repairs the missing rows and commits
    const surfaceDown = agent.session.surface.replaceGeneration
    await harness.play(agent, scenario.turns.slice(20, 40), (_index, end) => expect(end.data.reason.kind).toBe('completed'))
    expect(agent.session.surface.replaceGeneration).toBeGreaterThan(surfaceDown)
    await capture.flush()
    expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
  })
})
