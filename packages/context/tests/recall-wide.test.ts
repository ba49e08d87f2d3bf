/**
 * Reading a checkpoint that took thousands of messages off the surface (a step of a thousand
 * parallel tool calls): each page costs a few ranged store reads, not one lookup per message
 * (3,001 sequential lookups took half a second a page, the same again for every cursor page).
 */
import type { ShadowStoreApi } from '@dsh-shadow/store'
import { ScriptedModel, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { READ_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-recall-wide-')

const CALLS = 1_000
const TOOLS: ScriptedTool[] = [{ name: 'shell', description: 'Run a shell command.', run: args => `ran ${JSON.stringify(args)}: ${'ok '.repeat(100)}` }]

/** Count the store calls a read makes: every method that reads rows. */
function counted(store: ShadowStoreApi): { calls: Map<string, number> } {
  const calls = new Map<string, number>()
  for (const name of ['read', 'lookupInLineage', 'message', 'messageAt', 'callOf'] as const) {
    const method = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store)
    Object.assign(store, { [name]: (...args: unknown[]) => { calls.set(name, (calls.get(name) ?? 0) + 1); return method(...args) } })
  }
  return { calls }
}

describe('shadow_read of a checkpoint of thousands of messages', () => {
  it('reads its originals with a few ranged reads, the same messages in the same order as before', async () => {
    const model = new ScriptedModel({ contextWindow: 128_000 })
    const harness = await recallHarness({ tools: TOOLS, model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'wide-read' })
    for (let turn = 0; turn < 2; turn += 1) {
      model.enqueue({ kind: 'tools', text: 'Running all.', calls: Array.from({ length: CALLS }, (_, index) => ({ name: 'shell', args: { command: `job ${turn}-${index}` } })) }, { kind: 'text', text: 'All done.' })
      await harness.send(agent, `Run every job of batch ${turn}.`)
    }
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    const store = await capture.opened()
    const checkpoint = (await store.checkpoints('wide-read')).toSorted((a, b) => b.shadowedSeqs.length - a.shadowedSeqs.length)[0]!
    expect(checkpoint.shadowedSeqs.length).toBeGreaterThan(CALLS)
    // what each seq holds, looked up one by one: the reference
    const segments = await store.lineage('wide-read')
    const expected: string[] = []
    for (const seq of checkpoint.shadowedSeqs) {
      const row = await store.lookupInLineage(segments, seq)
      if (row !== undefined) expected.push(row.shadowId)
    }
    const { calls } = counted(store)
    const pages: string[] = []
    let args: Record<string, unknown> = { checkpoint: checkpoint.checkpointId, budget: 8_000 }
    for (let page = 0; page < 3; page += 1) {
      let result = ''
      model.enqueue({ kind: 'tools', calls: [{ name: READ_TOOL, args }] }, request => { result = request.lastText(); return { kind: 'text', text: 'Read.' } })
      await harness.send(agent, 'Read on.')
      pages.push(result)
      const cursor = /More: shadow_read \{"cursor":"([^"]+)"\}/.exec(result)?.[1]
      if (cursor === undefined) break
      args = { cursor }
    }
    expect(pages[0]).toContain(`messages 1–`)
    expect(pages[0]).toContain(` of ${expected.length} (budget 8000 tokens)`)
    // the pages show the checkpoint's messages in order, from the first
    // a message too big for one page goes on in the next ("continued from character …"): counted once
    const shown = pages.flatMap(page => [...page.matchAll(/^── (\S+) ·/gm)].map(match => match[1]!)).filter((id, index, all) => id !== all[index - 1])
    expect(shown.length).toBeGreaterThan(10)
    expect(shown).toEqual(expected.slice(0, shown.length))
    const total = [...calls.values()].reduce((sum, count) => sum + count, 0)
    expect(total, JSON.stringify([...calls])).toBeLessThanOrEqual(pages.length * 12)
  })
})
