/**
 * The bench:agent success check, on real dsh: a need counts as satisfied only when its exact fact
 * is on the surface or came back in a tool result; a fact that is neither fails, whatever the
 * composition. Also the scenario file format (typed errors, round trip).
 */
import { agentSession, NeedsModel, parseScenario, playScenario, ScenarioFormatError, ScenarioToolbox, serializeScenario, type AgentScenario, type NeedOutcome, type Recovery } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { cleanupAfterEach, engineHarness, fillerStep as filler, recallHarness } from './support.ts'
import { DshHarness } from '@dsh-shadow/testing'

const { harnesses } = cleanupAfterEach('shadow-needs-')

const PORT = 'the ledger staging database moves to port 5471'
const CANARY = 'canary weight stays at seventeen percent until Friday'
const LATENCY = 'p95=777ms'
const NEVER = 'the vault mount lives under secret/ops/zz9'

/** Facts in turns 1–2, eight bulky turns, then one turn that needs them all. */
function tinyScenario(): AgentScenario {
  const report = `$ cat reports/load.txt\nroute=/v1/orders rps=410 p50=31ms\nroute=/v1/checkout ${LATENCY} errors=0\n`
  const turns = [
    { turn: 1, prompt: `Start on the ledger service. Also, we decided: ${PORT}.`, steps: [filler(1), { text: 'Noted.' }] },
    {
      turn: 2, prompt: 'Check the rollout and the load report.', steps: [
        { text: 'Both at once.', calls: [
          { name: 'shell', args: { command: 'rollout status ledger' }, output: `rollout ledger: ${CANARY}\nready 3/3` },
          { name: 'shell', args: { command: 'cat reports/load.txt' }, output: report },
        ] },
        { text: 'Rollout healthy; load report read.' },
      ],
    },
    ...Array.from({ length: 8 }, (_, index) => ({ turn: index + 3, prompt: `Review module ${index + 3}.`, steps: [filler(index + 3), filler(index + 103), { text: `Module ${index + 3} reviewed.` }] })),
    { turn: 11, prompt: 'Write the ledger release note with the staging port, the canary weight, the checkout p95, and the vault mount.', steps: [{ text: 'Release note written.' }] },
  ]
  return {
    id: 'tiny',
    turns,
    needs: [
      { id: 'port', turn: 11, fact: PORT, query: 'ledger staging database port decision', kind: 'decision', important: true },
      { id: 'canary', turn: 11, fact: CANARY, query: 'ledger canary weight rollout', kind: 'tool-value', important: false },
      { id: 'latency', turn: 11, fact: LATENCY, query: 'checkout p95 latency load report', kind: 'tool-value', important: false, rerun: { name: 'shell', args: { command: 'cat reports/load.txt' }, output: report } },
      { id: 'never', turn: 11, fact: NEVER, query: 'vault mount path', kind: 'identifier', important: true },
    ],
  }
}

async function play(scenario: AgentScenario, recovery: Recovery, create: (model: NeedsModel, toolbox: ScenarioToolbox) => Promise<DshHarness>): Promise<{ outcomes: Map<string, NeedOutcome>; harness: DshHarness; results: string[] }> {
  const toolbox = new ScenarioToolbox(scenario)
  const model = new NeedsModel({ scenario, toolbox, recovery, contextWindow: 16_000 })
  const harness = await create(model, toolbox)
  harnesses.push(harness)
  const agent = await harness.createAgent({ sessionId: `needs-${recovery}` })
  await playScenario(harness, agent, model)
  // Independent of the model's bookkeeping: the tool results of the last turn, as logged.
  const lastTurnStart = agent.session.events.findLastIndex(event => event.type === 'turn/start')
  const results = agent.session.events.slice(lastTurnStart).flatMap(event => (event.type === 'tool/result' ? [JSON.stringify(event.data.message.content).replaceAll('**', '')] : []))
  expect(toolbox.unmatched).toEqual([])
  return { outcomes: new Map(model.outcomes.map(outcome => [outcome.need.id, outcome])), harness, results }
}

describe('needs on real dsh', () => {
  it('Shadow Context with recall: facts compacted away come back through shadow_search/shadow_read; a fact never present fails', async () => {
    const { outcomes, harness, results } = await play(tinyScenario(), 'recall', (model, toolbox) => recallHarness({ model, tools: toolbox.tools(), engine: { thresholdRatio: 0.25, retainRatio: 0.05 } }))
    const canary = outcomes.get('canary')!
    expect(canary.fromSurface, 'the canary line was compacted away').toBe(false)
    expect(canary.satisfied).toBe(true)
    expect(['search', 'read']).toContain(canary.via)
    expect(canary.calls).toBeLessThanOrEqual(3)
    expect(results.some(text => text.includes(CANARY)), 'the fact really came back in a logged tool result').toBe(true)
    for (const id of ['port', 'latency']) expect(outcomes.get(id)!.satisfied, id).toBe(true)
    const never = outcomes.get('never')!
    expect(never).toMatchObject({ satisfied: false, fromSurface: false, via: 'not-found' })
    expect(never.calls).toBeGreaterThanOrEqual(1)
    expect(never.calls).toBeLessThanOrEqual(3)
    expect(harness.problems()).toEqual([])
  })

  it('without the recall tools, what is neither on the surface nor recoverable fails', async () => {
    const { outcomes } = await play(tinyScenario(), 'recall', (model, toolbox) => engineHarness({ model, tools: toolbox.tools(), engine: { thresholdRatio: 0.25, retainRatio: 0.05 } }))
    for (const id of ['canary', 'latency', 'never']) expect(outcomes.get(id), id).toMatchObject({ satisfied: false, fromSurface: false, via: 'no-recall-tool', calls: 0 })
    const port = outcomes.get('port')!
    // The decision is satisfied only if the digest carried it verbatim.
    expect(port.satisfied).toBe(port.fromSurface)
  })

  it('compaction-basic: the generous summary keeps important facts, re-runnable ones are re-run, the rest fail', async () => {
    const { outcomes, results } = await play(tinyScenario(), 'rerun', (model, toolbox) => DshHarness.create({ model, tools: toolbox.tools(), compaction: { basic: { thresholdRatio: 0.25, retainRatio: 0.05 } } }))
    expect(outcomes.get('port')).toMatchObject({ satisfied: true, fromSurface: true })
    expect(outcomes.get('latency')).toMatchObject({ satisfied: true, fromSurface: false, via: 'rerun', calls: 1 })
    expect(results.some(text => text.includes(LATENCY))).toBe(true)
    expect(outcomes.get('canary')).toMatchObject({ satisfied: false, via: 'not-rerunnable' })
    expect(outcomes.get('never')).toMatchObject({ satisfied: false, via: 'not-rerunnable' })
  })
})

describe('agent scenario files', () => {
  it('round-trips a generated session through JSONL', () => {
    const scenario = agentSession({ seed: 5, turns: 24 })
    expect(scenario.needs.length).toBeGreaterThan(4)
    expect(new Set(scenario.needs.map(need => need.kind)).size).toBeGreaterThan(3)
    expect(scenario.turns.some(turn => turn.steps.length >= 15)).toBe(true)
    expect(scenario.turns.some(turn => turn.steps.some(step => (step.calls?.length ?? 0) >= 2))).toBe(true)
    expect(parseScenario(serializeScenario(scenario))).toEqual(scenario)
  })

  it('rejects malformed files with the line that is wrong', () => {
    const good = serializeScenario(tinyScenario()).split('\n')
    const cases: Array<[string, RegExp]> = [
      ['{"type":"turn","turn":1,"prompt":"x","steps":[{"text":"y"}]}', /line 1: the first record must be/],
      [[good[0], '{"type":"turn","turn":2,"prompt":"x","steps":[{"text":"y"}]}'].join('\n'), /line 2: turns must be numbered/],
      [[good[0], '{"type":"turn","turn":1,"prompt":"x","steps":[{"calls":[{"name":"shell","args":{},"output":""}]}]}'].join('\n'), /last step of a turn must be a final answer/],
      [[good[0], good[1], '{"type":"need","id":"a","turn":1,"fact":"f","query":"q","kind":"rumour","important":true}'].join('\n'), /line 3: "kind" must be one of/],
      [[good[0], 'not json'].join('\n'), /line 2: not JSON/],
      [[good[0], good[1], `{"type":"need","id":"a","turn":1,"fact":"Start on","query":"q","kind":"decision","important":true}`].join('\n'), /the fact is in the prompt/],
    ]
    for (const [text, message] of cases) {
      expect(() => parseScenario(text)).toThrow(ScenarioFormatError)
      expect(() => parseScenario(text)).toThrow(message)
    }
  })
})
