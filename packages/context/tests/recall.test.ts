import { codingSession, ScriptedModel, type ScriptedReply, type ScriptedRequest } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { READ_TOOL, SEARCH_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-recall-')

/** Shadow ids listed in a shadow_search result, best first. */
function hitIds(text: string): string[] {
  return [...text.matchAll(/^\d+\. (\S+) ·/gm)].map(match => match[1]!)
}

describe('recall on real dsh', () => {
  it('brings back the exact original of every planted fact after many compaction passes', async () => {
    const scenario = codingSession({ turns: 160, seed: 31, outputChars: 1_400 })
    const model = new ScriptedModel({ contextWindow: 32_000 })
    const harness = await recallHarness({ tools: scenario.tools(), model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'recall-e2e' })
    await harness.play(agent, scenario.turns)
    const passes = agent.session.events.filter(event => event.type === 'compaction/summary').length
    expect(passes).toBeGreaterThanOrEqual(5)
    expect(scenario.facts.map(fact => fact.where)).toEqual(expect.arrayContaining(['user', 'tool', 'assistant']))
    expect(scenario.facts.some(fact => fact.language === 'zh')).toBe(true)

    for (const fact of scenario.facts) {
      // The fact is no longer on the surface: only recall can bring it back.
      const surfaceText = agent.session.deriveMessages().map(message => JSON.stringify(message.content)).join('\n')
      expect(surfaceText.includes(fact.answer), `${fact.id} should have been compacted away`).toBe(false)

      // A scripted agent: search, then read hits until one holds the answer, then answer.
      let candidates: string[] = []
      const readNext = (request: ScriptedRequest): ScriptedReply => {
        if (request.lastText().includes(fact.answer) || candidates.length === 0) return { kind: 'text', text: `Found it: ${fact.answer}` }
        return { kind: 'tools', calls: [{ name: READ_TOOL, args: { id: candidates.shift()!, before: 1, after: 1 } }] }
      }
      model.enqueue(
        { kind: 'tools', text: 'Let me look that up.', calls: [{ name: SEARCH_TOOL, args: { query: fact.query } }] },
        request => {
          candidates = hitIds(request.lastText()).slice(0, 3)
          return readNext(request)
        },
        readNext, readNext, readNext,
      )
      const before = agent.session.events.length
      await harness.send(agent, fact.question)
      model.clearQueue() // replies the agent did not need

      const turnEvents = agent.session.events.slice(before)
      const reads = turnEvents.filter(event => event.type === 'tool/result' && JSON.stringify(event.data).includes('shadow_read '))
      const exact = reads.some(event => event.type === 'tool/result' && event.data.message.content.some(block =>
        block.type === 'tool-result' && block.content.some(inner => inner.type === 'text' && inner.text.includes(fact.answer))))
      expect(exact, `${fact.id}: "${fact.answer}" came back verbatim through ${READ_TOOL}`).toBe(true)
      expect(turnEvents.some(event => event.type === 'tool/call' && event.data.name === SEARCH_TOOL)).toBe(true)
    }
    // the recalls were recorded next to the log
    await harness.ctx.shadowCapture.flush()
    const recalls = await harness.ctx.shadowCapture.store.recalls('recall-e2e')
    expect(recalls.filter(recall => recall.kind === 'search')).toHaveLength(scenario.facts.length)
    expect(harness.problems()).toEqual([])
    console.log(`recall: ${scenario.facts.length}/${scenario.facts.length} planted facts came back verbatim through ${READ_TOOL} after ${passes} compaction passes (${scenario.facts.map(fact => `${fact.id}:${fact.where}/${fact.language}`).join(', ')})`)
  })
})
