import { fileURLToPath, pathToFileURL } from 'node:url'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import type { ShadowCapture } from '../src/index.ts'
import { cleanupAfterEach } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-recall-command-')
const presetsRoot = fileURLToPath(new URL('../presets', import.meta.url))
const baseUrl = pathToFileURL(fileURLToPath(new URL('../package.json', import.meta.url))).href

interface Commands {
  list(agent: unknown): ReadonlyArray<{ name: string; description: string }>
  execute(agent: unknown, line: string, images: unknown[], signal: AbortSignal): Promise<{ result: { kind: string; text?: string } } | undefined>
}

describe('/recall in the composer', () => {
  it('searches the shadow for the person, through dsh\'s command registry, without touching the model\'s context', async () => {
    const scenario = codingSession({ turns: 40, seed: 12 })
    const harness = await DshHarness.create({
      tools: scenario.tools(),
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot], default: 'shadow-context', baseUrl },
    })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'recall-command', preset: 'shadow-context' })
    await harness.play(agent, scenario.turns)
    const commands = (harness.ctx as unknown as { commands: Commands }).commands
    expect(commands.list(agent).map(command => command.name)).toContain('recall')

    const fact = scenario.facts.find(candidate => candidate.id === 'db-port')!
    const capture = harness.presetService<ShadowCapture>(agent, 'shadowCapture')!
    await capture.flush()
    const store = await capture.opened()
    const recallsBefore = (await store.recalls('recall-command')).length
    const surfaceBefore = agent.session.surface.nodes.length
    const requestsBefore = harness.model.conversationRequests().length

    const found = await commands.execute(agent, `/recall ${fact.query}`, [], new AbortController().signal)
    expect(found?.result.kind).toBe('success')
    // dsh shows the answer as plain text: the hits' words are not wrapped in Markdown bold marks
    expect(found?.result.text).toContain(fact.answer)
    expect(found?.result.text).not.toMatch(/\*\*[^*\n]+\*\*/)
    expect(found?.result.text).toMatch(/[a-z2-9]{6}\.\d+/)
    // for people only: no model request, nothing on the surface, not a recall of the model's
    expect(harness.model.conversationRequests().length).toBe(requestsBefore)
    expect(agent.session.surface.nodes.length).toBe(surfaceBefore)
    await capture.flush()
    expect((await store.recalls('recall-command')).length).toBe(recallsBefore)

    const empty = await commands.execute(agent, '/recall   ', [], new AbortController().signal)
    expect(empty?.result).toMatchObject({ kind: 'error', text: expect.stringContaining('/recall <') as unknown })
    expect(harness.problems()).toEqual([])
  })
})

describe('plainSnippet', () => {
  it('removes only the marks around matched words, not ** the message wrote', async () => {
    const { plainSnippet } = await import('../src/recall/format.ts')
    expect(plainSnippet({ snippet: 'port **5433** and **bold** text, **Replica** too', matched: ['5433', 'replica'] })).toBe('port 5433 and **bold** text, Replica too')
  })
})

describe('/recall answers with what the hits hold', () => {
  it('shows a snippet holding $` or $& as written, without expanding it (each hit used to multiply the answer)', async () => {
    const harness = await DshHarness.create({
      model: new ScriptedModel({ contextWindow: 16_000 }),
      presets: { roots: [presetsRoot], default: 'shadow-context', baseUrl },
    })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'recall-dollar', preset: 'shadow-context' })
    // String.prototype.replace reads $` as "everything before the match" and $& as "the match"
    const planted = (index: number): string => `price list ${index} of the zebrafinch shop: ${'$`'.repeat(30)} and ${'$&'.repeat(10)} end`
    for (let index = 0; index < 4; index += 1) {
      harness.model.enqueue({ kind: 'text', text: 'Noted.' })
      await harness.send(agent, planted(index))
    }
    const capture = harness.presetService<ShadowCapture>(agent, 'shadowCapture')!
    await capture.flush()
    const commands = (harness.ctx as unknown as { commands: Commands }).commands
    const found = await commands.execute(agent, '/recall zebrafinch price list', [], new AbortController().signal)
    expect(found?.result.kind).toBe('success')
    const text = found!.result.text!
    expect(text.match(/zebrafinch/g)?.length).toBeGreaterThanOrEqual(4)
    // every hit line shows the planted dollars as they are, and the answer stays small
    expect(text).toContain(`${'$`'.repeat(30)} and ${'$&'.repeat(10)}`)
    expect(text.length).toBeLessThan(10_000)
    expect(harness.problems()).toEqual([])
  })
})
