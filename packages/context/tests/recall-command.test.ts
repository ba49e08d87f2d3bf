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
