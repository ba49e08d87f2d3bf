import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
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
})
