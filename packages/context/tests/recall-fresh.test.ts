/**
 * Read your own writes: capture batches what it sees for up to `batchDelayMs` before writing, and
 * a recall call (or the turn-start proactive search) must still find everything captured before
 * it, not only what a timer happened to write. With a batch delay longer than the test, nothing
 * reaches the store unless the recall itself flushes it.
 */
import { ScriptedModel, type ScriptedReply, type ScriptedRequest } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { SEARCH_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-fresh-')

describe('a recall sees what was captured just before it (real dsh)', () => {
  it('finds the previous turn\'s words while capture still holds them in its batch', async () => {
    const model = new ScriptedModel({ contextWindow: 64_000 })
    const harness = await recallHarness({ model, capture: { batchDelayMs: 600_000 } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'fresh' })
    model.enqueue({ kind: 'text', text: 'Noted: the staging gateway listens on port 48213.' })
    await harness.send(agent, 'Remember that the staging gateway port is 48213.')
    // nothing flushed it: the batch timer is ten minutes away
    expect(harness.ctx.shadowCapture.health.pending).toBeGreaterThan(0)
    const seen: string[] = []
    model.enqueue(
      { kind: 'tools', text: 'Checking.', calls: [{ name: SEARCH_TOOL, args: { query: 'staging gateway port' } }] },
      (request: ScriptedRequest): ScriptedReply => {
        seen.push(request.lastText())
        return { kind: 'text', text: 'It is 48213.' }
      },
    )
    await harness.send(agent, 'Which port did I give you for the staging gateway?')
    expect(seen[0]).toContain('48213')
    expect(seen[0]).not.toMatch(/no match|nothing/i)
    expect(harness.problems()).toEqual([])
  })
})
