/**
 * bench:agent — cost × task success. Agent sessions whose later turns need earlier facts, played on
 * real dsh compositions: Shadow Context (capture + engine + recall tools, as shipped) against dsh's
 * compaction-basic, at equal (threshold, retain) budgets and at each engine's defaults, on several
 * seeds. The needs-aware scripted model recovers a missing fact as a diligent model would (recall
 * tools with Shadow Context; re-running the producing tool with basic); every request is priced:
 * input cache miss, input cache hit, output; conversation, recovery and summarizer calls alike.
 * Options: bench/README.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { resolveEngineConfig } from 'dsh-shadow-context'
import { agentSession, parseScenario, serializeScenario, type AgentScenario, type TurnDelegate } from '@dsh-shadow/testing'
import { printTable, result } from './report.ts'
import { addBreakdowns, printBreakdown } from './agent/breakdown.ts'
import { renderPlot, type PlotPanel } from './agent/plot.ts'
import { addBills, costOf, PRICE_SHEETS, type PriceSheet, type TokenBill } from './agent/pricing.ts'
import { runVariant, type EngineName, type RunMetrics, type Variant } from './agent/run.ts'
import { DeepSeekRunError, deepseekDelegate } from './agent/deepseek.ts'
import { metWithinOneCall, printAbsentTable, printCallsTable, printProactiveTable } from './agent/proactive.ts'

const { values: args } = parseArgs({
  options: {
    seeds: { type: 'string' },
    dev: { type: 'boolean', default: false },
    turns: { type: 'string', default: '40' },
    window: { type: 'string', default: '32000' },
    budgets: { type: 'string', default: '0.25/0.05,0.5/0.1,0.8/0.16' },
    scenario: { type: 'string', multiple: true },
    'write-scenarios': { type: 'string' },
    prices: { type: 'string' },
    shadow: { type: 'string' },
    proactive: { type: 'string', default: 'default' },
    'proactive-config': { type: 'string' },
    out: { type: 'string', default: '.artifacts/bench' },
    model: { type: 'string', default: 'scripted' },
  },
})

function fail(message: string): never {
  console.error(`bench:agent: ${message}`)
  process.exit(2)
}

// --model deepseek: DeepSeek answers the turns with needs (a real, billed run; bench/README.md)
let delegate: TurnDelegate | undefined
if (args.model === 'deepseek') {
  try {
    delegate = await deepseekDelegate()
  } catch (error) {
    if (error instanceof DeepSeekRunError) fail(`${error.name} ${error.code}: ${error.message}`)
    throw error
  }
} else if (args.model !== 'scripted') fail(`--model ${args.model}: expected scripted (default) or deepseek`)

// Dev seeds tune the engine; the report seeds are others (a dev/test split).
const DEV_SEEDS = [1, 2, 3]
const REPORT_SEEDS = [11, 12, 13]
const window = Number(args.window)
const turns = Number(args.turns)
if (!Number.isInteger(window) || window < 4_000) fail('--window must be an integer ≥ 4000')
if (!Number.isInteger(turns) || turns < 4) fail('--turns must be an integer ≥ 4')

function loadPrices(): readonly PriceSheet[] {
  if (args.prices === undefined) return PRICE_SHEETS
  const text = args.prices.trim().startsWith('[') ? args.prices : readFileSync(args.prices, 'utf8')
  const parsed = JSON.parse(text) as unknown
  if (!Array.isArray(parsed) || parsed.length === 0) fail('--prices must be a JSON array of {name, hit, output}')
  return parsed.map((sheet: Record<string, unknown>) => {
    if (typeof sheet['name'] !== 'string' || typeof sheet['hit'] !== 'number' || typeof sheet['output'] !== 'number') fail('each price sheet needs name (string), hit and output (numbers, relative to a cache miss)')
    return { name: sheet['name'], hit: sheet['hit'], output: sheet['output'] }
  })
}
const sheets = loadPrices()

let scenarios: AgentScenario[]
if (args.scenario !== undefined && args.scenario.length > 0) {
  scenarios = args.scenario.map(file => {
    try {
      return parseScenario(readFileSync(file, 'utf8'))
    } catch (error) {
      return fail(`${file}: ${error instanceof Error ? error.message : String(error)}`)
    }
  })
} else {
  const seeds = args.seeds !== undefined ? args.seeds.split(',').map(Number) : args.dev ? DEV_SEEDS : REPORT_SEEDS
  if (seeds.some(seed => !Number.isInteger(seed))) fail('--seeds must be integers separated by commas')
  scenarios = seeds.map(seed => agentSession({ seed, turns }))
}
if (args['write-scenarios'] !== undefined) {
  mkdirSync(args['write-scenarios'], { recursive: true })
  for (const scenario of scenarios) writeFileSync(join(args['write-scenarios'], `${scenario.id}.jsonl`), serializeScenario(scenario))
}

const shadowExtra = args.shadow === undefined ? {} : (JSON.parse(args.shadow) as Record<string, unknown>)
const budgets = args.budgets.split(',').map(pair => {
  const [threshold, retain] = pair.split('/').map(Number)
  if (!(threshold! > 0 && threshold! <= 1 && retain! >= 0 && retain! < threshold!)) fail(`bad budget ${pair} (threshold/retain, retain < threshold ≤ 1)`)
  return { label: pair, thresholdRatio: threshold!, retainRatio: retain! }
})
const variants: Variant[] = []
for (const engine of ['shadow', 'basic'] as const) {
  for (const budget of budgets) {
    variants.push({ engine, budget: budget.label, config: { ...(engine === 'shadow' ? shadowExtra : {}), thresholdRatio: budget.thresholdRatio, retainRatio: budget.retainRatio }, isDefault: false })
  }
  variants.push({ engine, budget: 'default', config: engine === 'shadow' ? shadowExtra : {}, isDefault: true })
}
// Proactive recall on, at these budgets ('none' = not measured); compared with proactive off at the same budget.
const proactiveRecall = { proactive: true, ...(args['proactive-config'] === undefined ? {} : (JSON.parse(args['proactive-config']) as Record<string, unknown>)) }
const proactiveBudgets = args.proactive === 'none' ? [] : args.proactive.split(',')
for (const budget of proactiveBudgets) {
  const off = variants.find(variant => variant.engine === 'shadow' && variant.budget === budget)
  if (off === undefined) fail(`--proactive ${budget}: not one of the shadow budgets (${budgets.map(entry => entry.label).join(', ')}, default)`)
  variants.push({ ...off, engine: 'shadow+proactive', recall: proactiveRecall })
}

const runs: RunMetrics[] = []
for (const scenario of scenarios) {
  for (const variant of variants) {
    const started = Date.now()
    const metrics = await runVariant(scenario, variant, window, delegate)
    runs.push(metrics)
    const satisfied = metrics.outcomes.filter(outcome => outcome.satisfied).length
    console.error(`  ${scenario.id} ${variant.engine} ${variant.budget}: ${satisfied}/${metrics.outcomes.length} needs, ${metrics.bill.requests} requests, ${Date.now() - started} ms`)
  }
}

interface Aggregate {
  readonly engine: EngineName
  readonly budget: string
  readonly isDefault: boolean
  readonly bill: TokenBill
  readonly needs: number
  readonly satisfied: number
  readonly surface: number
  readonly extra: number
  readonly compactionCalls: number
  readonly summaryOutput: number
  readonly passes: number
  readonly failedTurns: number
  readonly meanContext: number
  readonly unmatched: number
  readonly distinct: number
}

const EMPTY: TokenBill = { miss: 0, hit: 0, output: 0, requests: 0 }
function aggregate(selected: readonly RunMetrics[]): Aggregate {
  const first = selected[0]!.variant
  const outcomes = selected.flatMap(run => run.outcomes)
  return {
    engine: first.engine,
    budget: first.budget,
    isDefault: first.isDefault,
    bill: selected.reduce((bill, run) => addBills(bill, run.bill), EMPTY),
    needs: outcomes.length,
    satisfied: outcomes.filter(outcome => outcome.satisfied).length,
    surface: outcomes.filter(outcome => outcome.fromSurface).length,
    extra: selected.reduce((sum, run) => sum + run.extraRequests, 0),
    compactionCalls: selected.reduce((sum, run) => sum + run.compactionCalls, 0),
    summaryOutput: selected.reduce((sum, run) => sum + run.compactionBill.output, 0),
    passes: selected.reduce((sum, run) => sum + run.passes, 0),
    failedTurns: selected.reduce((sum, run) => sum + run.failedTurns, 0),
    meanContext: selected.reduce((sum, run) => sum + run.meanContext, 0) / selected.length,
    unmatched: selected.reduce((sum, run) => sum + run.unmatchedToolCalls, 0),
    distinct: selected.reduce((sum, run) => sum + run.distinctTokens, 0),
  }
}
const rows = variants.map(variant => aggregate(runs.filter(run => run.variant === variant)))
const find = (engine: EngineName, budget: string): Aggregate => rows.find(row => row.engine === engine && row.budget === budget)!
const pct = (part: number, whole: number): number => (whole === 0 ? 100 : (100 * part) / whole)
const basicDefault = find('basic', 'default')
const oursDefault = find('shadow', 'default')

const ownDefaults = resolveEngineConfig(shadowExtra)
const shadowDefaults = `${ownDefaults.thresholdRatio}/${ownDefaults.retainRatio}`
console.log(`\nbench:agent — ${scenarios.length} sessions (${scenarios.map(scenario => `${scenario.id}: ${scenario.turns.length} turns, ${scenario.turns.reduce((n, turn) => n + turn.steps.length, 0)} steps, ${scenario.needs.length} needs`).join('; ')}), ${window}-token window`)
console.log('Conditions: real dsh 0.1.0-rc.8 compositions; Shadow Context = capture + engine + recall tools (shadow_search/shadow_read); basic = @deepseek-ai/dsh-compaction-basic rc.8.')
console.log(`Budgets are (thresholdRatio/retainRatio) given to both engines alike; "default" = each engine's own defaults (basic 0.8/0.16; ours ${shadowDefaults}${args.shadow === undefined ? '' : `; extra shadow config ${args.shadow}`}).`)
console.log('Recovery of a need not on the surface: ours — shadow_search with the need\'s description (met in one call when the result itself shows the exact fact), else shadow_read of the top hits off the surface (at the hit\'s passage; a tool result with its call), ≤ 3 calls, success only if the exact fact came back in that need\'s own result (the query\'s echo does not count); basic — re-run the producing tool when the scenario marks it re-runnable, else the need fails. Never-discussed questions: one search, settled when it says the term occurs nowhere.')
console.log('ASSUMPTION (fair to basic): its summarizer is a generous stand-in that keeps, within its output cap, every fact the scenario marks important that the summarized input holds (most recent first), plus sampled lines to ~8% of the input (≤ 2000 tokens). Its output is priced.')
console.log(`Pricing: every accepted request (conversation, recovery, summarizer): input miss ×1, input cache hit (longest common prefix with the previous request, dsh's token estimator) × hit, output × output; sheets: ${sheets.map(sheet => `${sheet.name} hit=${sheet.hit} output=${sheet.output}`).join('; ')}. Costs in thousands of miss-token equivalents, summed over the sessions.`)

printTable('\nper engine and budget (all sessions together)', [
  'engine', 'budget', ...sheets.map(sheet => `cost ${sheet.name.split(' ')[0]}`), ...sheets.map(sheet => `×basic ${sheet.name.split(' ')[0]}`),
  'needs %', 'surface %', 'extra req', 'llm calls', 'summary out', 'passes', 'mean ctx', 'miss k', 'distinct k', 'hit k', 'out k', 'failed turns',
], rows.map(row => {
  const peer = find('basic', row.budget)
  return [
    row.engine, row.budget,
    ...sheets.map(sheet => (costOf(row.bill, sheet) / 1000).toFixed(0)),
    ...sheets.map(sheet => (costOf(row.bill, sheet) / costOf(peer.bill, sheet)).toFixed(3)),
    pct(row.satisfied, row.needs).toFixed(1), pct(row.surface, row.needs).toFixed(1), row.extra, row.compactionCalls, row.summaryOutput, row.passes,
    Math.round(row.meanContext), Math.round(row.bill.miss / 1000), Math.round(row.distinct / 1000), Math.round(row.bill.hit / 1000), Math.round(row.bill.output / 1000), row.failedTurns,
  ]
}))

printTable('\nper session (cost under the middle sheet, needs satisfied)', ['session', ...variants.map(variant => `${variant.engine} ${variant.budget}`)],
  scenarios.map(scenario => [scenario.id, ...variants.map(variant => {
    const run = runs.find(entry => entry.scenario === scenario.id && entry.variant === variant)!
    const sheet = sheets[Math.floor(sheets.length / 2)]!
    return `${(costOf(run.bill, sheet) / 1000).toFixed(0)}k ${pct(run.outcomes.filter(outcome => outcome.satisfied).length, run.outcomes.length).toFixed(0)}%`
  })]))

// How each need kind fared, per engine at its default.
const kinds = [...new Set(runs.flatMap(run => run.outcomes.map(outcome => outcome.need.kind)))]
printTable('\nneeds by kind at each default (satisfied / total, surface)', ['kind', 'shadow default', 'basic default'], kinds.map(kind => [kind, ...(['shadow', 'basic'] as const).map(engine => {
  const outcomes = runs.filter(run => run.variant.engine === engine && run.variant.isDefault).flatMap(run => run.outcomes).filter(outcome => outcome.need.kind === kind)
  const via = new Map<string, number>()
  for (const outcome of outcomes) if (!outcome.fromSurface) via.set(outcome.via, (via.get(outcome.via) ?? 0) + 1)
  return `${outcomes.filter(outcome => outcome.satisfied).length}/${outcomes.length} (${outcomes.filter(outcome => outcome.fromSurface).length} surface${[...via].map(([name, count]) => `, ${count} ${name}`).join('')})`
})]))

console.log('\n"distinct k": tokens of every distinct message, system prompt and schema the requests carried, each counted once: reading each uncached once is (up to partial-prefix hits) a floor for "miss k" no engine goes below.')

if (delegate !== undefined) {
  console.log(`\nREAL MODEL: the turns with needs were answered by DeepSeek (${delegate.model}, dsh's @deepseek-ai/dsh-llm-deepseek rc.8, thinking off, ≤ ${delegate.maxRequests} requests per turn), the rest by the scripted model; a need counts only if its exact fact is in DeepSeek's final answer (the prompt asks it to quote what it relies on). DeepSeek answered ${runs.reduce((sum, run) => sum + run.delegatedRequests, 0)} requests; the costs above are the token estimator's, not DeepSeek's invoice.`)
}
const groups = variants.map(variant => ({ variant, runs: runs.filter(run => run.variant === variant) }))
printCallsTable(groups)
printAbsentTable(groups)
const proactivePairs = groups.filter(group => group.variant.engine === 'shadow+proactive').map(on => ({ on, off: groups.find(group => group.variant.engine === 'shadow' && group.variant.budget === on.variant.budget)! }))
const proactive = proactivePairs.length === 0 ? [] : printProactiveTable(proactivePairs, sheets)
if (proactivePairs.length > 0) console.log(`proactive recall config: ${JSON.stringify(proactiveRecall)}`)
printBreakdown(variants.map(variant => {
  const selected = runs.filter(run => run.variant === variant)
  return { label: `${variant.engine} ${variant.budget}`, breakdown: selected.map(run => run.breakdown).reduce(addBreakdowns), passes: selected.reduce((sum, run) => sum + run.passes, 0) }
}), sheets)
console.log('"new miss": the unit (system prompt, tool schemas, one message) was in no earlier request — reading it once is the floor. "re-miss": it was cached before, but an earlier part of the request changed (a compaction rewrote the surface, or a summarizer request came between). "rewrites": requests that re-missed something. Sources: prompt = system + tool schemas; checkpoint = checkpoints, indexes, basic\'s summaries; recall = recovery calls and their results; tool = other tool outputs; talk = prompts, assistant text and calls.')

const unmatched = rows.reduce((sum, row) => sum + row.unmatched, 0)
if (unmatched > 0) console.log(`\nWARNING: ${unmatched} tool calls found no recorded output (scenario/model mismatch)`)

const panels: PlotPanel[] = sheets.map(sheet => ({
  title: sheet.name,
  series: (['shadow', 'basic'] as const).map(engine => ({
    name: engine === 'shadow' ? 'shadow context' : 'compaction-basic',
    color: engine === 'shadow' ? [31, 119, 180] as const : [230, 120, 20] as const,
    points: rows.filter(row => row.engine === engine).map(row => ({
      label: row.budget === 'default' ? 'default' : row.budget.split('/')[0]!,
      cost: costOf(row.bill, sheet) / costOf(basicDefault.bill, sheet),
      success: pct(row.satisfied, row.needs),
      isDefault: row.isDefault,
    })),
  })),
}))
const outDir = resolve(args.out)
mkdirSync(outDir, { recursive: true })
const pngPath = join(outDir, 'agent.png')
writeFileSync(pngPath, renderPlot(panels, `needs satisfied vs cost, ${scenarios.length} sessions, ${window} window`))
console.log(`\nplot: ${pngPath}`)

const worst = (ours: Aggregate, basic: Aggregate): number => Math.max(...sheets.map(sheet => costOf(ours.bill, sheet) / costOf(basic.bill, sheet)))
const budgetRatios = budgets.map(budget => worst(find('shadow', budget.label), find('basic', budget.label)))
const gaps = budgets.map(budget => pct(find('shadow', budget.label).satisfied, find('shadow', budget.label).needs) - pct(find('basic', budget.label).satisfied, find('basic', budget.label).needs))
result('agent', {
  success: pct(oursDefault.satisfied, oursDefault.needs).toFixed(1),
  basic_success: pct(basicDefault.satisfied, basicDefault.needs).toFixed(1),
  cost_ratio: worst(oursDefault, basicDefault).toFixed(3),
  equal_budget_cost_ratio_max: Math.max(...budgetRatios).toFixed(3),
  equal_budget_success_gap_min: Math.min(...gaps).toFixed(1),
  met_within_one_call: metWithinOneCall(groups.find(group => group.variant.engine === 'shadow' && group.variant.isDefault)!.runs).toFixed(1),
  basic_met_within_one_call: metWithinOneCall(groups.find(group => group.variant.engine === 'basic' && group.variant.isDefault)!.runs).toFixed(1),
  ...(proactive.length === 0 ? {} : {
    proactive_precision: proactive[0]!.precision.toFixed(1),
    proactive_never_said_fp: `${proactive[0]!.falsePositives}/${proactive[0]!.questions}`,
    proactive_cost_per_need_ratio: proactive[0]!.costPerNeedRatio.toFixed(3),
  }),
})
