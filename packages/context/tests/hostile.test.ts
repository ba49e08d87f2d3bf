import { existsSync, rmSync } from 'node:fs'
import type { Worker } from 'node:worker_threads'
import { join } from 'node:path'
import { sessionTag } from '@dsh-shadow/store'
import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { compareWithLog, engineHarness, shadowHarness, cleanupAfterEach } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-hostile-')

/** Two session ids whose default (6-character) tags are equal, found by search: tags are 30 bits. */
function collidingIds(prefix: string): [string, string] {
  const seen = new Map<string, string>()
  for (let index = 0; ; index += 1) {
    const id = `${prefix}-${index}`
    const tag = sessionTag(id)
    const other = seen.get(tag)
    if (other !== undefined) return [other, id]
    seen.set(tag, id)
  }
}

describe('hostile session ids on real dsh', () => {
  it('a refused session (NUL, lone surrogate, 10 KB id) does not stop capture of any other session', async () => {
    const harness = await shadowHarness()
    harnesses.push(harness)
    const hostile = ['bad\u0000id', 'lone-\uD800', 'x'.repeat(10_000)]
    // dsh takes all three (it persists the NUL one as `bad~0000id`); the store cannot keep them apart
    const agents = []
    for (const sessionId of hostile) agents.push(await harness.createAgent({ sessionId }))
    const good = await harness.createAgent({ sessionId: 'good' })
    const paths = await harness.createAgent({ sessionId: '../../etc/passwd\\x' })
    for (let turn = 0; turn < 3; turn += 1) {
      for (const agent of [...agents, good, paths]) {
        harness.model.enqueue({ kind: 'text', text: `reply ${turn}` })
        await harness.send(agent, `question ${turn} for ${agent.session.id.slice(0, 20)}`)
      }
    }
    const capture = harness.ctx.shadowCapture
    await capture.flush().catch(() => undefined)
    for (const agent of [good, paths]) {
      expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    }
    expect((await capture.store.search('question', { sessionId: paths.session.id })).hits.every(hit => hit.message.sessionId === paths.session.id)).toBe(true)
    // the refused sessions are reported, typed, not silently merged into something else
    expect(capture.health.lastFailure?.code).toBe('INVALID_INPUT')
    for (const agent of agents) expect(await capture.store.session(agent.session.id).catch((error: { code: string }) => error.code)).not.toMatchObject({ sessionId: expect.anything() })
    // later batches still go through: nothing waits behind the refused ones
    harness.model.enqueue({ kind: 'text', text: 'late reply' })
    await harness.send(good, 'late question')
    await capture.flush().catch(() => undefined)
    expect(await compareWithLog(capture.store, 'good', good.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
  })

  it('two sessions whose tags collide are both captured, with distinct tags and shadow ids', async () => {
    const [first, second] = collidingIds('collide')
    expect(sessionTag(first)).toBe(sessionTag(second))
    const harness = await shadowHarness()
    harnesses.push(harness)
    const a = await harness.createAgent({ sessionId: first })
    harness.model.enqueue({ kind: 'text', text: 'alpha reply' })
    await harness.send(a, 'alpha question about apples')
    await harness.ctx.shadowCapture.flush()
    const b = await harness.createAgent({ sessionId: second })
    harness.model.enqueue({ kind: 'text', text: 'beta reply' })
    await harness.send(b, 'beta question about bananas')
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    for (const agent of [a, b]) {
      expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    }
    const tags = [(await capture.store.session(first))!.tag, (await capture.store.session(second))!.tag]
    expect(tags[0]).toBe(sessionTag(first))
    expect(tags[1]).not.toBe(tags[0])
    expect(tags[1]!.startsWith(tags[0]!)).toBe(true)
    const [hit] = (await capture.store.search('bananas', { sessionId: second })).hits
    expect(hit!.message.shadowId.startsWith(`${tags[1]}.`)).toBe(true)
    expect((await capture.store.message(hit!.message.shadowId))!.sessionId).toBe(second)
    expect(await capture.tag(second)).toBe(tags[1])
  })
})

describe('store files deleted while dsh runs', () => {
  it('a store worker thread that dies mid-session is started again: later turns are captured and compacted without a dsh restart', async () => {
    const scenario = codingSession({ turns: 30, seed: 22, outputChars: 1_200 })
    const harness = await engineHarness({ tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 16_000 }) })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'worker-died' })
    await harness.play(agent, scenario.turns.slice(0, 8))
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    // the store's thread dies as on a fatal error in it
    const worker = (capture.store as unknown as { worker: Worker }).worker
    const gone = new Promise(resolve => worker.once('exit', resolve))
    await worker.terminate()
    await gone
    const committed = (): number => agent.session.events.filter(event => event.type === 'compaction/summary').length
    const before = committed()
    await new Promise(resolve => setTimeout(resolve, 1_100))
    await harness.play(agent, scenario.turns.slice(8, 30))
    await capture.flush()
    // every model-visible message is in the store, and passes committed again after the crash
    expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toMatchObject({ missing: [], mismatched: [] })
    expect(committed()).toBeGreaterThan(before)
  })

  it('deleting the -wal fails the write-ahead check closed: nothing is elided that the store would lose', async () => {
    const scenario = codingSession({ turns: 40, seed: 21, outputChars: 1_200 })
    const harness = await engineHarness({ tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 16_000 }) })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'wal-deleted' })
    await harness.play(agent, scenario.turns.slice(0, 12))
    await harness.ctx.shadowCapture.flush()
    const committed = (): number => agent.session.events.filter(event => event.type === 'compaction/summary').length
    const before = committed()
    expect(before).toBeGreaterThan(0)
    const wal = join(harness.home, 'shadow-context', 'shadow.db-wal')
    expect(existsSync(wal)).toBe(true)
    rmSync(wal)
    const cut = agent.session.events.length
    await harness.play(agent, scenario.turns.slice(12, 24))
    // passes were attempted after the deletion, and every one was refused
    const attempts = agent.session.events.slice(cut).filter(event => event.type === 'compaction/start').length
    expect(attempts).toBeGreaterThan(0)
    expect(committed()).toBe(before)
    expect(harness.ctx.shadowCapture.health.lastFailure).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('-wal') })
    // the turns went on; what the store would lose stays on the surface (the log rebuilds the store at restart)
    expect(agent.session.events.slice(cut).filter(event => event.type === 'turn/end')).toHaveLength(12)
  })
})
