/**
 * Issue 12, break 10: checkpoint marks belong to the session that compacted. A fork that elides
 * rows it inherited from its parent must not mark the parent's rows (the parent would report its
 * own live rows as "in checkpoint <fork>.cN" and then fail to read that id), and a parent's
 * checkpoint made after the fork is not part of the fork's history.
 */
import { SessionId } from '@deepseek-ai/dsh-session'
import { sessionTag } from '@dsh-shadow/store'
import { codingSession, ScriptedModel, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { RecallResolver } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-fork-marks-')

const TOOLS: ScriptedTool[] = ['shell', 'read_file', 'write_file'].map(name => ({
  name,
  description: `${name} in the workspace`,
  run: args => Array.from({ length: 24 }, (_, line) => `${name} ${JSON.stringify(args)} line ${line}: fine`).join('\n'),
}))

describe('checkpoint marks of forks', () => {
  it('a fork\'s checkpoint never marks its parent\'s rows, and a parent\'s post-fork checkpoint is not the fork\'s', async () => {
    const harness = await recallHarness({ tools: TOOLS, model: new ScriptedModel({ contextWindow: 12_000 }) })
    harnesses.push(harness)
    const scenario = codingSession({ turns: 30, seed: 17, plantFacts: false })
    const parent = await harness.createAgent({ sessionId: 'fm-parent' })
    await harness.play(parent, scenario.turns.slice(0, 10))
    const seed = parent.session.events.slice()
    const forkSeq = seed.length
    const live = new Set(parent.session.surface.nodes)
    const handle = await harness.ctx.agents.create({
      sessionId: SessionId('fm-fork'),
      seed,
      meta: { cwd: harness.home, parentSession: parent.session.id, seedLength: forkSeq },
      agentOptions: { provider: harness.route.provider, model: harness.route.model },
    })
    const fork = handle.agent
    // both go on, and both compact the tail they share
    await harness.play(fork, scenario.turns.slice(10, 30))
    await harness.play(parent, scenario.turns.slice(10, 30))
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    const store = capture.store
    const forkTag = sessionTag('fm-fork')
    const parentTag = sessionTag('fm-parent')

    // the rows both sessions inherited live at the fork point, and which checkpoint elided them in each
    const firstCover = (events: readonly (typeof seed)[number][], tag: string): Map<number, string> => {
      const cover = new Map<number, string>()
      for (const event of events) {
        if (event.type !== 'compaction/summary' || !event.data.compactionId.startsWith(`${tag}.`)) continue
        for (const seq of event.data.shadowedSeqs) if (seq < forkSeq && live.has(seq) && !cover.has(seq)) cover.set(seq, event.data.compactionId)
      }
      return cover
    }
    const byFork = firstCover(fork.session.events, forkTag)
    const byParent = firstCover(parent.session.events, parentTag)
    expect(byFork.size).toBeGreaterThan(0)
    expect(byParent.size).toBeGreaterThan(0)

    // 1. the parent's rows carry no mark of the fork, whatever the fork did
    const parentRows = await store.read({ sessionId: 'fm-parent' }, { limit: 100_000 })
    expect(parentRows.filter(row => row.elidedBy?.startsWith(`${forkTag}.`))).toEqual([])
    for (const row of parentRows) if (byFork.has(row.seq)) expect(row.elidedBy, `parent view of seq ${row.seq}`).toBe(byParent.get(row.seq) ?? null)

    // 2. the fork sees those inherited rows in its own checkpoints, never in the parent's post-fork ones
    const forkRows = await store.read({ sessionId: 'fm-fork' }, { toSeq: forkSeq - 1, limit: 100_000 })
    for (const row of forkRows) {
      if (!live.has(row.seq)) continue
      expect(row.elidedBy, `fork view of seq ${row.seq}`).toBe(byFork.get(row.seq) ?? null)
    }

    // 3. through the recall tools: each reads its own checkpoint, not the other's post-fork one
    const forkCheckpoint = [...new Set(byFork.values())][0]!
    const parentCheckpoint = [...new Set(byParent.values())][0]!
    const asParent = new RecallResolver(store, { sessionId: 'fm-parent' })
    const asFork = new RecallResolver(store, { sessionId: 'fm-fork' })
    await expect(asParent.read({ checkpoint: forkCheckpoint })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(asFork.read({ checkpoint: parentCheckpoint })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    const read = await asFork.read({ checkpoint: forkCheckpoint, budget: 8_000 })
    expect(read.checkpointIds).toEqual([forkCheckpoint])
    // a search within the fork's checkpoint finds the rows it inherited as well as its own
    const inCheckpoint = await store.count({ sessionId: 'fm-fork' }, { elidedBy: forkCheckpoint })
    expect(inCheckpoint).toBe((await store.checkpoint(forkCheckpoint))!.shadowedSeqs.length)
    // the parent never hears of the fork's checkpoint from its own reads
    const parentRead = await asParent.read({ from_seq: 0, to_seq: forkSeq - 1, budget: 8_000 })
    expect(parentRead.checkpointIds.filter(id => id.startsWith(`${forkTag}.`))).toEqual([])
    await handle.dispose()
  })
})
