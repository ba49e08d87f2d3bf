import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { hashEventJson } from '@dsh-shadow/store'
import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { ShadowCompactionEngine } from '../src/index.ts'
import { MASK_MARKER } from '../src/engine/mask.ts'
import { engineHarness, leadingCheckpoints, modelVisible, pairingProblems, cleanupAfterEach } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-engine-')

function checkpointTexts(events: readonly { type: string; data: unknown; surfaceOp?: unknown }[]): Map<string, string> {
  const texts = new Map<string, string>()
  for (const event of events) {
    if (event.type !== 'user/message' || typeof event.surfaceOp !== 'object') continue
    const data = event.data as { source: { kind: string; plugin?: string; compactionId?: string }; content: Array<{ type: string; text?: string }> }
    if (!isCompactCheckpointSource(data.source as never)) continue
    texts.set(data.source.compactionId!, data.content.map(block => block.text ?? '').join(''))
  }
  return texts
}

describe('ShadowCompactionEngine on real dsh', () => {
  it('compacts a 300-turn coding session losslessly, with frozen checkpoints and a stable prefix', async () => {
    const home = newHome()
    const scenario = codingSession({ turns: 300, seed: 21, outputChars: 1_400 })
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await engineHarness({ home, tools: scenario.tools(), model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'long-session' })
    await harness.play(agent, scenario.turns, (_index, end) => {
      expect(end.data.reason.kind).toBe('completed')
    })
    const events = agent.session.events

    // ≥ 5 passes, all committed, no LLM call spent on them
    const summaries = events.filter(event => event.type === 'compaction/summary')
    expect(summaries.length).toBeGreaterThanOrEqual(5)
    expect(events.filter(event => event.type === 'compaction/end' && event.data.error !== undefined)).toEqual([])
    expect(model.requests.filter(request => request.purpose === 'compaction')).toEqual([])

    // every original is in the store, byte for byte, and exactly once
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    for (const summary of summaries) {
      if (summary.type !== 'compaction/summary') continue
      for (const seq of summary.data.shadowedSeqs) {
        const row = await capture.store.messageAt(agent.session.id, seq)
        expect(row?.hash, `seq ${seq}`).toBe(hashEventJson(JSON.stringify(events[seq])))
      }
    }
    const visible = modelVisible(agent.session)
    expect(await capture.store.count({ sessionId: agent.session.id })).toBe(visible.length)

    // the prefix up to the last checkpoint never changes between two requests (unless an index
    // rollup replaced the head), and no request ever breaks tool pairing
    const requests = model.conversationRequests().filter(request => !request.rejected)
    let rollups = 0
    for (let index = 1; index < requests.length; index += 1) {
      const before = requests[index - 1]!.options
      const after = requests[index]!.options
      expect(pairingProblems(after.messages)).toEqual([])
      const frozen = leadingCheckpoints(before.messages)
      const rolledUp = JSON.stringify(after.messages[0]?.content ?? '').includes('[Shadow Context index ')
        && JSON.stringify(after.messages[0]) !== JSON.stringify(before.messages[0])
      if (rolledUp) { rollups += 1; continue }
      expect(after.system).toBe(before.system)
      expect(after.messages.slice(0, frozen)).toEqual(before.messages.slice(0, frozen))
    }
    expect(rollups).toBeLessThan(summaries.length)

    // committed checkpoints stay byte-identical through persistence and resume
    const footers = new Map((await capture.store.checkpoints(agent.session.id)).map(checkpoint => [checkpoint.checkpointId, checkpoint.footer]))
    const texts = checkpointTexts(events)
    expect(texts.size).toBe(summaries.length)
    for (const [id, text] of texts) {
      expect(footers.get(id), id).toBeTruthy()
      expect(text.endsWith(footers.get(id)!), id).toBe(true)
      if (!text.startsWith('[Shadow Context index ')) expect(text).toContain(`shadow_read {"checkpoint":"${id}"}`)
    }
    // a digest rolled off the surface is still named by the index that replaced it
    const surfaceIds = new Set(agent.session.surface.nodes.map(seq => events[seq]!).flatMap(event =>
      event.type === 'user/message' && isCompactCheckpointSource(event.data.source) ? [String((event.data.source as { compactionId?: string }).compactionId)] : []))
    const ordinal = (id: string): number => Number(id.slice(id.lastIndexOf('.c') + 2))
    const indexText = [...texts.entries()].findLast(([id, text]) => surfaceIds.has(id) && text.startsWith('[Shadow Context index '))?.[1]
    const ranges = (indexText ?? '').split('\n').flatMap(line => {
      const match = /^- (\S+)(?: … (\S+))?/.exec(line)
      return match === null ? [] : [[ordinal(match[1]!), ordinal(match[2] ?? match[1]!)] as const]
    })
    // a mask stub rolled off the surface was folded by a later digest pass (its originals by id, the stub by that digest)
    const folded = new Set(summaries.flatMap(summary => (summary.type === 'compaction/summary' ? summary.data.shadowedSeqs : [])))
    for (const [id, text] of texts) {
      if (surfaceIds.has(id) || text.startsWith('[Shadow Context index ')) continue
      if (text.startsWith(MASK_MARKER)) {
        const stub = events.find(event => event.type === 'user/message' && isCompactCheckpointSource(event.data.source) && (event.data.source as { compactionId?: string }).compactionId === id)
        expect(stub !== undefined && folded.has(stub.seq), `${id} was folded by a later pass`).toBe(true)
        continue
      }
      expect(ranges.some(([from, to]) => ordinal(id) >= from && ordinal(id) <= to), `${id} is in the index`).toBe(true)
    }
    expect(harness.problems()).toEqual([])
    await harness.dispose()
    harnesses.splice(harnesses.indexOf(harness), 1)

    const resumed = await engineHarness({ home })
    harnesses.push(resumed)
    const again = await resumed.resume('long-session')
    expect(checkpointTexts(again.session.events)).toEqual(texts)
    await resumed.ctx.shadowCapture.flush()
    expect(resumed.ctx.shadowCapture.health.rows).toMatchObject({ replaced: 0, removed: 0, written: 0 })
    const storedFooters = new Map((await resumed.ctx.shadowCapture.store.checkpoints('long-session')).map(checkpoint => [checkpoint.checkpointId, checkpoint.footer]))
    expect(storedFooters).toEqual(footers)
  })

  it('keeps at most one mutable state checkpoint after the frozen ones when asked to', async () => {
    const scenario = codingSession({ turns: 120, seed: 23, outputChars: 1_400 })
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await engineHarness({ tools: scenario.tools(), model, engine: { stateCheckpoint: true } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'with-state' })
    let statesSeen = 0
    await harness.play(agent, scenario.turns, () => {
      const surface = agent.session.surface.nodes.map(seq => agent.session.events[seq]!)
      const states = surface.filter(event => event.type === 'user/message' && JSON.stringify(event.data).includes('[Shadow Context state'))
      expect(states.length).toBeLessThanOrEqual(1)
      if (states.length === 1) {
        statesSeen += 1
        // the state sits right after the frozen checkpoints
        const index = surface.indexOf(states[0]!)
        expect(surface.slice(0, index).every(event => event.type === 'user/message' && isCompactCheckpointSource(event.data.source))).toBe(true)
      }
    })
    expect(statesSeen).toBeGreaterThan(0)
    const models = agent.session.events.flatMap(event => (event.type === 'compaction/summary' ? [event.data.model] : []))
    expect(models).toEqual(expect.arrayContaining(['digest-v1', 'state-v1']))
    expect(harness.problems()).toEqual([])
    await harness.ctx.shadowCapture.flush()
    expect(await harness.ctx.shadowCapture.store.count({ sessionId: 'with-state' })).toBe(modelVisible(agent.session).length)
  })

  it('recovers a context-window overflow with one compaction and one retry', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await engineHarness({ model, engine: { thresholdRatio: 0.95, retainRatio: 0.05 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'overflow-once' })
    const scenario = codingSession({ turns: 12, seed: 4, outputChars: 2_000 })
    await harness.play(agent, scenario.turns.map(turn => ({ ...turn, steps: turn.steps.filter(step => typeof step !== 'function' && step.kind === 'text') })))
    const passesBefore = agent.session.events.filter(event => event.type === 'compaction/summary').length
    model.overflowNext(1)
    model.enqueue({ kind: 'text', text: 'answered after recovery' })
    const end = await harness.send(agent, 'one more question')
    expect(end.data.reason.kind).toBe('completed')
    const events = agent.session.events
    expect(events.filter(event => event.type === 'compaction/summary').length).toBe(passesBefore + 1)
    const conversation = model.conversationRequests()
    expect(conversation.at(-2)!.rejected).toBe(true)
    expect(conversation.at(-1)!.rejected).toBe(false)
    expect(harness.ctx.compaction instanceof ShadowCompactionEngine).toBe(true)
    expect((harness.ctx.compaction as ShadowCompactionEngine).recoveryState(agent.session)).toMatchObject({ failures: 0, breakerOpen: false })
  })

  it('stops an overflow storm: one retry per request, breaker after 3 failures, clear error, next turn recovers', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await engineHarness({ model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'storm' })
    for (let turn = 0; turn < 6; turn += 1) {
      model.enqueue({ kind: 'text', text: `warm-up answer ${turn} ${'detail '.repeat(300)}` })
      await harness.send(agent, `warm-up question ${turn} ${'context '.repeat(300)}`)
    }
    const engine = harness.ctx.compaction as ShadowCompactionEngine
    const reasons: string[] = []
    const sentPerTurn: number[] = []
    for (let turn = 0; turn < 4; turn += 1) {
      model.overflowNext(1_000)
      const requestsBefore = model.conversationRequests().length
      const end = await harness.send(agent, `storm question ${turn}`)
      reasons.push(end.data.reason.kind)
      const sent = model.conversationRequests().length - requestsBefore
      sentPerTurn.push(sent)
      // at most one compact-and-retry per request: the original attempt plus one retry
      expect(sent).toBeLessThanOrEqual(2)
      if (turn === 3) expect(sent).toBe(1) // the breaker is open: no retry at all
    }
    expect(reasons).toEqual(['error', 'error', 'error', 'error'])
    expect(engine.recoveryState(agent.session)).toMatchObject({ failures: 3, breakerOpen: true })
    const breakerRecord = agent.session.events.filter(event => event.type === 'compaction/end' && String(event.data.error).includes('circuit breaker open'))
    expect(breakerRecord).toHaveLength(1)
    console.log(`overflow storm: requests per storm turn ${JSON.stringify(sentPerTurn)}, turn ends ${JSON.stringify(reasons)}, recovery ${JSON.stringify(engine.recoveryState(agent.session))}, breaker records ${breakerRecord.length}`)
    expect(harness.problems().some(line => line.text.includes('circuit breaker open'))).toBe(true)

    model.clearOverflows()
    model.enqueue({ kind: 'text', text: 'back to normal' })
    const recovered = await harness.send(agent, 'is it over?')
    expect(recovered.data.reason.kind).toBe('completed')
    expect(engine.recoveryState(agent.session)).toMatchObject({ failures: 0, breakerOpen: false })
  })

  it('fails closed when the store stops accepting writes: nothing elided, the turn completes, the error is reported', async () => {
    // Pressure at 30% of a 32k window, so refused passes leave plenty of room before an overflow.
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const scenario = codingSession({ turns: 40, seed: 8 })
    const harness = await engineHarness({ model, tools: scenario.tools(), engine: { thresholdRatio: 0.2, retainRatio: 0.05 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'read-only-store' })
    const capture = harness.ctx.shadowCapture
    await harness.play(agent, scenario.turns.slice(0, 6))
    await capture.flush()
    await capture.store.setWritable(false)
    const surfaceBefore = agent.session.surface.replaceGeneration
    const refusals: string[] = []
    await harness.play(agent, scenario.turns.slice(6, 20), (_index, end) => {
      expect(end.data.reason.kind).toBe('completed')
    })
    for (const event of agent.session.events) {
      if (event.type === 'compaction/end' && event.data.error !== undefined) refusals.push(event.data.error)
    }
    // pressure asked for compaction, the write-ahead check refused every time, nothing left the surface
    expect(refusals.length).toBeGreaterThan(0)
    expect(refusals.every(reason => reason.includes('could not confirm') || reason.includes('shadow store'))).toBe(true)
    expect(agent.session.surface.replaceGeneration).toBe(surfaceBefore)
    expect(capture.health.lastFailure).not.toBeNull()
    expect(harness.problems().some(line => line.level === 'warn' && line.text.includes('shadow store'))).toBe(true)

    // thawed, the next pass repairs the missing rows and commits
    await capture.store.setWritable(true)
    await harness.play(agent, scenario.turns.slice(20, 40))
    expect(agent.session.surface.replaceGeneration).toBeGreaterThan(surfaceBefore)
    await capture.flush()
    expect(await capture.store.count({ sessionId: agent.session.id })).toBe(modelVisible(agent.session).length)
  })
})
