/**
 * Observation masking on real dsh: bulky tool steps behind a pass's new checkpoint become pointer
 * stubs. A masked output comes back byte-exact through shadow_read; the request prefix before the
 * pass's change point is unchanged (masks never rewrite what the cache already holds); the next
 * pass folds the stubs; tool pairing stays balanced on every request (the suite's validator).
 */
import { agenticTools, agenticTurns, ScriptedModel, type ScriptedRequest } from '@dsh-shadow/testing'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { shadowId } from '@dsh-shadow/store'
import { describe, expect, it } from 'vitest'
import { READ_TOOL } from '../src/index.ts'
import { MASK_MARKER, maskPays } from '../src/engine/mask.ts'
import { selectMasks, type PolicyNode } from '../src/engine/region.ts'
import { cleanupAfterEach, pairingProblems, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-mask-')

const textOf = (request: ScriptedRequest, index: number): string => JSON.stringify(request.options.messages[index]?.content ?? null)

function summaries(events: readonly SessionEvent[], model: string): Array<Extract<SessionEvent, { type: 'compaction/summary' }>> {
  return events.filter((event): event is Extract<SessionEvent, { type: 'compaction/summary' }> => event.type === 'compaction/summary' && event.data.model === model)
}

describe('observation masking', () => {
  it('masks bulky steps behind a pass, keeps the prefix, and a masked output reads back byte-exact', async () => {
    const model = new ScriptedModel({ contextWindow: 24_000 })
    const harness = await recallHarness({ model, tools: agenticTools(3, 1_600), engine: { thresholdRatio: 0.4, retainRatio: 0.05, maskTokens: 200 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'mask-e2e' })
    await harness.play(agent, agenticTurns({ turns: 8, steps: 8, calls: [1, 2], seed: 5 }))
    const events = agent.session.events
    const masks = summaries(events, 'mask-v1')
    const digests = summaries(events, 'digest-v1')
    expect(masks.length).toBeGreaterThan(0)

    // every mask came right after a digest in the same pass: it sits behind that pass's change point
    for (const mask of masks) {
      const digest = digests.findLast(entry => entry.seq < mask.seq)
      expect(digest, `${mask.data.compactionId} follows a digest`).toBeDefined()
      const between = events.filter(event => event.seq > digest!.seq && event.seq < mask.seq)
      expect(between.some(event => event.type === 'step/start' || event.type === 'assistant/message'), 'no request between the digest and its masks').toBe(false)
    }

    // the first request after each pass shares every message before its new checkpoint with the request before it
    const conversation = model.requests.filter(request => request.purpose === 'conversation' && !request.rejected)
    let checked = 0
    for (let index = 1; index < conversation.length; index += 1) {
      const before = conversation[index - 1]!
      const after = conversation[index]!
      const stubs = after.options.messages.filter(message => message.content.some(block => block.type === 'text' && block.text.startsWith(MASK_MARKER)))
      const fresh = stubs.filter(stub => !before.options.messages.some(message => JSON.stringify(message.content) === JSON.stringify(stub.content)))
      if (fresh.length === 0) continue
      let differ = 0
      while (differ < before.options.messages.length && textOf(before, differ) === textOf(after, differ)) differ += 1
      // the first difference is the pass's new digest checkpoint, and every new stub comes after it
      expect(textOf(after, differ)).toContain('[Shadow Context checkpoint')
      for (const stub of fresh) expect(after.options.messages.indexOf(stub)).toBeGreaterThan(differ)
      expect(pairingProblems(after.options.messages)).toEqual([])
      checked += 1
    }
    expect(checked).toBeGreaterThan(0)

    // a masked output, named by its shadow id in the stub, comes back byte-exact through shadow_read
    const mask = masks[0]!
    const original = mask.data.shadowedSeqs.map(seq => events.find(event => event.seq === seq)!).find(event => event.type === 'tool/result')!
    expect(original.type).toBe('tool/result')
    const originalText = original.type === 'tool/result' ? original.data.message.content.flatMap(block => (block.type === 'tool-result' ? block.content : [])).map(inner => (inner.type === 'text' ? inner.text : '')).join('') : ''
    expect(originalText.length).toBeGreaterThan(800)
    const tag = await harness.ctx.shadowCapture.tag('mask-e2e')
    const id = shadowId(tag, original.seq)
    const stubText = mask.data.summary.map(block => (block.type === 'text' ? block.text : '')).join('')
    expect(stubText).toContain(id)
    expect(stubText).not.toContain(originalText.slice(0, 400))
    model.enqueue({ kind: 'tools', calls: [{ name: READ_TOOL, args: { id, before: 0, after: 0, budget: 8_000 } }] }, { kind: 'text', text: 'Read it.' })
    await harness.send(agent, 'Show me that output again.')
    const read = agent.session.events.findLast(event => event.type === 'tool/result')
    const readText = read?.type === 'tool/result' ? JSON.stringify(read.data.message.content) : ''
    expect(readText).toContain(JSON.stringify(originalText).slice(1, -1))

    // a later pass folded earlier stubs: no stub lives before the newest frozen checkpoint
    const surface = agent.session.deriveMessages().map(message => message.content.map(block => (block.type === 'text' ? block.text : '')).join(''))
    const lastFrozen = surface.findLastIndex(text => text.startsWith('[Shadow Context checkpoint') || text.startsWith('[Shadow Context index'))
    expect(surface.slice(0, Math.max(0, lastFrozen)).some(text => text.startsWith(MASK_MARKER))).toBe(false)
    expect(digests.length).toBeGreaterThan(1)
    expect(harness.problems()).toEqual([])
  })
})

describe('masking at overflow recovery', () => {
  it('masks a tool output bigger than the window, even in the first turn, so the turn completes and the output reads back byte-exact', async () => {
    const WINDOW = 16_000
    const log = (turn: number): string => Array.from({ length: 4_000 }, (_, line) => `turn ${turn} line ${line} of the build log: compiled module m${line % 997} ok`).join('\n')
    const model = new ScriptedModel({ contextWindow: WINDOW })
    const harness = await recallHarness({ model, tools: [{ name: 'shell', description: 'run a command', run: args => log(Number((args as { turn?: unknown }).turn)) }] })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'mask-overflow' })
    for (const turn of [1, 2]) {
      model.enqueue({ kind: 'tools', calls: [{ name: 'shell', args: { command: 'make', turn } }] }, { kind: 'text', text: `Built ${turn}.` })
      const end = await harness.send(agent, `Build it (${turn}).`)
      expect(end.data.reason, `turn ${turn}`).toEqual({ kind: 'completed' })
    }
    expect(log(1).length / 4).toBeGreaterThan(WINDOW * 3) // the output alone is far over the window
    const sent = model.requests.filter(request => request.purpose === 'conversation' && !request.rejected)
    for (const request of sent) expect(request.inputTokens).toBeLessThan(WINDOW)
    // the model was told where each output is, and reads it back exactly from there
    const tag = await harness.ctx.shadowCapture.tag('mask-overflow')
    const result = agent.session.events.find(event => event.type === 'tool/result')!
    const id = shadowId(tag, result.seq)
    expect(sent.some(request => request.options.messages.some(message => message.content.some(block => block.type === 'text' && block.text.startsWith(MASK_MARKER) && block.text.includes(id))))).toBe(true)
    model.enqueue({ kind: 'tools', calls: [{ name: READ_TOOL, args: { id, before: 0, after: 0, budget: 2_000 } }] }, { kind: 'text', text: 'Read it.' })
    await harness.send(agent, 'Show me the start of the first build log.')
    const read = agent.session.events.findLast(event => event.type === 'tool/result')
    const readText = read?.type === 'tool/result' ? JSON.stringify(read.data.message.content) : ''
    expect(readText).toContain(JSON.stringify(log(1).slice(0, 4_000)).slice(1, -1))
    expect(harness.problems()).toEqual([])
  })

  it('leaves the current turn\'s outputs alone when the digest of earlier turns is enough', async () => {
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await recallHarness({ model, tools: agenticTools(3, 1_600), engine: { thresholdRatio: 0.6 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'mask-overflow-enough' })
    await harness.play(agent, agenticTurns({ turns: 3, steps: 3, calls: [1, 1], seed: 9 }))
    expect(summaries(agent.session.events, 'mask-v1')).toEqual([])
    // the provider refuses the request after this turn's first bulky output (its prompt window is smaller than it said)
    const [turn] = agenticTurns({ turns: 1, steps: 2, calls: [1, 1], seed: 10 })
    model.enqueue(turn!.steps[0]!, { kind: 'overflow' }, ...turn!.steps.slice(1))
    const end = await harness.send(agent, turn!.prompt)
    expect(end.data.reason).toEqual({ kind: 'completed' })
    const events = agent.session.events
    expect(summaries(events, 'digest-v1').length).toBeGreaterThan(0)
    expect(summaries(events, 'mask-v1')).toEqual([])
    expect(harness.problems()).toEqual([])
  })

  it('masks a step of 600 parallel calls into a stub that fits, naming the middle results as one range', async () => {
    const WINDOW = 16_000
    const model = new ScriptedModel({ contextWindow: WINDOW })
    const harness = await recallHarness({ model, tools: [{ name: 'read_file', description: 'read a file', run: args => `${JSON.stringify(args)}: export const x = 1 // ${'ok '.repeat(20)}` }] })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'mask-parallel' })
    model.enqueue({ kind: 'tools', calls: Array.from({ length: 600 }, (_, index) => ({ name: 'read_file', args: { path: `src/file${index}.ts` } })) }, { kind: 'text', text: 'Read them all.' })
    const end = await harness.send(agent, 'Read every file.')
    expect(end.data.reason).toEqual({ kind: 'completed' })
    const sent = model.requests.filter(request => request.purpose === 'conversation')
    expect(sent.some(request => request.rejected)).toBe(true) // the step alone was over the window
    const stub = sent.at(-1)!.options.messages.flatMap(message => message.content).find(block => block.type === 'text' && block.text.startsWith(MASK_MARKER))
    const text = stub?.type === 'text' ? stub.text : ''
    expect(text.split('\n').length).toBeLessThan(50)
    expect(text).toMatch(/- … 560 more results \(read_file ×560\), \S+\.\d+ … \S+\.\d+: shadow_read \{"checkpoint":"\S+"\}/)
    expect(text).toContain('src/file0.ts')
    expect(text).toContain('src/file599.ts')
    expect(sent.at(-1)!.inputTokens).toBeLessThan(WINDOW)
    expect(harness.problems()).toEqual([])
  })
})

describe('masking between passes', () => {
  it('masks without a pass only when the configured cache price says it pays, and never rewrites before its first stub', async () => {
    const run = async (maskHitRatio: number) => {
      const model = new ScriptedModel({ contextWindow: 24_000 })
      const harness = await recallHarness({ model, tools: agenticTools(3, 1_600), engine: { thresholdRatio: 0.6, retainRatio: 0.05, maskTokens: 200, maskHitRatio } })
      harnesses.push(harness)
      const agent = await harness.createAgent({ sessionId: `mask-between-${maskHitRatio}` })
      await harness.play(agent, agenticTurns({ turns: 4, steps: 10, calls: [1, 2], seed: 6 }))
      expect(harness.problems()).toEqual([])
      const events = agent.session.events
      // a mask with a model reply since the previous pass of any kind: masking between passes
      const between = summaries(events, 'mask-v1').filter(mask => {
        const previous = events.filter(event => event.seq < mask.seq && event.type === 'compaction/summary').at(-1)
        const gap = events.filter(event => event.seq > (previous?.seq ?? -1) && event.seq < mask.seq)
        return gap.some(event => event.type === 'assistant/message')
      })
      return { model, between }
    }
    const never = await run(0)
    expect(never.between).toEqual([])
    const paid = await run(0.9)
    expect(paid.between.length).toBeGreaterThan(0)
    // the request after a between-pass mask keeps every message before its first new stub
    const conversation = paid.model.requests.filter(request => request.purpose === 'conversation' && !request.rejected)
    let checked = 0
    for (let index = 1; index < conversation.length; index += 1) {
      const before = conversation[index - 1]!
      const after = conversation[index]!
      let differ = 0
      while (differ < before.options.messages.length && textOf(before, differ) === textOf(after, differ)) differ += 1
      if (differ >= before.options.messages.length) continue
      const first = textOf(after, differ)
      if (first.includes('[Shadow Context checkpoint') || first.includes('[Shadow Context index')) continue // a digest pass
      expect(first, 'a rewrite between passes starts at a mask stub').toContain(MASK_MARKER)
      checked += 1
    }
    expect(checked).toBeGreaterThan(0)
  })
})

describe('mask selection', () => {
  const node = (seq: number, role: 'user' | 'assistant' | 'tool', tokens: number, balancedBefore = role !== 'tool'): PolicyNode => ({ seq, tokens, role, checkpoint: false, turnStart: false, balancedBefore })

  it('takes whole balanced steps with bulky outputs, merges adjacent ones, and spares the newest', () => {
    const nodes = [
      node(1, 'user', 50), node(2, 'assistant', 40), node(3, 'tool', 900), // bulky
      node(4, 'assistant', 40), node(5, 'tool', 600), node(6, 'tool', 300), // bulky, adjacent: merges
      node(7, 'assistant', 40), node(8, 'tool', 20), // small: stays
      node(9, 'assistant', 40), node(10, 'tool', 1_000), // newest: kept
    ]
    expect(selectMasks(nodes, { from: 0, minTokens: 500, keepTokens: 1_000, balancedAtEnd: true })).toEqual([{ startIdx: 1, endIdx: 5, tokens: 1_880 }])
    // nothing behind the start point
    expect(selectMasks(nodes, { from: 6, minTokens: 500, keepTokens: 1_000, balancedAtEnd: true })).toEqual([])
    // a step whose results are still open at the end is not cut
    expect(selectMasks(nodes, { from: 0, minTokens: 500, keepTokens: 0, balancedAtEnd: false }).at(-1)?.endIdx).toBe(5)
  })
})

describe('mask price policy', () => {
  const node = (seq: number, tokens: number): PolicyNode => ({ seq, tokens, role: seq % 2 === 0 ? 'tool' : 'assistant', checkpoint: false, turnStart: false, balancedBefore: seq % 2 === 1 })
  // 10 nodes of 1,000 tokens; a run over nodes 2-5 (4,000 tokens) leaves a suffix of 8,000 from its start
  const nodes = Array.from({ length: 10 }, (_, index) => node(index + 1, 1_000))
  const runs = [{ startIdx: 2, endIdx: 5, tokens: 4_000 }]

  it('masks when the saving over the horizon outweighs the one-time miss of the suffix, and never at a hit price of 0', () => {
    // removed = 4,000 - 80 = 3,920; the miss once: (1 - hit) × (8,000 - 3,920) = 0.9 × 4,080 = 3,672
    // horizon = min(3,920, 20,000 - 10,000) / growth: growth 500 → 7.84 requests; saving 0.1 × 3,920 × 7.84 = 3,073: waits
    expect(maskPays(nodes, runs, { total: 10_000, thresholdTokens: 20_000, growth: 500, hitRatio: 0.1 })).toBe(false)
    // growth 400 → 9.8 requests; saving 3,842 > 3,672: masks
    expect(maskPays(nodes, runs, { total: 10_000, thresholdTokens: 20_000, growth: 400, hitRatio: 0.1 })).toBe(true)
    expect(maskPays(nodes, runs, { total: 10_000, thresholdTokens: 20_000, growth: 1, hitRatio: 0 })).toBe(false)
    // close to the threshold the horizon shrinks to what is left before the next pass
    expect(maskPays(nodes, runs, { total: 19_900, thresholdTokens: 20_000, growth: 400, hitRatio: 0.1 })).toBe(false)
    expect(maskPays(nodes, [], { total: 10_000, thresholdTokens: 20_000, growth: 1, hitRatio: 0.5 })).toBe(false)
  })
})
