/**
 * bench:capture — what capture costs a turn, and whether it writes exactly one row per message.
 *
 * Two real dsh compositions in one process play the same 200-turn scripted coding session, one
 * with ShadowCapture and one without. Turns alternate between them (and which goes first), so
 * drift, GC and JIT warm-up hit both alike. The scripted model answers instantly, which makes the
 * harness's own work the whole turn: the harshest setting for an overhead ratio.
 */
import { isCapturable, ShadowCapture } from 'dsh-shadow-context'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { median, percentile, printTable, result } from './report.ts'

const TURNS = Number(process.env['BENCH_TURNS'] ?? 200)
const WARMUP = 20

const scenario = codingSession({ turns: TURNS + WARMUP, seed: 5, outputChars: 1_500 })
// Large window: this bench measures capture, not compaction.
// Invariant companions are a test aid that no shipped profile mounts; leave them out, as production does.
const plain = await DshHarness.create({ tools: scenario.tools(), invariants: false, model: new ScriptedModel({ contextWindow: 50_000_000 }) })
const captured = await DshHarness.create({
  tools: scenario.tools(),
  invariants: false,
  model: new ScriptedModel({ contextWindow: 50_000_000 }),
  plugins: home => [{ plugin: ShadowCapture, config: { home, worker: process.env['BENCH_WORKER'] !== '0' } }],
})
const plainAgent = await plain.createAgent({ sessionId: 'bench-plain' })
const capturedAgent = await captured.createAgent({ sessionId: 'bench-captured' })

const times = { plain: [] as number[], captured: [] as number[] }
async function turn(harness: DshHarness, agent: typeof plainAgent, index: number): Promise<number> {
  const step = scenario.turns[index]!
  harness.model.enqueue(...step.steps)
  const started = performance.now()
  await harness.send(agent, step.prompt)
  return performance.now() - started
}

for (let index = 0; index < TURNS + WARMUP; index += 1) {
  const order = index % 2 === 0 ? ['plain', 'captured'] as const : ['captured', 'plain'] as const
  for (const which of order) {
    const elapsed = which === 'plain' ? await turn(plain, plainAgent, index) : await turn(captured, capturedAgent, index)
    if (index >= WARMUP) times[which].push(elapsed)
  }
}

const capture = captured.ctx.shadowCapture
await capture.flush()
const visible = capturedAgent.session.events.filter(isCapturable)
const distinct = new Set(visible.map(event => event.seq)).size
const stats = await capture.store.stats()
const rows = await capture.store.count({ sessionId: 'bench-captured' })

const overhead = median(times.captured) / median(times.plain)
// Paired view: the same turn with and without capture, which cancels turn-to-turn content variance.
const paired = median(times.captured.map((value, index) => value / times.plain[index]!))
printTable('capture overhead (ms per turn, instant scripted model)', ['', 'median', 'p90', 'mean'], [
  ['without capture', median(times.plain), percentile(times.plain, 0.9), times.plain.reduce((a, b) => a + b, 0) / times.plain.length],
  ['with capture', median(times.captured), percentile(times.captured, 0.9), times.captured.reduce((a, b) => a + b, 0) / times.captured.length],
])
console.log(`turns measured: ${TURNS} each (after ${WARMUP} warm-up turns), model-visible messages: ${distinct}, store rows: ${rows} (${stats.messages} in store), store ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB`)
console.log(`median of per-turn ratios (paired): ${paired.toFixed(3)}`)
console.log(`capture health: ${JSON.stringify(capture.health)}`)
await plain.dispose()
await captured.dispose()
result('capture', { overhead: overhead.toFixed(3), paired: paired.toFixed(3), rows_per_message: (rows / distinct).toFixed(3) })
