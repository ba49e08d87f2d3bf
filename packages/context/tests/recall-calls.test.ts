import { ScriptedModel, type ScriptedReply, type ScriptedRequest, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { READ_TOOL, SEARCH_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-calls-')

/** A file body whose value sits well past the start: the call's arguments hold it, the result does not. */
const PREAMBLE = Array.from({ length: 30 }, (_, index) => `// note ${index}: limits are read once at startup and cached for the process lifetime`).join('\n')
const CONTENT = `${PREAMBLE}\nexport const RETRY_LIMIT = 7\nexport const BACKOFF_MS = 250\n`

const TOOLS: ScriptedTool[] = [{ name: 'write_file', description: 'Write a file.', run: args => `wrote ${String((args as { path?: unknown }).path)} (1 line changed)` }]

describe('a tool result hit reaches its call\'s arguments in one call (real dsh)', () => {
  it('shadow_read of the result shows the call first, and the search snippet shows the value in the arguments', async () => {
    const model = new ScriptedModel({ contextWindow: 64_000 })
    const harness = await recallHarness({ tools: TOOLS, model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'calls' })
    model.enqueue({ kind: 'tools', text: 'Writing it.', calls: [{ name: 'write_file', args: { path: 'src/limits.ts', content: CONTENT } }] }, { kind: 'text', text: 'Written.' })
    await harness.send(agent, 'Put the retry limits in src/limits.ts.')
    for (let index = 0; index < 4; index += 1) {
      model.enqueue({ kind: 'text', text: `Reply ${index}.` })
      await harness.send(agent, `Unrelated question ${index} about the weather.`)
    }
    await harness.ctx.shadowCapture.flush()

    const seen: string[] = []
    const read = (request: ScriptedRequest): ScriptedReply => {
      seen.push(request.lastText())
      const hit = /^1\. (\S+) ·/m.exec(request.lastText())
      // the result alone, no neighbours (as a read at a passage starts)
      return { kind: 'tools', calls: [{ name: READ_TOOL, args: { id: hit![1]!, before: 0, after: 0 } }] }
    }
    model.enqueue(
      { kind: 'tools', text: 'Looking it up.', calls: [{ name: SEARCH_TOOL, args: { query: 'RETRY_LIMIT value written to src/limits.ts' } }] },
      read,
      request => {
        seen.push(request.lastText())
        return { kind: 'text', text: 'It is 7.' }
      },
    )
    await harness.send(agent, 'What did we set RETRY_LIMIT to?')
    const [search, transcript] = seen
    // the hit is the result (called in the assistant message); its snippet reaches the value in the arguments
    expect(search).toMatch(/^1\. \S+ · .*tool write_file.*\(called in \S+\)/m)
    expect(search).toContain('**RETRY_LIMIT** = 7')
    // reading the result by id shows the call's arguments first, with the value
    expect(transcript).toMatch(/── called in \S+ · .* · assistant\n/)
    expect(transcript).toContain('RETRY_LIMIT = 7')
    expect(transcript).toContain('wrote src/limits.ts (1 line changed)')
    expect(harness.problems()).toEqual([])
  })
})
