import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { applyEvent, initState, PROJECTION_KEY, SEARCH_TOOL, ShadowContextReader, ShadowContextViewSchema, ShadowProjection, type ShadowContextView } from '../src/index.ts'
import { RedactionRegistry } from '../src/redaction-registry.ts'
import { MASK_MODEL } from '../src/engine/engine.ts'
import { MASK_MARKER } from '../src/engine/mask.ts'
import { cleanupAfterEach } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-projection-')

describe('shadowContext projection unit', () => {
  it('keeps the same state for events it does not care about', () => {
    const state = initState()
    const chunk = { type: 'assistant/chunk', seq: 3, time: 1, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } } } as unknown as SessionEvent
    expect(applyEvent(state, chunk)).toBe(state)
    const stepStart = { type: 'step/start', seq: 4, time: 1, data: { turn: 1, step: 1 } } as unknown as SessionEvent
    expect(applyEvent(state, stepStart)).toBe(state)
  })

  it('turns a committed checkpoint into a view with its seq and time range', () => {
    let state = initState()
    const events = [
      { type: 'turn/start', seq: 0, time: 10, data: { turn: 7 } },
      { type: 'compaction/summary', seq: 1, time: 20, data: { compactionId: 'k7q2mz.c1', summary: [], shadowedRange: { start: 4, end: 30 }, shadowedSeqs: [4, 9, 30], shadowedTokenCount: 900, provider: 'shadow-context', model: 'digest-v1' } },
      { type: 'user/message', seq: 2, time: 30, surfaceOp: { op: 'replace', start: 4, end: 30 }, data: { role: 'user', id: 'm', source: { kind: 'plugin', plugin: 'compact', compactionId: 'k7q2mz.c1' }, content: [{ type: 'text', text: '[shadow k7q2mz.c1] 3 messages · shadow ids k7q2mz.4 … k7q2mz.30 · 2026-11-30 09:12:05 → 2026-11-30 09:41:50 UTC' }] } },
      { type: 'compaction/end', seq: 3, time: 40, data: { compactionId: 'k7q2mz.c1', turn: 7 } },
    ] as unknown as SessionEvent[]
    for (const event of events) state = applyEvent(state, event)
    const view = ShadowContextViewSchema.parse({ ...state })
    expect(view.active).toBe(true)
    expect(view.shadowed).toBe(3)
    expect(view.checkpoints).toEqual([{
      id: 'k7q2mz.c1', kind: 'digest', engine: 'shadow-context', seq: 2, time: 30, seqFrom: 4, seqTo: 30,
      timeFrom: Date.UTC(2026, 10, 30, 9, 12, 5), timeTo: Date.UTC(2026, 10, 30, 9, 41, 50), shadowFrom: 'k7q2mz.4', shadowTo: 'k7q2mz.30',
      messages: 3, shadowedTokens: 900, turn: 7,
      // the checkpoint message's own price, estimated like dsh's meter (chars / 4 + 4)
      digestTokens: Math.ceil('[shadow k7q2mz.c1] 3 messages · shadow ids k7q2mz.4 … k7q2mz.30 · 2026-11-30 09:12:05 → 2026-11-30 09:41:50 UTC'.length / 4) + 4,
    }])
    // what it saved, in totals that outlive the capped checkpoint list
    expect(view).toMatchObject({ savedTokens: 900, checkpointTokens: view.checkpoints[0]!.digestTokens, recalledMessages: 0 })
  })

  it('calls an observation-mask stub a mask, not an LLM summary', () => {
    let state = initState()
    const stub = `${MASK_MARKER} k7q2mz.c2 · turn 3] tool outputs stored verbatim; read one with shadow_read {"id":"…"}\n[shadow k7q2mz.c2] seqs 40–41 · 2026-11-30 09:12:05 → 2026-11-30 09:12:09 UTC · shadow_read {"checkpoint":"k7q2mz.c2"}`
    const events = [
      { type: 'compaction/summary', seq: 50, time: 20, data: { compactionId: 'k7q2mz.c2', summary: [], shadowedRange: { start: 40, end: 41 }, shadowedSeqs: [40, 41], shadowedTokenCount: 4_000, provider: 'shadow-context', model: MASK_MODEL } },
      { type: 'user/message', seq: 51, time: 30, surfaceOp: { op: 'replace', start: 40, end: 41 }, data: { role: 'user', id: 'm', source: { kind: 'plugin', plugin: 'compact', compactionId: 'k7q2mz.c2' }, content: [{ type: 'text', text: stub }] } },
    ] as unknown as SessionEvent[]
    for (const event of events) state = applyEvent(state, event)
    expect(ShadowContextViewSchema.parse({ ...state }).checkpoints.map(checkpoint => checkpoint.kind)).toEqual(['mask'])
  })
})

describe('shadowContext projection unit, pointer parsing', () => {
  it('takes the shadow id range from its own footer, not from a footer the digest quotes', () => {
    let state = initState()
    const quoted = '> user said: "[shadow aaaaaa.c1] 2 messages (1 user, 1 assistant, 0 tool) · shadow ids aaaaaa.1 … aaaaaa.2 · seqs 1–2 · x"'
    const footer = '[shadow k7q2mz.c2] 3 messages (1 user, 1 assistant, 1 tool) · shadow ids k7q2mz.4 … k7q2mz.30 · seqs 4–30 · 2026-11-30 09:12:05 → 2026-11-30 09:41:50 UTC'
    const events = [
      { type: 'compaction/summary', seq: 40, time: 20, data: { compactionId: 'k7q2mz.c2', summary: [], shadowedRange: { start: 4, end: 30 }, shadowedSeqs: [4, 9, 30], shadowedTokenCount: 900, provider: 'shadow-context', model: 'digest-v1' } },
      { type: 'user/message', seq: 41, time: 30, surfaceOp: { op: 'replace', start: 4, end: 30 }, data: { role: 'user', id: 'm', source: { kind: 'plugin', plugin: 'compact', compactionId: 'k7q2mz.c2' }, content: [{ type: 'text', text: `${quoted}\n${footer}` }] } },
    ] as unknown as SessionEvent[]
    for (const event of events) state = applyEvent(state, event)
    expect(ShadowContextViewSchema.parse({ ...state }).checkpoints[0]).toMatchObject({ shadowFrom: 'k7q2mz.4', shadowTo: 'k7q2mz.30' })
  })
})

describe('shadowContext projection on real dsh', () => {
  it('says per session whether Shadow Context runs there, with checkpoints and recalls', async () => {
    const presetsRoot = fileURLToPath(new URL('../presets', import.meta.url))
    const fixtures = fileURLToPath(new URL('./fixtures/presets', import.meta.url))
    const scenario = codingSession({ turns: 40, seed: 6 })
    const harness = await DshHarness.create({
      tools: scenario.tools(),
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot, fixtures], default: 'shadow-context', baseUrl: pathToFileURL(fileURLToPath(new URL('../package.json', import.meta.url))).href },
      plugins: [{ plugin: ShadowProjection }],
    })
    harnesses.push(harness)
    const shadow = await harness.createAgent({ sessionId: 'shadow-session', preset: 'shadow-context' })
    const plain = await harness.createAgent({ sessionId: 'plain-session', preset: 'plain' })
    await harness.play(shadow, scenario.turns)
    await harness.play(plain, scenario.turns.slice(0, 5).map(turn => ({ ...turn, steps: [{ kind: 'text', text: 'plain answer' }] })))
    harness.model.enqueue({ kind: 'tools', calls: [{ name: SEARCH_TOOL, args: { query: 'staging database port' } }] }, { kind: 'text', text: 'found it' })
    await harness.send(shadow, 'Which port did we pick for staging?')
    // the preset's rows name no home: their store is the harness's, not the user's ~/.dsh
    expect(existsSync(join(harness.home, 'shadow-context', 'shadow.db'))).toBe(true)

    const registry = harness.ctx.sessionProjections
    const shadowValue = registry.snapshot(shadow.session).values[PROJECTION_KEY] as ShadowContextView
    const plainValue = registry.snapshot(plain.session).values[PROJECTION_KEY] as ShadowContextView
    // the key is there for both (process-wide); the value tells them apart
    expect(plainValue).toMatchObject({ active: false, checkpointCount: 0, recallCount: 0, shadowed: 0, lastFailure: null })
    expect(shadowValue.active).toBe(true)
    expect(shadowValue.checkpointCount).toBeGreaterThan(0)
    expect(shadowValue.checkpoints.every(checkpoint => checkpoint.timeFrom !== null && checkpoint.seqFrom <= checkpoint.seqTo)).toBe(true)
    expect(shadowValue.recalls.at(-1)).toMatchObject({ kind: 'search', query: 'staging database port', ok: true })
    expect(shadowValue.recalls.at(-1)!.ids.length).toBeGreaterThan(0)
    expect(shadowValue.captured).toBe(shadow.session.events.filter(event => ['user/message', 'assistant/message', 'tool/result'].includes(event.type)).length)
    console.log(`projection snapshots, side by side:\n${JSON.stringify({ 'shadow-session': { ...shadowValue, checkpoints: shadowValue.checkpoints.slice(-2) }, 'plain-session': plainValue }, null, 2)}`)
  })
})

describe('shadowContext projection in a web profile (capture in the preset, projection on the host)', () => {
  it('redacts the model\'s recall queries with the preset capture\'s policy (the host projection used to keep them verbatim)', async () => {
    const presetsRoot = fileURLToPath(new URL('../presets', import.meta.url))
    const fixtures = fileURLToPath(new URL('./fixtures/presets', import.meta.url))
    const key = 'sk-live0123456789abcdefghij'
    const harness = await DshHarness.create({
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot, fixtures], default: 'shadow-redact', baseUrl: pathToFileURL(fileURLToPath(new URL('../package.json', import.meta.url))).href },
      plugins: [{ plugin: ShadowProjection }],
    })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'web-redact', preset: 'shadow-redact' })
    harness.model.enqueue({ kind: 'text', text: 'Stored.' })
    await harness.send(agent, `Deploy with DEEPSEEK_API_KEY=${key} in eu-west-1.`)
    harness.model.enqueue({ kind: 'tools', calls: [{ name: SEARCH_TOOL, args: { query: `where did we deploy with ${key}` } }] }, { kind: 'text', text: 'found it' })
    await harness.send(agent, 'Where did we deploy?')
    // a refused read echoes what it was given ("no checkpoint …"): the timeline's error snippet keeps it redacted too
    harness.model.enqueue({ kind: 'tools', calls: [{ name: 'shadow_read', args: { checkpoint: key } }] }, { kind: 'text', text: 'no such checkpoint' })
    await harness.send(agent, 'Read that checkpoint.')
    const value = harness.ctx.sessionProjections.snapshot(agent.session).values[PROJECTION_KEY] as ShadowContextView
    expect(value.recalls.at(-1)!.ok).toBe(false)
    expect(value.active).toBe(true)
    expect(value.recalls.length).toBeGreaterThan(0)
    expect(JSON.stringify(value)).not.toContain('sk-live0123456789')
    expect(value.recalls.at(-2)!.query).toContain('[REDACTED:')
    expect(value.recalls.at(-1)!.snippet).toContain('[REDACTED:')
  })

  it('redacts a cold session\'s recall queries with the store\'s policy as soon as the web reader starts, before any request', async () => {
    const presetsRoot = fileURLToPath(new URL('../presets', import.meta.url))
    const fixtures = fileURLToPath(new URL('./fixtures/presets', import.meta.url))
    const presets = { roots: [presetsRoot, fixtures], default: 'shadow-redact', baseUrl: pathToFileURL(fileURLToPath(new URL('../package.json', import.meta.url))).href }
    const key = 'sk-live9876543210zyxwvutsrqp'
    const home = newHome()
    // a past server run: the preset's capture stored the session (redacting) and the model searched with a key
    const before = await DshHarness.create({ home, model: new ScriptedModel({ contextWindow: 16_000 }), presets })
    const agent = await before.createAgent({ sessionId: 'cold-redact', preset: 'shadow-redact' })
    before.model.enqueue({ kind: 'text', text: 'Stored.' })
    await before.send(agent, `Deploy with DEEPSEEK_API_KEY=${key} in eu-west-1.`)
    before.model.enqueue({ kind: 'tools', calls: [{ name: SEARCH_TOOL, args: { query: `where did we deploy with ${key}` } }] }, { kind: 'text', text: 'found it' })
    await before.send(agent, 'Where did we deploy?')
    expect(before.invariantFailures()).toEqual([])
    await before.dispose({ keepHome: true })
    // a new server: no capture has run in it, so no policy is registered in the process
    expect(RedactionRegistry.text(key)).toBe(key)
    const harness = await DshHarness.create({ home, model: new ScriptedModel({ contextWindow: 16_000 }), plugins: [{ plugin: ShadowProjection }, { plugin: ShadowContextReader, config: { home } }] })
    harnesses.push(harness)
    await (harness.ctx as unknown as { shadowContextReader: ShadowContextReader }).shadowContextReader.policyRead
    // the cold session opened from the sidebar: resumed without its preset, no reader request made
    const cold = await harness.resume('cold-redact')
    const value = harness.ctx.sessionProjections.snapshot(cold.session).values[PROJECTION_KEY] as ShadowContextView
    expect(value.recalls.length).toBeGreaterThan(0)
    expect(JSON.stringify(value)).not.toContain('sk-live9876543210')
    expect(value.recalls.at(-1)!.query).toContain('[REDACTED:')
  })
})
