/** One engine at one budget on one scenario: a real dsh composition, played and priced. */
import { ShadowCapture, ShadowCompactionEngine, ShadowRecall, type ShadowEngineConfig } from 'dsh-shadow-context'
import { DshHarness, NeedsModel, playScenario, ScenarioToolbox, type AbsentOutcome, type AgentScenario, type DshHarnessOptions, type NeedOutcome, type ProactiveFiring, type Recovery, type TurnDelegate } from '@dsh-shadow/testing'
import { breakdownOf, type Breakdown } from './breakdown.ts'
import { billOf, distinctTokens, priceInputs, type TokenBill } from './pricing.ts'

/** `shadow+proactive`: Shadow Context with the recall plugin's proactive recall on. */
export type EngineName = 'shadow' | 'shadow+proactive' | 'basic'

export interface Variant {
  readonly engine: EngineName
  /** Label of the budget ('0.25/0.05', or 'default'). */
  readonly budget: string
  /** The engine's own config (thresholdRatio, retainRatio, …); {} = its defaults. */
  readonly config: Record<string, unknown>
  readonly isDefault: boolean
  /** ShadowRecall config (the proactive variants); {} = as shipped. */
  readonly recall?: Record<string, unknown>
}

export interface RunMetrics {
  readonly variant: Variant
  readonly scenario: string
  readonly outcomes: readonly NeedOutcome[]
  /** All requests: conversation, recovery, summarizer. */
  readonly bill: TokenBill
  /** The summarizer's share of the bill. */
  readonly compactionBill: TokenBill
  readonly extraRequests: number
  readonly compactionCalls: number
  readonly passes: number
  readonly failedTurns: number
  readonly meanContext: number
  readonly unmatchedToolCalls: number
  /** Distinct tokens the requests carried, each once (a floor for misses). */
  readonly distinctTokens: number
  readonly absentOutcomes: readonly AbsentOutcome[]
  readonly proactiveFirings: readonly ProactiveFiring[]
  /** Requests a real model (`--model deepseek`) answered. */
  readonly delegatedRequests: number
  /** Where the tokens came from (bench/agent/breakdown.ts). */
  readonly breakdown: Breakdown
}

function composition(variant: Variant): Pick<DshHarnessOptions, 'plugins' | 'compaction'> & { recovery: Recovery } {
  if (variant.engine === 'basic') return { compaction: { basic: variant.config }, recovery: 'rerun' }
  return {
    // Shadow Context as shipped: capture, the engine, and the recall tools.
    plugins: home => [{ plugin: ShadowCapture, config: { home } }, { plugin: ShadowRecall, config: variant.recall ?? {} }],
    compaction: { plugin: ShadowCompactionEngine, config: variant.config as ShadowEngineConfig },
    recovery: 'recall',
  }
}

export async function runVariant(scenario: AgentScenario, variant: Variant, window: number, delegate?: TurnDelegate): Promise<RunMetrics> {
  const toolbox = new ScenarioToolbox(scenario)
  const { recovery, ...compose } = composition(variant)
  const capTokens = typeof variant.config['maxTokens'] === 'number' ? variant.config['maxTokens'] : undefined
  const model = new NeedsModel({ scenario, toolbox, recovery, contextWindow: window, ...(capTokens === undefined ? {} : { summaryCapTokens: capTokens }), ...(delegate === undefined ? {} : { delegate }) })
  const harness = await DshHarness.create({ invariants: false, tools: toolbox.tools(), model, ...compose })
  try {
    const agent = await harness.createAgent({ sessionId: `agent-${variant.engine}-${scenario.id}` })
    const { failedTurns } = await playScenario(harness, agent, model)
    const priced = priceInputs(harness, model.requests)
    const conversation = priced.filter(entry => entry.request.purpose === 'conversation')
    const compaction = priced.filter(entry => entry.request.purpose === 'compaction')
    return {
      variant,
      scenario: scenario.id,
      outcomes: model.outcomes,
      bill: billOf(priced, model.outputTokens),
      compactionBill: billOf(compaction, model.outputTokens),
      extraRequests: conversation.filter(entry => model.recoveryRequests.has(entry.request.index)).length,
      compactionCalls: compaction.length,
      passes: agent.session.events.filter(event => event.type === 'compaction/summary').length,
      failedTurns,
      meanContext: conversation.reduce((sum, entry) => sum + entry.total, 0) / Math.max(1, conversation.length),
      unmatchedToolCalls: toolbox.unmatched.length,
      distinctTokens: distinctTokens(harness, model.requests),
      absentOutcomes: model.absentOutcomes,
      proactiveFirings: model.proactiveFirings,
      delegatedRequests: model.delegatedRequests.size,
      breakdown: breakdownOf(harness, model.requests, model.outputTokens, model.recoveryRequests),
    }
  } finally {
    await harness.dispose()
  }
}
