import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { ShadowCapture, ShadowCompactionEngine } from '../src/index.ts'
import { cleanupAfterEach, modelVisible, shadowHarness } from './support.ts'
import { DshHarness } from '@dsh-shadow/testing'

const { harnesses, newHome } = cleanupAfterEach('shadow-preset-')
const presetsRoot = fileURLToPath(new URL('../presets', import.meta.url))
const fixturePresets = fileURLToPath(new URL('./fixtures/presets', import.meta.url))
const baseUrl = pathToFileURL(fileURLToPath(new URL('../package.json', import.meta.url))).href

describe('the shadow-context agent preset (web roster)', () => {
  it('runs Shadow Context for the agents that join it, and only for them', async () => {
    // The preset row resolves its store from $DSH_HOME: point it at a temp home, never ~/.dsh
    // (a store left there by an earlier run would hold this session's rows twice).
    const previousHome = process.env['DSH_HOME']
    process.env['DSH_HOME'] = newHome()
    onTestFinished(() => {
      if (previousHome === undefined) delete process.env['DSH_HOME']
      else process.env['DSH_HOME'] = previousHome
    })
    const scenario = codingSession({ turns: 40, seed: 12 })
    const harness = await DshHarness.create({
      tools: scenario.tools(),
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot, fixturePresets], default: 'shadow-context', baseUrl },
    })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'with-preset', preset: 'shadow-context' })
    // the engine is the preset's, in the preset's realm; the host has no compaction service
    expect(harness.ctx.get('compaction')).toBeUndefined()
    const engine = harness.presetService<ShadowCompactionEngine>(agent, 'compaction')
    expect(engine?.constructor.name).toBe('ShadowCompactionEngine')
    const capture = harness.presetService<ShadowCapture>(agent, 'shadowCapture')!
    // the preset row gets no home: it must take the harness's DSH_HOME, never the user's ~/.dsh
    expect(capture.path).toBe(join(harness.home, 'shadow-context', 'shadow.db'))

    await harness.play(agent, scenario.turns, (_index, end) => expect(end.data.reason.kind).toBe('completed'))
    const summaries = agent.session.events.filter(event => event.type === 'compaction/summary')
    expect(summaries.length).toBeGreaterThan(0)
    expect(summaries.every(event => event.type === 'compaction/summary' && event.data.provider === 'shadow-context')).toBe(true)
    const requests = harness.model.conversationRequests()
    expect(requests.at(-1)!.options.tools?.some(tool => tool.name === 'shadow_search')).toBe(true)
    expect(requests.at(-1)!.options.system).toContain('Shadow Context')

    // dsh's /compact, mounted by the same row, drives this engine
    const commands = (harness.ctx as unknown as { commands: { execute(agent: unknown, name: string, args: string[], signal: AbortSignal): Promise<{ result?: { kind: string } }> } }).commands
    harness.model.enqueue({ kind: 'text', text: 'one more' })
    await harness.send(agent, 'one more turn so there is history to compact')
    const before = agent.session.surface.replaceGeneration
    const outcome = await commands.execute(agent, '/compact', [], new AbortController().signal)
    expect(JSON.stringify(outcome)).toContain('success')
    expect(agent.session.surface.replaceGeneration).toBeGreaterThan(before)

    await capture.flush()
    const store = await capture.opened()
    expect(await store.count({ sessionId: 'with-preset' })).toBe(modelVisible(agent.session).length)

    // an agent on another preset is not captured and gets no recall tools or prompt
    const plain = await harness.createAgent({ sessionId: 'other-preset', preset: 'plain' })
    harness.model.enqueue({ kind: 'text', text: 'plain answer' })
    const end = await harness.send(plain, 'hello from another preset')
    expect(end.data.reason.kind).toBe('completed')
    await capture.flush()
    expect(await store.session('other-preset')).toBeUndefined()
    const last = harness.model.conversationRequests().at(-1)!.options
    expect(last.tools?.some(tool => tool.name === 'shadow_search') ?? false).toBe(false)
    expect(last.system ?? '').not.toContain('Shadow Context')
    expect(harness.problems()).toEqual([])
  })

  it('does not capture sessions of other presets that existed before its preset mounted', async () => {
    const previousHome = process.env['DSH_HOME']
    process.env['DSH_HOME'] = newHome()
    onTestFinished(() => {
      if (previousHome === undefined) delete process.env['DSH_HOME']
      else process.env['DSH_HOME'] = previousHome
    })
    const harness = await DshHarness.create({
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot, fixturePresets], default: 'plain', baseUrl },
    })
    harnesses.push(harness)
    // a session on another preset holds a turn before Shadow Context's standing mount exists
    const plain = await harness.createAgent({ sessionId: 'plain-first', preset: 'plain' })
    harness.model.enqueue({ kind: 'text', text: 'plain answer' })
    expect((await harness.send(plain, 'a secret the user never gave to Shadow Context')).data.reason.kind).toBe('completed')
    const agent = await harness.createAgent({ sessionId: 'shadow-second', preset: 'shadow-context' })
    harness.model.enqueue({ kind: 'text', text: 'shadow answer' })
    expect((await harness.send(agent, 'hello shadow')).data.reason.kind).toBe('completed')
    const capture = harness.presetService<ShadowCapture>(agent, 'shadowCapture')!
    await capture.flush()
    const store = await capture.opened()
    expect(await store.count({ sessionId: 'shadow-second' })).toBe(modelVisible(agent.session).length)
    expect(await store.session('plain-first')).toBeUndefined()
    expect(harness.problems()).toEqual([])
  })

  it('composes at host level too (the headless layout), with the same rows', async () => {
    const harness = await shadowHarness({ model: new ScriptedModel({ contextWindow: 16_000 }) })
    harnesses.push(harness)
    expect(harness.ctx.shadowCapture.constructor.name).toBe('ShadowCapture')
  })
})
