/**
 * A store that refuses writes (FULL here) while big tool outputs are captured: what capture keeps
 * for retry is bounded in characters, not only in events. Each batch re-sends what it keeps, so an
 * unbounded retry made every later turn copy all of it to the store again (200 MB of outputs: 2 s
 * a turn and 2.6 GB of memory), and 50 MB outputs would have run the process out of memory.
 */
import type { IngestOp } from '@dsh-shadow/store'
import { ScriptedModel, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { RETRY_CHARS_DEFAULT } from '../src/index.ts'
import { cleanupAfterEach, shadowHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-retry-bound-')

const OUTPUT_CHARS = 6_000_000
let outputs = 0
const TOOLS: ScriptedTool[] = [{ name: 'shell', description: 'Run a shell command.', run: () => `run ${outputs++}: ${'build log line, nothing unusual\n'.repeat(OUTPUT_CHARS / 32)}` }]

/** Characters of event JSON an ingest call carries. */
function eventChars(ops: readonly IngestOp[]): number {
  return ops.reduce((sum, op) => sum + (op.op === 'events' || op.op === 'reconcile' ? op.events.reduce((chars, event) => chars + event.eventJson.length, 0) : 0), 0)
}

describe('capture while the store refuses writes', () => {
  it('keeps at most retryChars of event JSON for retry, so later batches stay small (what it drops is the log\'s to repair)', async () => {
    const harness = await shadowHarness({ tools: TOOLS, model: new ScriptedModel({ contextWindow: 100_000_000 }), capture: { maxBytes: 1_000_000 } })
    harnesses.push(harness)
    const capture = harness.ctx.shadowCapture
    const agent = await harness.createAgent({ sessionId: 'retry-bound' })
    const store = await capture.opened()
    const sent: number[] = []
    const ingest = store.ingest.bind(store)
    store.ingest = async ops => {
      sent.push(eventChars(ops))
      return ingest(ops)
    }
    for (let turn = 0; turn < 5; turn += 1) {
      harness.model.enqueue({ kind: 'tools', text: 'Running the build.', calls: [{ name: 'shell', args: { command: `make ${turn}` } }] }, { kind: 'text', text: 'Built.' })
      await harness.send(agent, `Build step ${turn}, please.`)
      await capture.flush().catch(() => undefined)
    }
    expect(capture.health.lastFailure?.code).toBe('FULL')
    // five 6 MB outputs were captured and refused
    expect(Math.max(...sent)).toBeGreaterThan(OUTPUT_CHARS)
    sent.length = 0
    harness.model.enqueue({ kind: 'text', text: 'Fine.' })
    await harness.send(agent, 'Anything else?')
    await capture.flush().catch(() => undefined)
    // what a small turn sends is what it wrote plus a bounded retry, not every refused output again
    expect(sent.length).toBeGreaterThan(0)
    expect(Math.max(...sent)).toBeLessThanOrEqual(RETRY_CHARS_DEFAULT + 100_000)
    expect(capture.health.pending).toBeLessThan(capture.health.captured)
  })
})

describe('the write-ahead check repairing a missing row', () => {
  it('serializes only the rows it re-sends, not every event of the log (big outputs made it a copy of the whole log)', async () => {
    const harness = await shadowHarness({ tools: TOOLS, model: new ScriptedModel({ contextWindow: 100_000_000 }) })
    harnesses.push(harness)
    const capture = harness.ctx.shadowCapture
    const agent = await harness.createAgent({ sessionId: 'repair-bound' })
    for (let turn = 0; turn < 4; turn += 1) {
      harness.model.enqueue({ kind: 'tools', text: 'Running the build.', calls: [{ name: 'shell', args: { command: `make ${turn}` } }] }, { kind: 'text', text: 'Built.' })
      await harness.send(agent, `Build step ${turn}, please.`)
    }
    await capture.flush()
    const store = await capture.opened()
    const rows = await store.read({ sessionId: 'repair-bound' }, { limit: 1_000 })
    const small = rows.findLast(row => row.role === 'user' && row.text.startsWith('Build step'))!
    // the row goes missing (as a reconcile that did not list it removes it): the next check must repair it
    const kept = rows.filter(row => row.seq !== small.seq).map(row => ({ sessionId: row.sessionId, seq: row.seq, type: row.eventType, time: row.time, turn: row.turn, step: row.step, toolName: row.toolName, eventJson: row.eventJson }))
    await store.ingest([{ op: 'reconcile', sessionId: 'repair-bound', events: kept as never, ownFromSeq: 0 }])
    expect((await store.confirm('repair-bound', [{ seq: small.seq, hash: 'x' }])).missing).toEqual([small.seq])
    let chars = 0
    const stringify = JSON.stringify
    JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
      const out = stringify(...args)
      chars += out?.length ?? 0
      return out
    }) as typeof JSON.stringify
    let result
    try {
      result = await capture.confirm(agent.session, [small.seq])
    } finally {
      JSON.stringify = stringify
    }
    expect(result).toMatchObject({ ok: true, repaired: 1 })
    // four 6 MB outputs are in the log; repairing one small row needs a few kilobytes of JSON
    expect(chars).toBeLessThan(OUTPUT_CHARS)
  })
})
