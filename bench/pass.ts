/**
 * bench:pass — does one compaction pass cost the same at 1k, 10k and 100k messages?
 *
 * One real dsh composition per size plays one scripted agentic session (steps of 8 parallel tool
 * calls, short outputs) through Shadow Context's engine until the log holds that many
 * model-visible messages. Every pressure pass is timed inside the engine (`compactIfNeeded`,
 * which includes the write-ahead confirm against the store); the figure per size is the median of
 * the last quarter of its passes (the log at its longest). dsh's per-request flush (the checkpoint
 * policy) is on, as in shipped compositions; invariant companions are off, as in production. Flat means: the pass depends on the
 * region it replaces and the surface, not on how long the session has been running.
 */
import { isCapturable, ShadowCompactionEngine, ShadowCapture } from 'dsh-shadow-context'
import { agenticTools, agenticTurns, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { median, percentile, printTable, result } from './report.ts'

const SIZES = (process.env['BENCH_SIZES'] ?? '1000,10000,100000').split(',').map(Number)
const CALLS = Number(process.env['BENCH_CALLS'] ?? 12)
const WINDOW = 32_000

interface SizeResult {
  readonly messages: number
  readonly events: number
  readonly steps: number
  readonly passes: number
  readonly lateMs: number[]
  readonly confirmMs: number[]
  readonly visitedPerPass: number
  readonly stepMs: number
}

async function run(messages: number): Promise<SizeResult> {
  const model = new ScriptedModel({ contextWindow: WINDOW })
  const harness = await DshHarness.create({
    model,
    tools: agenticTools(11, 160),
    invariants: false,
    checkpointPolicy: process.env['BENCH_FLUSH'] !== '0',
    plugins: home => [{ plugin: ShadowCapture, config: { home } }],
    compaction: { plugin: ShadowCompactionEngine, config: {} },
  })
  const engine = harness.ctx.compaction as ShadowCompactionEngine
  const agent = await harness.createAgent({ sessionId: `bench-pass-${messages}` })
  const timings: Array<{ atEvents: number; ms: number; visited: number; confirmMs: number }> = []
  // the write-ahead confirm's share of a pass (flush of pending rows + the store's check)
  const capture = harness.ctx.shadowCapture
  const confirm = capture.confirm.bind(capture)
  let confirmMs = 0
  capture.confirm = async (...args) => {
    const started = performance.now()
    try {
      return await confirm(...args)
    } finally {
      confirmMs += performance.now() - started
    }
  }
  const original = engine.compactIfNeeded.bind(engine)
  engine.compactIfNeeded = async (...args) => {
    const visited = engine.work.visited
    confirmMs = 0
    const started = performance.now()
    const outcome = await original(...args)
    if (outcome !== null) timings.push({ atEvents: agent.session.seq, ms: performance.now() - started, visited: engine.work.visited - visited, confirmMs })
    return outcome
  }
  // one message per call plus the assistant message: CALLS + 1 per step
  const steps = Math.ceil(messages / (CALLS + 1))
  const turnCount = Math.ceil(steps / 500)
  const turns = agenticTurns({ turns: turnCount, steps: Math.ceil(steps / turnCount), calls: [CALLS, CALLS], reasoningChars: 60, seed: 5 })
  const started = performance.now()
  for (const turn of turns) {
    model.enqueue(...turn.steps)
    const end = await harness.send(agent, turn.prompt)
    if (end.data.reason.kind !== 'completed') throw new Error(`turn ended ${end.data.reason.kind}`)
  }
  const elapsed = performance.now() - started
  const total = agent.session.seq
  // the last quarter of the passes: the log at its longest for this size
  const late = timings.slice(Math.floor(timings.length * 0.75))
  const visible = agent.session.events.filter(isCapturable).length
  await harness.dispose()
  return {
    messages: visible,
    events: total,
    steps: turns.reduce((sum, turn) => sum + turn.steps.length, 0),
    passes: timings.length,
    lateMs: late.map(timing => timing.ms),
    confirmMs: late.map(timing => timing.confirmMs),
    visitedPerPass: median(late.map(timing => timing.visited)),
    stepMs: elapsed / turns.reduce((sum, turn) => sum + turn.steps.length, 0),
  }
}

const results: SizeResult[] = []
for (const size of SIZES) results.push(await run(size))
printTable(`compaction pass cost by session length (window ${WINDOW}, ${CALLS} parallel calls per step, engine defaults, store in a worker)`, ['messages', 'log events', 'steps', 'passes', 'late passes', 'median ms/pass', 'p90 ms/pass', 'median ms confirm', 'events visited/pass', 'ms/step'], results.map(entry => [
  entry.messages, entry.events, entry.steps, entry.passes, entry.lateMs.length, median(entry.lateMs), percentile(entry.lateMs, 0.9), median(entry.confirmMs), entry.visitedPerPass, entry.stepMs,
]))
const first = results[0]!
const last = results.at(-1)!
result('pass', {
  ...Object.fromEntries(results.map(entry => [`ms_${entry.messages >= 1000 ? `${Math.round(entry.messages / 1000)}k` : entry.messages}`, median(entry.lateMs).toFixed(2)])),
  growth: (median(last.lateMs) / median(first.lateMs)).toFixed(2),
  visited_growth: (last.visitedPerPass / Math.max(1, first.visitedPerPass)).toFixed(2),
  step_growth: (last.stepMs / first.stepMs).toFixed(2),
})
