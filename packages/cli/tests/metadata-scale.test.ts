/**
 * The CLI over a checkpoint of 20k messages: `read <checkpoint>` printed each original after a
 * lookup that re-read the checkpoint (its whole seq list) per message, quadratic in its size
 * (40k messages: 30 s; 20k: ~7 s).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShadowStore, type ShadowMessageInput } from '@dsh-shadow/store'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/main.ts'

const ROWS = 20_000
const BASE = Date.UTC(2026, 0, 1)
const dirs: string[] = []
afterAll(() => { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }) })

function row(seq: number): ShadowMessageInput {
  const text = `original ${seq} of the long session`
  return { sessionId: 'long', seq, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: BASE + seq * 1000, eventJson: JSON.stringify({ type: 'user/message', seq, text }), text, tokens: 8 }
}

describe('read of a checkpoint of 20k messages', () => {
  it('prints every original in order, without a lookup of the checkpoint per message', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-cli-scale-'))
    dirs.push(home)
    const path = join(home, 'shadow.db')
    const store = await ShadowStore.open(path)
    for (let start = 0; start < ROWS; start += 2_000) await store.append(Array.from({ length: 2_000 }, (_, index) => row(start + index)))
    const seqs = Array.from({ length: ROWS }, (_, seq) => seq)
    const checkpointId = `${(await store.session('long'))!.tag}.c1`
    await store.markElided('long', seqs, checkpointId)
    await store.recordCheckpoint({ checkpointId, sessionId: 'long', engine: 'test', status: 'committed', shadowedSeqs: seqs, createdAt: BASE, replaceSeq: ROWS })
    await store.close()
    const out: string[] = []
    const start = performance.now()
    const code = await runCli(['--home', home, '--store', path, '--json', 'read', checkpointId], { stdout: text => void out.push(text), stderr: () => undefined, stderrIsTTY: false })
    // a generous guard: ~7 s before, ~0.3 s after
    expect((performance.now() - start) / 1000).toBeLessThan(3)
    expect(code).toBe(0)
    const printed = JSON.parse(out.join('')) as Array<{ seq: number; text: string; elidedBy: string | null }>
    expect(printed.map(entry => entry.seq)).toEqual(seqs)
    expect(printed.every(entry => entry.elidedBy === checkpointId && entry.text === `original ${entry.seq} of the long session`)).toBe(true)
  }, 120_000)
})
