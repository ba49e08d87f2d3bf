/**
 * Long agentic turns on DeepSeek's request contract: 40+ steps per turn, several parallel tool
 * calls per step, reasoning content, a provider overflow and user steering in the middle of a
 * turn, and compaction cutting inside the running turn. Every request the scripted model receives
 * is checked by the DeepSeek request validator (the suite's setup fails a test on any refusal);
 * these tests also assert that the cuts really were inside turns and that the validator bites.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { CallId, createUserMessage, type Message } from '@deepseek-ai/dsh-llm'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { hashEventJson } from '@dsh-shadow/store'
import { agenticTools, agenticTurns, deepSeekRequestProblems, requestValidation, ScriptedModel, userMessage, wireLayout } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { advance, newCursor } from '../src/capture/cursor.ts'
import { ShadowInvariantChecker } from '../src/engine/invariants.ts'
import { cleanupAfterEach, engineHarness, settleInvariants } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-agentic-')

interface Pass {
  readonly compactionId: string
  /** The turn that was running when the pass committed. */
  readonly owner: number | null
  /** Turn of the last message the pass took off the surface. */
  readonly lastTurn: number | null
  /** Steps of the owning turn that ran after the pass. */
  readonly stepsAfter: number
  readonly seqs: readonly number[]
}

/** Every committed Shadow Context pass of a log, with where it cut. */
function passes(events: readonly SessionEvent[]): Pass[] {
  const cursor = newCursor()
  const turnOf = new Map<number, number | null>()
  const found: Array<Pass & { stepsAfter: number }> = []
  let owner: number | null = null
  for (const event of events) {
    advance(cursor, event)
    turnOf.set(event.seq, cursor.turn)
    if (event.type === 'compaction/start') owner = event.data.turn
    if (event.type === 'compaction/summary' && event.data.provider === 'shadow-context') {
      found.push({ compactionId: event.data.compactionId, owner, lastTurn: turnOf.get(event.data.shadowedSeqs.at(-1)!) ?? null, stepsAfter: 0, seqs: event.data.shadowedSeqs })
    }
    if (event.type === 'step/start') for (const pass of found) if (pass.owner === event.data.turn) pass.stepsAfter += 1
  }
  return found
}

function stepsPerTurn(events: readonly SessionEvent[]): Map<number, number> {
  const steps = new Map<number, number>()
  for (const event of events) if (event.type === 'step/start') steps.set(event.data.turn, (steps.get(event.data.turn) ?? 0) + 1)
  return steps
}

describe('long agentic turns on DeepSeek\'s contract', () => {
  it('runs 45-step turns with parallel calls, reasoning, an overflow and steering mid-turn, compacting inside the running turn', async () => {
    const model = new ScriptedModel({ contextWindow: 24_000 })
    const harness = await engineHarness({ model, tools: agenticTools(5, 700) })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'agentic-long' })
    const steered: string[] = []
    const turns = agenticTurns({
      turns: 3, steps: 45, calls: [1, 4], seed: 9, overflowAt: [17], steerAt: [25],
      onSteer: text => {
        steered.push(text)
        agent.steer(userMessage(text))
      },
    })
    const validatedBefore = requestValidation.validated
    await harness.play(agent, turns, (_index, end) => {
      expect(end.data.reason.kind).toBe('completed')
    })
    const events = agent.session.events

    // the turns really were long and parallel
    for (const [turn, steps] of stepsPerTurn(events)) expect(steps, `turn ${turn}`).toBeGreaterThanOrEqual(45)
    const widest = Math.max(...events.flatMap(event => (event.type === 'assistant/message' ? [event.data.message.content.filter(block => block.type === 'tool-call').length] : [])))
    expect(widest).toBeGreaterThanOrEqual(3)

    // compaction cut inside the running turn, and that turn went on for steps after the cut
    const committed = passes(events)
    const midTurn = committed.filter(pass => pass.owner !== null && pass.lastTurn === pass.owner && pass.stepsAfter > 0)
    expect(committed.length).toBeGreaterThanOrEqual(6)
    expect(midTurn.length).toBeGreaterThanOrEqual(3)

    // each turn's overflow was recovered with one compaction and one retry
    const conversation = model.conversationRequests()
    const rejected = conversation.filter(request => request.rejected)
    expect(rejected).toHaveLength(3)
    for (const request of rejected) expect(conversation[conversation.indexOf(request) + 1]!.rejected).toBe(false)

    // steering landed mid-turn as a user message, after the step's tool results
    expect(steered).toHaveLength(3)
    for (const text of steered) {
      const request = conversation.find(candidate => !candidate.rejected && candidate.text().includes(text))
      expect(request, text).toBeDefined()
      const wire = wireLayout(request!.options.messages)
      const at = wire.findIndex(entry => entry.role === 'user' && entry.text.includes(text))
      expect(wire[at - 1]?.role).toBe('tool')
    }

    // reasoning came back with the current turn's tool-call messages, as DeepSeek requires
    const last = conversation.filter(request => !request.rejected).at(-1)!
    const withCalls = last.options.messages.filter(message => message.role === 'assistant' && message.content.some(block => block.type === 'tool-call'))
    expect(withCalls.length).toBeGreaterThan(0)
    expect(withCalls.every(message => message.content.some(block => block.type === 'reasoning' && block.text.length > 0))).toBe(true)

    // every request was checked (and none refused: the suite's setup fails the test otherwise)
    expect(requestValidation.validated - validatedBefore).toBe(model.requests.length)
    expect(requestValidation.refused).toEqual([])

    // every elided original is in the store as logged
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    for (const pass of committed) {
      const answer = await capture.store.confirm(agent.session.id, pass.seqs.map(seq => ({ seq, hash: hashEventJson(JSON.stringify(events[seq])) })))
      expect(answer, pass.compactionId).toEqual({ missing: [], mismatched: [] })
    }
    await settleInvariants()
    expect(harness.invariantFailures()).toEqual([])
    console.log(`agentic: ${conversation.length} conversation requests (${rejected.length} overflows), ${committed.length} passes, ${midTurn.length} cut inside the running turn, widest step ${widest} calls`)
  })

  it('keeps every request valid when every cut is forced inside the running turn', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    // pressure at 5% of the window and a tiny retained tail: each pass cuts deep inside the turn
    const harness = await engineHarness({ model, tools: agenticTools(6, 500), engine: { thresholdRatio: 0.06, retainRatio: 0.01, retainTokens: 200, minRegionRatio: 0 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'agentic-forced' })
    await harness.play(agent, agenticTurns({ turns: 2, steps: 60, calls: [2, 5], seed: 4 }), (_index, end) => {
      expect(end.data.reason.kind).toBe('completed')
    })
    const committed = passes(agent.session.events).filter(pass => !pass.compactionId.includes('index'))
    const digests = committed.filter(pass => pass.owner !== null)
    expect(digests.length).toBeGreaterThanOrEqual(20)
    // every pass after the first turn's opening steps cut inside the turn that was running
    const inside = digests.filter(pass => pass.lastTurn === pass.owner)
    expect(inside.length).toBeGreaterThanOrEqual(digests.length - 2)
    expect(model.conversationRequests().every(request => !request.rejected)).toBe(true)
    expect(requestValidation.refused).toEqual([])
    // no cut left a call without its result or a result without its call, on the surface either
    await settleInvariants()
    expect(harness.invariantFailures()).toEqual([])
  })
})

describe('the DeepSeek request validator', () => {
  const call = (id: string): Message => ({ role: 'assistant', id: `a-${id}`, source: { kind: 'model', provider: 'p', model: 'm' }, content: [{ type: 'reasoning', text: `why ${id}` }, { type: 'tool-call', id: CallId(id), name: 'shell', arguments: '{}' }] } as unknown as Message)
  const calls = (...ids: string[]): Message => ({ role: 'assistant', id: `a-${ids.join('-')}`, source: { kind: 'model', provider: 'p', model: 'm' }, content: ids.map(id => ({ type: 'tool-call', id: CallId(id), name: 'shell', arguments: '{}' })) } as unknown as Message)
  const result = (id: string, text = ''): Message => ({ role: 'user', id: `r-${id}`, source: { kind: 'tool', callId: id }, content: [...(text === '' ? [] : [{ type: 'text', text }]), { type: 'tool-result', toolCallId: CallId(id), content: [{ type: 'text', text: 'ok' }] }] } as unknown as Message)
  const ask = (text: string): Message => createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }) as unknown as Message
  const ledger = { reasoningFor: (id: string) => `why ${id}` }

  it('accepts a well-formed agentic history', () => {
    expect(deepSeekRequestProblems([ask('go'), call('c1'), result('c1'), calls('c2', 'c3'), result('c2'), result('c3'), ask('steer')], ledger)).toEqual([])
  })

  it('refuses what DeepSeek refuses', () => {
    // a result whose call was cut away (an orphan)
    expect(deepSeekRequestProblems([ask('go'), result('c1')])).toEqual([expect.stringContaining('follows no assistant message')])
    // a call left unanswered before the next user message, and at the end
    expect(deepSeekRequestProblems([ask('go'), calls('c1', 'c2'), result('c1'), ask('next')])[0]).toContain('not answered before it')
    expect(deepSeekRequestProblems([ask('go'), calls('c1')])[0]).toContain('unanswered')
    // a result answering a call of an earlier assistant message, not the one right before it
    expect(deepSeekRequestProblems([ask('go'), calls('c1'), result('c1'), calls('c2'), result('c1'), result('c2')]).join(' ')).toContain('answers no open call')
    // a user message's text lands before its tool results on the wire
    expect(deepSeekRequestProblems([ask('go'), calls('c1'), result('c1', 'and also')]).join(' ')).toContain('not answered before it')
    // the current turn's tool-call message without the reasoning the model produced with it
    const stripped = { ...call('c9'), content: call('c9').content.filter(block => block.type !== 'reasoning') } as Message
    expect(deepSeekRequestProblems([ask('go'), stripped, result('c9')], ledger)).toEqual([expect.stringContaining('lacks its reasoning_content')])
    // reasoning of an earlier turn may be dropped (the provider ignores it there)
    expect(deepSeekRequestProblems([ask('go'), stripped, result('c9'), ask('next turn')], ledger)).toEqual([])
    // one call id twice
    expect(deepSeekRequestProblems([ask('go'), calls('c1'), result('c1'), calls('c1'), result('c1')]).join(' ')).toContain('appears twice')
  })

  it('makes the scripted model answer an invalid request with HTTP 400, and tallies it', async () => {
    const model = new ScriptedModel()
    const harness = await engineHarness({ model })
    harnesses.push(harness)
    const before = requestValidation.validated
    let finish: unknown
    for await (const chunk of harness.ctx.llm.stream({ provider: 'scripted', model: 'scripted-coder', messages: [ask('go'), result('nope')] })) {
      if (chunk.type === 'finish') finish = chunk.reason
    }
    // consumed here, so the suite's setup does not fail this test for the refusal it provoked
    expect(requestValidation.refused.splice(0)).toHaveLength(1)
    expect(requestValidation.validated).toBe(before + 1)
    expect(finish).toMatchObject({ kind: 'error', failure: { code: 'INVALID_REQUEST', message: expect.stringMatching(/HTTP 400.*follows no assistant message/) } })
  })
})

describe('our invariant companion', () => {
  /** A real log with committed passes, replayed into a fresh checker with one event altered. */
  async function realLog(): Promise<{ events: SessionEvent[]; session: Session }> {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await engineHarness({ model, tools: agenticTools(2, 600), engine: { thresholdRatio: 0.06, retainRatio: 0.01, retainTokens: 200, minRegionRatio: 0 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'invariant-probe' })
    await harness.play(agent, agenticTurns({ turns: 1, steps: 30, calls: [1, 3], seed: 2 }))
    return { events: [...agent.session.events], session: agent.session }
  }

  function replay(events: readonly SessionEvent[], surface: readonly number[]): string[] {
    const failures: string[] = []
    const checker = new ShadowInvariantChecker({ fail: message => { failures.push(message); throw new Error(message) } })
    const replayed: SessionEvent[] = []
    // the final surface as it stood at each point: nodes not appended yet are left out (what
    // later passes removed went in balanced regions, so balance is unchanged by that)
    const session = { id: 'probe', events: replayed, surface: { get nodes() { return surface.filter(seq => seq < replayed.length) } } } as unknown as Session
    checker.seed(session)
    for (const event of events) {
      replayed.push(event)
      try {
        checker.observe(session, event)
      } catch {
        // recorded above
      }
    }
    return failures
  }

  it('passes a real log and catches a rewritten checkpoint, a pass over a frozen one, and an unbalanced surface', async () => {
    const { events, session } = await realLog()
    expect(replay(events, session.surface.nodes)).toEqual([])
    const checkpointAt = events.findIndex(event => event.type === 'user/message' && typeof event.surfaceOp === 'object' && isCompactCheckpointSource(event.data.source))
    const checkpoint = events[checkpointAt]! as SessionEvent<'user/message'>

    // the same checkpoint id again with other text
    const rewritten = { ...checkpoint, seq: events.length, data: { ...checkpoint.data, content: [{ type: 'text', text: 'rewritten' }] } } as unknown as SessionEvent
    expect(replay([...events, rewritten], session.surface.nodes)).toEqual([expect.stringContaining('changed its text')])

    // a digest pass whose region holds a committed checkpoint
    const summaryAt = events.findLastIndex(event => event.type === 'compaction/summary' && event.data.model === 'digest-v1' && event.seq > checkpoint.seq)
    const summary = events[summaryAt]! as SessionEvent<'compaction/summary'>
    const greedy = { ...summary, data: { ...summary.data, shadowedSeqs: [checkpoint.seq, ...summary.data.shadowedSeqs] } } as unknown as SessionEvent
    expect(replay(events.map((event, index) => (index === summaryAt ? greedy : event)), session.surface.nodes).join(' ')).toContain('committed checkpoints are frozen')

    // the surface after a pass holding a tool result whose call is gone
    const orphan = events.find(event => event.type === 'tool/result' && !session.surface.nodes.includes(event.seq))!
    const problems = replay(events, [orphan.seq, ...session.surface.nodes])
    expect(problems.join(' ')).toContain('tool pairing unbalanced')
  })
})
