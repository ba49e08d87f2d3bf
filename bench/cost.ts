/**
 * bench:cost — cumulative input cost of one 300-turn scripted coding session under DeepSeek's
 * cache pricing, Shadow Context's engine against dsh's real `compaction-basic`, same 32k window,
 * measured in one run.
 *
 * Pricing model: a request's cached part is its longest common prefix with the previous accepted
 * request (unit by unit: system prompt, tool schemas, then each message; the first differing unit
 * contributes its common character prefix); cached tokens cost 0.1 of a miss. Token counts come
 * from dsh's own estimator (`ctx.tokenMeter.estimateMessage`, ceil(chars/4) for system and tools).
 * Every request the provider accepted counts, including compaction-basic's summarizer calls;
 * requests the provider refused (context window exceeded) cost nothing and cache nothing.
 */
import { isCapturable, ShadowCapture, ShadowCompactionEngine, type ShadowEngineConfig } from 'dsh-shadow-context'
import { codingSession, DshHarness, ScriptedModel, type ScriptedRequest } from '@dsh-shadow/testing'
import type { Message } from '@deepseek-ai/dsh-llm'
import ToolResultPruner from '@deepseek-ai/dsh-compaction-tool-result-pruner'
import { printTable, result } from './report.ts'

const WINDOW = Number(process.env['BENCH_WINDOW'] ?? 32_000)
const TURNS = Number(process.env['BENCH_TURNS'] ?? 300)
const CACHE_PRICE = 0.1

const scenario = codingSession({ turns: TURNS, seed: 21, outputChars: 1_400 })

interface Unit { readonly key: string; readonly tokens: number }

interface RunResult {
  readonly name: string
  readonly cost: number
  readonly missTokens: number
  readonly cachedTokens: number
  readonly requests: number
  readonly compactionCalls: number
  readonly passes: number
  readonly failedTurns: number
  readonly meanContext: number
  readonly rowsPerMessage?: number
}

function units(harness: DshHarness, request: ScriptedRequest): Unit[] {
  const out: Unit[] = []
  const { system, tools, messages } = request.options
  if (system !== undefined) out.push({ key: `system:${system}`, tokens: Math.ceil(system.length / 4) })
  if (tools !== undefined && tools.length > 0) {
    const json = JSON.stringify(tools)
    out.push({ key: `tools:${json}`, tokens: Math.ceil(json.length / 4) })
  }
  for (const message of messages as Message[]) {
    out.push({ key: JSON.stringify({ role: message.role, content: message.content }), tokens: harness.ctx.tokenMeter.estimateMessage(message) })
  }
  return out
}

function commonChars(a: string, b: string): number {
  const limit = Math.min(a.length, b.length)
  let index = 0
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index += 1
  return index
}

function price(harness: DshHarness, requests: readonly ScriptedRequest[]): { cost: number; miss: number; cached: number; count: number; meanContext: number } {
  let previous: Unit[] = []
  let cost = 0
  let miss = 0
  let cached = 0
  let count = 0
  let contextSum = 0
  for (const request of requests) {
    if (request.rejected) continue
    const current = units(harness, request)
    const total = current.reduce((sum, unit) => sum + unit.tokens, 0)
    let hit = 0
    for (let index = 0; index < current.length; index += 1) {
      const unit = current[index]!
      const before = previous[index]
      if (before === undefined) break
      if (before.key === unit.key) {
        hit += unit.tokens
        continue
      }
      hit += Math.min(unit.tokens, Math.floor(commonChars(before.key, unit.key) / 4))
      break
    }
    cost += total - hit + CACHE_PRICE * hit
    miss += total - hit
    cached += hit
    count += 1
    if (request.purpose === 'conversation') contextSum += total
    previous = current
  }
  const conversation = requests.filter(request => !request.rejected && request.purpose === 'conversation').length
  return { cost, miss, cached, count, meanContext: contextSum / Math.max(1, conversation) }
}

async function run(name: string, compose: (home: string) => Parameters<typeof DshHarness.create>[0]): Promise<RunResult & { harness: DshHarness }> {
  const model = new ScriptedModel({ contextWindow: WINDOW })
  const harness = await DshHarness.create({ invariants: false, tools: scenario.tools(), model, ...compose('') })
  const agent = await harness.createAgent({ sessionId: `cost-${name}` })
  let failedTurns = 0
  await harness.play(agent, scenario.turns, (_index, end) => {
    if (end.data.reason.kind !== 'completed') failedTurns += 1
  })
  const priced = price(harness, model.requests)
  const events = agent.session.events
  const passes = events.filter(event => event.type === 'compaction/summary').length
  let rowsPerMessage: number | undefined
  const capture = harness.ctx.get('shadowCapture') as ShadowCapture | undefined
  if (capture !== undefined) {
    await capture.flush()
    const distinct = new Set(events.filter(isCapturable).map(event => event.seq)).size
    rowsPerMessage = (await capture.store.count({ sessionId: agent.session.id })) / distinct
  }
  return {
    name,
    harness,
    cost: priced.cost,
    missTokens: priced.miss,
    cachedTokens: priced.cached,
    requests: priced.count,
    compactionCalls: model.requests.filter(request => request.purpose === 'compaction').length,
    passes,
    failedTurns,
    meanContext: priced.meanContext,
    ...(rowsPerMessage === undefined ? {} : { rowsPerMessage }),
  }
}

const shadow = (config: ShadowEngineConfig) => (): Parameters<typeof DshHarness.create>[0] => ({
  plugins: home => [{ plugin: ShadowCapture, config: { home } }],
  compaction: { plugin: ShadowCompactionEngine, config },
})

const variants: Array<[string, () => Parameters<typeof DshHarness.create>[0]]> = [
  ['compaction-basic', () => ({ compaction: { basic: {} } })],
  ['shadow-context', shadow({})],
  // dsh-base ships basic with the tool-result pruner (thresholdChars 8192, head 4096, tail 1024)
  ['basic + pruner (as shipped)', () => ({ plugins: [{ plugin: ToolResultPruner, config: { thresholdChars: 8192, headChars: 4096, tailChars: 1024 } }], compaction: { basic: {} } })],
  // the upstream note's mutable state checkpoint, measured, not the default
  ['shadow + state checkpoint', shadow({ stateCheckpoint: true })],
]
if (process.env['BENCH_EXTRA'] !== undefined) {
  for (const extra of process.env['BENCH_EXTRA'].split(';')) {
    const [label, json] = extra.split('=')
    variants.push([label!, shadow(JSON.parse(json!) as ShadowEngineConfig)])
  }
}

const results: RunResult[] = []
for (const [name, compose] of variants) {
  const outcome = await run(name, compose)
  results.push(outcome)
  await outcome.harness.dispose()
}
const basic = results[0]!
const ours = results[1]!
printTable(`input cost of a ${TURNS}-turn session, ${WINDOW}-token window (token units; cache hit = ${CACHE_PRICE}× a miss)`,
  ['engine', 'cost', 'missed', 'cached', 'requests', 'mean ctx', 'passes', 'llm calls', 'failed turns', 'rows/msg'],
  results.map(entry => [entry.name, Math.round(entry.cost), Math.round(entry.missTokens), Math.round(entry.cachedTokens), entry.requests, Math.round(entry.meanContext), entry.passes, entry.compactionCalls, entry.failedTurns, entry.rowsPerMessage === undefined ? '-' : entry.rowsPerMessage.toFixed(3)]))
result('cost', {
  ratio: (ours.cost / basic.cost).toFixed(3),
  llm_calls: `${ours.compactionCalls}/${basic.compactionCalls}`,
  rows_per_message: (ours.rowsPerMessage ?? Number.NaN).toFixed(3),
})
