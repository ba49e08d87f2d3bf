/**
 * Issue 12, break 14: a compaction pass must cost O(region + surface), not O(log), and a
 * 100k-message session must run. Asserted by counting work, never by wall-clock time
 * (`npm run bench:pass` measures the time per pass at 1k / 10k / 100k messages).
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { extent, ShadowStore } from '@dsh-shadow/store'
import { agenticTools, agenticTurns, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { composeFooter, type DigestMessage } from '../src/engine/digest.ts'
import { isCapturable, ShadowCompactionEngine } from '../src/index.ts'
import { cleanupAfterEach, engineHarness } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-pass-cost-')

/** Play an agentic session until the log holds about `messages` model-visible messages. */
async function session(messages: number, calls: number, options: { invariants?: boolean } = {}) {
  const model = new ScriptedModel({ contextWindow: 32_000 })
  const harness = await engineHarness({ model, tools: agenticTools(11, 120), checkpointPolicy: false, invariants: options.invariants ?? true })
  harnesses.push(harness)
  const engine = harness.ctx.compaction as ShadowCompactionEngine
  const agent = await harness.createAgent({ sessionId: `pass-cost-${messages}` })
  const perPass: number[] = []
  const original = engine.compactIfNeeded.bind(engine)
  engine.compactIfNeeded = async (...args) => {
    const before = engine.work.visited
    const outcome = await original(...args)
    if (outcome !== null) perPass.push(engine.work.visited - before)
    return outcome
  }
  const steps = Math.ceil(messages / (calls + 1))
  for (const turn of agenticTurns({ turns: Math.ceil(steps / 400), steps: Math.min(400, steps), calls: [calls, calls], reasoningChars: 40, seed: 3 })) {
    model.enqueue(...turn.steps)
    const end = await harness.send(agent, turn.prompt)
    expect(end.data.reason.kind).toBe('completed')
  }
  return { harness, engine, agent, perPass }
}

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

describe('compaction pass cost does not grow with the log', () => {
  it('visits the same number of log events per pass at 1k and 10k messages, and indexes each event once', async () => {
    const small = await session(1_000, 8)
    const large = await session(10_000, 8)
    const late = (entry: typeof small): number[] => entry.perPass.slice(Math.floor(entry.perPass.length * 0.8))
    const smallPass = median(late(small))
    const largePass = median(late(large))
    console.log(`events visited per pass: ${smallPass} at ${small.agent.session.seq} log events (${small.perPass.length} passes), ${largePass} at ${large.agent.session.seq} (${large.perPass.length} passes); log mirrors ${small.engine.work.mirrors} / ${large.engine.work.mirrors}`)
    expect(small.perPass.length).toBeGreaterThan(5)
    expect(large.perPass.length).toBeGreaterThan(50)
    // the log grew 10×; a pass reads the region and the surface, so its work stays put
    expect(largePass).toBeLessThan(smallPass * 1.5)
    // each event was folded into the index once: no pass re-read the log
    expect(large.engine.work.mirrors).toBe(1)
    expect(large.engine.work.indexed).toBe(large.agent.session.seq)
  })

  it('runs a 100k-message session with parallel tool calls to the end, compacting all along', async () => {
    // dsh's agent-loop invariant companion copies the whole log on every request; this test is about our cost
    const { harness, engine, agent, perPass } = await session(100_000, 24, { invariants: false })
    const visible = agent.session.events.filter(isCapturable).length
    expect(visible).toBeGreaterThanOrEqual(100_000)
    expect(perPass.length).toBeGreaterThan(200)
    expect(engine.work.mirrors).toBe(1)
    // the last passes cost what the first ones did
    expect(median(perPass.slice(-20))).toBeLessThan(median(perPass.slice(5, 25)) * 1.5)
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    expect(await capture.store.count({ sessionId: agent.session.id })).toBe(visible)
    // and the request the model saw last is a bounded surface, not the whole session
    expect(harness.model.conversationRequests().at(-1)!.inputTokens).toBeLessThan(32_000)
    console.log(`100k session: ${visible} messages, ${agent.session.seq} log events, ${perPass.length} passes, median ${median(perPass)} events visited per pass`)
  }, 600_000) // ~100 s alone on a 2-core machine: dsh's own per-event work, 520k log events

  it('composes the pointer footer of a 150k-message region (no Math.min spread)', () => {
    const messages: DigestMessage[] = Array.from({ length: 150_000 }, (_, seq) => ({
      turn: 1,
      toolName: null,
      event: { type: 'user/message', seq, time: 1_764_000_000_000 + seq, data: { content: [{ type: 'text', text: 'x' }], source: { kind: 'user' } } } as unknown as SessionEvent,
    }))
    const footer = composeFooter({ checkpointId: 'tag.c1', tag: 'tag', messages })
    expect(footer).toContain('150000 messages')
    expect(footer).toContain('seqs 0–149999')
    expect(extent([3, -1, 7])).toEqual({ min: -1, max: 7 })
    expect(extent([])).toBeUndefined()
  })

  it('records and marks a checkpoint of 150k stored originals', async () => {
    const store = await ShadowStore.open(`${newHome()}/shadow.db`)
    try {
      const rows = Array.from({ length: 150_000 }, (_, seq) => ({
        sessionId: 'big', seq, eventType: 'user/message' as const, role: 'user' as const, sourceKind: 'user', turn: 1, step: null, toolName: null, callId: null,
        time: 1_000 + seq, eventJson: JSON.stringify({ type: 'user/message', seq }), text: `m${seq}`, tokens: 2,
      }))
      for (let from = 0; from < rows.length; from += 10_000) await store.append(rows.slice(from, from + 10_000))
      const seqs = rows.map(row => row.seq)
      await store.ingest([{ op: 'checkpoint', elide: true, checkpoint: { checkpointId: 'big.c1', sessionId: 'big', engine: 'shadow-context', status: 'committed', shadowedSeqs: seqs, createdAt: 2_000 } }])
      const checkpoint = await store.checkpoint('big.c1')
      expect(checkpoint).toMatchObject({ timeFrom: 1_000, timeTo: 150_999, messageCount: 150_000 })
      expect(await store.count({ sessionId: 'big' }, { elidedBy: 'big.c1' })).toBe(150_000)
    } finally {
      await store.close()
    }
  })
})
