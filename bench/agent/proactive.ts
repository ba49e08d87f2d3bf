/**
 * bench:agent's recall-efficiency report (issue 11 §7–§8): how many tool calls each satisfied need
 * took (0 = from the surface, 1 = the search result itself showed the exact fact, 2–3 = reads), the
 * never-discussed questions, and proactive recall measured against the same runs with it off.
 */
import type { NeedOutcome } from '@dsh-shadow/testing'
import { printTable } from '../report.ts'
import { addBills, costOf, type PriceSheet, type TokenBill } from './pricing.ts'
import type { RunMetrics, Variant } from './run.ts'

export interface VariantRuns {
  readonly variant: Variant
  readonly runs: readonly RunMetrics[]
}

const pct = (part: number, whole: number): string => (whole === 0 ? '–' : ((100 * part) / whole).toFixed(1))
const label = (variant: Variant): string => `${variant.engine} ${variant.budget}`

/** Satisfied needs by the tool calls they took; index 0 = the surface (a proactive message included). */
export function callsHistogram(outcomes: readonly NeedOutcome[]): { byCalls: number[]; failed: number } {
  const byCalls = [0, 0, 0, 0]
  let failed = 0
  for (const outcome of outcomes) {
    if (!outcome.satisfied) failed += 1
    else byCalls[Math.min(3, outcome.calls)]! += 1
  }
  return { byCalls, failed }
}

/** Share of needs met with at most one recovery call (%), for the RESULT line. */
export function metWithinOneCall(runs: readonly RunMetrics[]): number {
  const outcomes = runs.flatMap(run => run.outcomes)
  const { byCalls } = callsHistogram(outcomes)
  return outcomes.length === 0 ? 100 : (100 * (byCalls[0]! + byCalls[1]!)) / outcomes.length
}

export function printCallsTable(groups: readonly VariantRuns[]): void {
  printTable('\nneeds met in one call (share of all needs: met from the surface = 0 calls, met with exactly 1, 2, 3 recovery calls; basic\'s recovery is one re-run)', [
    'engine budget', 'needs', '0 calls %', '1 call %', '2 calls %', '3 calls %', '≤1 call %', 'failed %', 'via search', 'via read', 'via rerun', 'via proactive',
  ], groups.map(({ variant, runs }) => {
    const outcomes = runs.flatMap(run => run.outcomes)
    const { byCalls, failed } = callsHistogram(outcomes)
    const via = (name: NeedOutcome['via']): number => outcomes.filter(outcome => outcome.satisfied && outcome.via === name).length
    return [label(variant), outcomes.length, ...byCalls.map(count => pct(count, outcomes.length)), pct(byCalls[0]! + byCalls[1]!, outcomes.length), pct(failed, outcomes.length), via('search'), via('read'), via('rerun'), via('proactive')]
  }))
}

export function printAbsentTable(groups: readonly VariantRuns[]): void {
  const rows = groups.filter(({ runs }) => runs.some(run => run.absentOutcomes.length > 0))
  if (rows.length === 0) return
  printTable('\nnever-discussed questions (the right answer is "not found"): explicit = the search said outright that the term occurs nowhere, so one call settles it', [
    'engine budget', 'questions', 'explicit in 1 call', 'calls spent', 'proactive fired before it', 'contradicted (label wrong)',
  ], rows.map(({ variant, runs }) => {
    const outcomes = runs.flatMap(run => run.absentOutcomes)
    return [
      label(variant), outcomes.length, `${outcomes.filter(outcome => outcome.explicit && outcome.calls === 1).length}/${outcomes.length}`,
      outcomes.reduce((sum, outcome) => sum + outcome.calls, 0), `${outcomes.filter(outcome => outcome.proactive).length}/${outcomes.length}`, outcomes.filter(outcome => outcome.contradicted).length,
    ]
  }))
}

export interface ProactiveSummary {
  /** Share of proactive messages holding a need's exact fact of their turn (%; NaN when none fired). */
  readonly precision: number
  readonly fired: number
  /** Never-discussed questions a proactive message came before, and how many questions there were. */
  readonly falsePositives: number
  readonly questions: number
  /** Cost per satisfied need with proactive on / off, worst sheet (the highest ratio). */
  readonly costPerNeedRatio: number
}

const EMPTY: TokenBill = { miss: 0, hit: 0, output: 0, requests: 0 }
const billOf = (runs: readonly RunMetrics[]): TokenBill => runs.reduce((bill, run) => addBills(bill, run.bill), EMPTY)
const satisfiedOf = (runs: readonly RunMetrics[]): number => runs.reduce((sum, run) => sum + run.outcomes.filter(outcome => outcome.satisfied).length, 0)

/**
 * Each proactive variant against Shadow Context with proactive off at the same budget, same sessions:
 * precision, never-discussed false positives, tokens the messages added, cost per satisfied need.
 * The bar for keeping it on (issue 11 §7): precision ≥ 80%, ≤ 1 of 8 false positives, cheaper per need.
 */
export function printProactiveTable(pairs: ReadonlyArray<{ on: VariantRuns; off: VariantRuns }>, sheets: readonly PriceSheet[]): ProactiveSummary[] {
  const summaries: ProactiveSummary[] = []
  printTable('\nproactive recall vs off at the same budget (precision = share of its messages holding the exact fact a need of that turn needs; useful = needs met only by it)', [
    'budget', 'fired', 'before need turns', 'precision %', 'useful', 'never-said FP', 'tokens added k', 'needs % off→on',
    ...sheets.map(sheet => `cost/need ${sheet.name.split(' ')[0]} off→on`), 'passes off→on',
  ], pairs.map(({ on, off }) => {
    const firings = on.runs.flatMap(run => run.proactiveFirings)
    const held = firings.filter(firing => firing.heldFact).length
    const needTurns = new Set(on.runs.flatMap(run => run.outcomes.map(outcome => `${run.scenario}:${outcome.need.turn}`)))
    const beforeNeeds = on.runs.reduce((sum, run) => sum + run.proactiveFirings.filter(firing => needTurns.has(`${run.scenario}:${firing.turn}`)).length, 0)
    const absent = on.runs.flatMap(run => run.absentOutcomes)
    const falsePositives = absent.filter(outcome => outcome.proactive).length
    const onBill = billOf(on.runs)
    const offBill = billOf(off.runs)
    const onSatisfied = satisfiedOf(on.runs)
    const offSatisfied = satisfiedOf(off.runs)
    const perNeed = (bill: TokenBill, satisfied: number, sheet: PriceSheet): number => costOf(bill, sheet) / Math.max(1, satisfied)
    const ratios = sheets.map(sheet => perNeed(onBill, onSatisfied, sheet) / perNeed(offBill, offSatisfied, sheet))
    summaries.push({ precision: firings.length === 0 ? Number.NaN : (100 * held) / firings.length, fired: firings.length, falsePositives, questions: absent.length, costPerNeedRatio: Math.max(...ratios) })
    const needs = (runs: readonly RunMetrics[]): string => pct(satisfiedOf(runs), runs.reduce((sum, run) => sum + run.outcomes.length, 0))
    const passes = (runs: readonly RunMetrics[]): number => runs.reduce((sum, run) => sum + run.passes, 0)
    return [
      on.variant.budget, firings.length, beforeNeeds, pct(held, firings.length), on.runs.reduce((sum, run) => sum + run.outcomes.filter(outcome => outcome.via === 'proactive').length, 0),
      `${falsePositives}/${absent.length}`, (firings.reduce((sum, firing) => sum + firing.tokens, 0) / 1000).toFixed(1), `${needs(off.runs)}→${needs(on.runs)}`,
      ...sheets.map(sheet => `${(perNeed(offBill, offSatisfied, sheet) / 1000).toFixed(1)}k→${(perNeed(onBill, onSatisfied, sheet) / 1000).toFixed(1)}k`), `${passes(off.runs)}→${passes(on.runs)}`,
    ]
  }))
  console.log('"tokens added" counts each proactive message once, when it arrives; it is then re-sent (mostly as cache hits) until compacted, which the cost columns include.')
  const verdicts = summaries.map(summary => {
    const scaledFp = summary.questions === 0 ? 0 : (8 * summary.falsePositives) / summary.questions
    return !(summary.precision >= 80) || scaledFp > 1 || summary.costPerNeedRatio >= 1
  })
  console.log(`proactive bar (precision ≥ 80%, ≤ 1 of 8 never-said false positives, cheaper per satisfied need than off under every sheet): ${verdicts.map((missed, index) => `${pairs[index]!.on.variant.budget} ${missed ? 'MISSED' : 'met'}`).join(', ')}`)
  return summaries
}
