import { codingSession, ScriptedModel, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-proactive-')

describe('proactive recall (off by default; precise when on)', () => {
  it('puts the matching passage of a compacted fact in front of a strongly matching turn, and nothing before a turn of common words', async () => {
    const scenario = codingSession({ turns: 160, seed: 31, outputChars: 1_400 })
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await recallHarness({ tools: scenario.tools(), model, recall: { proactive: true } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'proactive' })
    await harness.play(agent, scenario.turns)
    await harness.ctx.shadowCapture.flush()
    const recallMessages = (): string[] => agent.session.events
      .filter(event => event.type === 'user/message' && (event.data as { source?: { kind?: string } }).source?.kind === 'shadow-context')
      .map(event => JSON.stringify(event.data))

    const fact = scenario.facts.find(candidate => candidate.language === 'en' && candidate.where !== 'user')!
    const surface = agent.session.deriveMessages().map(message => JSON.stringify(message.content)).join('\n')
    expect(surface.includes(fact.answer)).toBe(false)
    const before = recallMessages().length
    model.enqueue({ kind: 'text', text: 'ok' })
    await harness.send(agent, fact.question)
    const added = recallMessages().slice(before)
    expect(added).toHaveLength(1)
    // the page is the hit itself from its passage: the answer is in it, the system prompt never is
    expect(added[0]).toContain(fact.answer)
    expect(added[0]).not.toContain('You are a careful coding agent')

    // only topic words count toward a strong match: a turn of stopwords recalls nothing
    await harness.ctx.shadowCapture.flush()
    const quiet = recallMessages().length
    model.enqueue({ kind: 'text', text: 'ok' })
    await harness.send(agent, 'What do we do now? Tell me what you think we should do next, then do it.')
    expect(recallMessages().length).toBe(quiet)
    expect(harness.problems()).toEqual([])
  })

  it.each([100, 600])('keeps a proactive recall message within proactiveTokens %i, its title and read-on line included (a title of 40 long identifiers took it to 188 tokens at 100, 688 at 600)', async budget => {
    const tools: ScriptedTool[] = [{ name: 'shell', description: 'Run a shell command.', run: args => `out of ${JSON.stringify(args)}: ${'log line '.repeat(200)}` }]
    const model = new ScriptedModel({ contextWindow: 8_000 })
    const harness = await recallHarness({ tools, model, recall: { proactive: true, proactiveTokens: budget } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: `proactive-budget-${budget}` })
    const names = Array.from({ length: 40 }, (_, index) => `configureReplicaPoolTimeout${String.fromCharCode(65 + (index % 26))}${index}x`)
    model.enqueue({ kind: 'text', text: 'noted' })
    await harness.send(agent, `Remember these settings: ${names.map(name => `${name}=${name.length * 7}`).join(', ')}. ${'filler text about nothing. '.repeat(300)}`)
    for (let turn = 0; turn < 30; turn += 1) {
      model.enqueue({ kind: 'tools', text: 'x', calls: [{ name: 'shell', args: { command: `c${turn}` } }] }, { kind: 'text', text: `ok ${turn}` })
      await harness.send(agent, `q${turn}`)
    }
    model.enqueue({ kind: 'text', text: 'ok' })
    await harness.send(agent, `What were ${names.join(' ')} set to?`.slice(0, 1_000))
    const recalls = agent.session.events.flatMap(event => event.type === 'user/message' && (event.data.source as { kind?: string }).kind === 'shadow-context'
      ? event.data.content.flatMap(block => (block.type === 'text' ? [block.text] : []))
      : [])
    expect(recalls).toHaveLength(1)
    const text = recalls[0]!
    expect(Math.ceil(text.length / 4)).toBeLessThanOrEqual(budget)
    // what it is for is still there: the hit's words, and where to read on
    expect(text.slice(text.indexOf('\n'))).toContain('PoolTimeout')
    expect(text).toMatch(/\[more: shadow_read \{"id":"[^"]+","at":\d+\}\]$/)
    expect(harness.problems()).toEqual([])
  })
})
