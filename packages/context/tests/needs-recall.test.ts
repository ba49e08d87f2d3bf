/**
 * How NeedsModel meets a need with recall, on real dsh: in one call when the search result itself
 * shows the exact fact, with a read at the hit's passage (or of a tool result with its call) when it
 * does not; never because the question echoed the answer. Never-discussed questions, proactive
 * recall bookkeeping, and a delegated model (the `--model deepseek` path, played here by a second
 * scripted model) judged on its answer.
 */
import { spawnSync } from 'node:child_process'
import { NeedsModel, parseScenario, playScenario, ScenarioFormatError, ScenarioToolbox, ScriptedModel, serializeScenario, type AgentScenario, type NeedOutcome, type ScriptedRequest, type TurnDelegate } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import type { ShadowRecallConfig } from '../src/index.ts'
import { cleanupAfterEach, fillerStep as filler, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-needs-recall-')

const CANARY = 'canary weight stays at seventeen percent until Friday'
const LIMIT = 'export const POOL_SIZE = 77'
const DEEP = 'vault_mount=secret/ops/zz9-ledger'

function deepOutput(): string {
  const lines: string[] = []
  for (let index = 0; lines.join('\n').length < 12_000; index += 1) lines.push(`2026-03-10T10:${String(index % 60).padStart(2, '0')}:00Z INFO worker heartbeat ok shard=${index % 7}`)
  lines.push(`2026-03-10T11:00:00Z WARN ledger secrets sidecar: ${DEEP} (rotated)`)
  while (lines.join('\n').length < 15_000) lines.push(`2026-03-10T11:${String(lines.length % 60).padStart(2, '0')}:00Z INFO worker heartbeat ok`)
  return lines.join('\n')
}

/** Facts in turns 1–3, bulky turns, then turns that need them and one never-discussed question. */
function scenario(): AgentScenario {
  const config = (value: number): string => `// src/config/limits.ts\nexport const REQUEST_TIMEOUT_MS = 8000\nexport const POOL_SIZE = ${value}\nexport const HEALTHCHECK_INTERVAL_S = 21`
  const turns = [
    { turn: 1, prompt: 'Start on the ledger service and check its rollout.', steps: [filler(1), { text: 'Checking.', calls: [{ name: 'shell', args: { command: 'rollout status ledger' }, output: `rollout ledger: ${CANARY}\nready 3/3` }] }, { text: 'Rollout healthy.' }] },
    {
      turn: 2, prompt: 'Raise the pool size in the limits file.', steps: [
        { text: 'Reading it.', calls: [{ name: 'read_file', args: { path: 'src/config/limits.ts' }, output: config(5) }] },
        { text: 'Raising POOL_SIZE.', calls: [{ name: 'write_file', args: { path: 'src/config/limits.ts', content: config(77) }, output: 'wrote src/config/limits.ts (1 line changed)' }] },
        { text: 'Raised.' },
      ],
    },
    { turn: 3, prompt: 'Dump the sidecar logs.', steps: [{ text: 'Dumping.', calls: [{ name: 'shell', args: { command: 'kubectl logs sidecar' }, output: deepOutput() }] }, { text: 'Dumped.' }] },
    ...Array.from({ length: 8 }, (_, index) => ({ turn: index + 4, prompt: `Review module ${index + 4}.`, steps: [filler(index + 4), filler(index + 104), { text: `Module ${index + 4} reviewed.` }] })),
    { turn: 12, prompt: 'Write the ledger release note with the canary weight and the current pool size.', steps: [{ text: 'Release note written.' }] },
    { turn: 13, prompt: 'Point the rotation job at the ledger secrets sidecar vault mount.', steps: [{ text: 'Rotation job updated.' }] },
    { turn: 14, prompt: 'What did we decide about the Terraform state backend? Configure it that way.', steps: [{ text: 'Checked the history before answering.' }] },
  ]
  return {
    id: 'needs-recall',
    turns,
    needs: [
      { id: 'canary', turn: 12, fact: CANARY, query: 'ledger canary weight rollout', kind: 'tool-value', important: false },
      { id: 'limit', turn: 12, fact: LIMIT, query: 'current value of POOL_SIZE in src/config/limits.ts', kind: 'file-content', important: false },
      { id: 'deep', turn: 13, fact: DEEP, query: 'ledger secrets sidecar vault mount', kind: 'identifier', important: false },
    ],
    absent: [{ id: 'terraform', turn: 14, term: 'Terraform', query: 'Terraform state backend decision' }],
  }
}

async function play(input: AgentScenario, options: { recall?: ShadowRecallConfig; delegate?: TurnDelegate } = {}): Promise<{ model: NeedsModel; outcomes: Map<string, NeedOutcome>; results: string[] }> {
  const toolbox = new ScenarioToolbox(input)
  const model = new NeedsModel({ scenario: input, toolbox, recovery: 'recall', contextWindow: 16_000, ...(options.delegate === undefined ? {} : { delegate: options.delegate }) })
  const harness = await recallHarness({ model, tools: toolbox.tools(), engine: { thresholdRatio: 0.25, retainRatio: 0.05 }, ...(options.recall === undefined ? {} : { recall: options.recall }) })
  harnesses.push(harness)
  const agent = await harness.createAgent({ sessionId: 'needs-recall' })
  await playScenario(harness, agent, model)
  // independent of the model's bookkeeping: every tool result as logged, match marks read through
  const results = agent.session.events.flatMap(event => (event.type === 'tool/result' ? [JSON.stringify(event.data.message.content).replaceAll('**', '').replaceAll('\\n', '\n')] : []))
  expect(harness.problems()).toEqual([])
  return { model, outcomes: new Map(model.outcomes.map(outcome => [outcome.need.id, outcome])), results }
}

describe('needs met in as few recall calls as the results allow', () => {
  it('one call when the hit shows the fact; a read of the call when only the call holds it; a read at the passage of a long output', async () => {
    const { model, outcomes, results } = await play(scenario())
    expect(outcomes.get('canary')).toMatchObject({ satisfied: true, fromSurface: false, via: 'search', calls: 1 })
    // the written content is in the call's arguments, not in the tool result the search hits
    const limit = outcomes.get('limit')!
    expect(limit).toMatchObject({ satisfied: true, fromSurface: false, via: 'read', calls: 2 })
    const deep = outcomes.get('deep')!
    expect(deep.satisfied).toBe(true)
    expect(deep.calls).toBeLessThanOrEqual(2)
    for (const fact of [CANARY, LIMIT, DEEP]) expect(results.some(text => text.includes(fact)), fact).toBe(true)
    // the read of the call came with the result (before: 1), and no hit the model can see was read
    const reads = model.requests.flatMap(request => request.options.messages.flatMap(message => message.content.flatMap(block => (block.type === 'tool-call' && block.name === 'shadow_read' ? [block.arguments] : []))))
    expect(reads.some(args => args.includes('"before":1'))).toBe(true)
    // never discussed: the search says so and one call settles it
    expect(model.absentOutcomes).toEqual([expect.objectContaining({ explicit: true, calls: 1, contradicted: false, proactive: false })])
  })

  it('the query echoed in the result is not the fact coming back, and a scenario whose query holds its fact is refused', async () => {
    const NEVER = 'vault mount lives under secret/ops/qq7'
    const base = scenario()
    // bypasses parseScenario on purpose: the model itself must not be fooled by the echo
    const fooling: AgentScenario = { ...base, absent: [], needs: [{ id: 'echo', turn: 12, fact: NEVER, query: `where the ${NEVER} note is`, kind: 'identifier', important: false }] }
    const { outcomes } = await play(fooling)
    expect(outcomes.get('echo')).toMatchObject({ satisfied: false, via: 'not-found' })
    expect(() => parseScenario(serializeScenario(fooling))).toThrow(ScenarioFormatError)
    expect(() => parseScenario(serializeScenario(fooling))).toThrow(/the query contains the fact/)
  })

  it('absent questions: a term the session does mention is refused with the turn that mentions it', () => {
    const text = serializeScenario({ ...scenario(), absent: [{ id: 'x', turn: 14, term: 'sidecar', query: 'sidecar' }] })
    expect(() => parseScenario(text)).toThrow(/absent x: the prompt of turn 14 does not name "sidecar"/)
    const named = serializeScenario({ ...scenario(), absent: [{ id: 'y', turn: 13, term: 'sidecar', query: 'sidecar' }] })
    expect(() => parseScenario(named)).toThrow(/absent y: "sidecar" occurs in turn 3/)
    expect(parseScenario(serializeScenario(scenario())).absent).toEqual(scenario().absent)
  })

  it('proactive recall on: never fires before the never-discussed question, and every firing is accounted', async () => {
    const { model } = await play(scenario(), { recall: { proactive: true } })
    const terraform = model.absentOutcomes[0]!
    expect(terraform.proactive).toBe(false)
    for (const firing of model.proactiveFirings) expect(firing.tokens).toBeGreaterThan(0)
    // a need met by a proactive message is counted apart from the surface
    for (const outcome of model.outcomes) if (outcome.via === 'proactive') expect(model.proactiveFirings.some(firing => firing.turn === outcome.need.turn && firing.heldFact)).toBe(true)
  })
})

describe('a delegated model answers the turns with needs (the --model deepseek path)', () => {
  it('is judged on its answer: a quoted fact counts, a fact it saw but did not quote does not', async () => {
    // the allowed fake again: a second scripted model plays the "real" one, with the real tools
    const delegateModel = new ScriptedModel({ contextWindow: 16_000 })
    const quoteFrom = (request: ScriptedRequest, needle: string): string => request.lastText().replaceAll('**', '').split('\n').find(line => line.includes(needle)) ?? 'nothing found'
    delegateModel.enqueue(
      { kind: 'tools', calls: [{ name: 'shadow_search', args: { query: 'ledger canary weight rollout' } }] },
      request => ({ kind: 'text', text: `Release note uses \`${quoteFrom(request, 'seventeen percent').trim()}\`.` }),
      { kind: 'tools', calls: [{ name: 'shadow_search', args: { query: 'ledger secrets sidecar vault mount' } }] },
      { kind: 'text', text: 'Rotation job updated (I looked it up).' },
    )
    const delegate: TurnDelegate = { adapter: delegateModel, model: 'scripted-delegate', maxRequests: 4, instruction: 'Quote what you rely on exactly.' }
    const input = { ...scenario(), needs: scenario().needs.filter(need => need.id !== 'limit') }
    const { model, outcomes } = await play(input, { delegate })
    expect(outcomes.get('canary')).toMatchObject({ satisfied: true, via: 'model-answer', calls: 1 })
    expect(outcomes.get('deep')!.satisfied).toBe(false)
    expect(['model-unquoted', 'model-missed']).toContain(outcomes.get('deep')!.via)
    expect(model.delegatedRequests.size).toBe(4)
    // the delegate's turns carry the instruction; the others are played by the script
    expect(delegateModel.requests.every(request => request.text().includes('Quote what you rely on exactly.'))).toBe(true)
    expect(model.absentOutcomes).toHaveLength(1)
  })

  it('bench:agent --model deepseek without DEEPSEEK_API_KEY stops with one typed error and runs nothing', () => {
    const env = { ...process.env }
    delete env['DEEPSEEK_API_KEY']
    const run = spawnSync(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', 'bench/agent.ts', '--model', 'deepseek', '--seeds', '1', '--turns', '4'], { cwd: new URL('../../..', import.meta.url).pathname, env, encoding: 'utf8', timeout: 60_000 })
    expect(run.status).toBe(2)
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^bench:agent: DeepSeekRunError MISSING_CREDENTIAL: --model deepseek needs DEEPSEEK_API_KEY in the environment .*Nothing was run\.$/)])
    expect(run.stdout).not.toContain('RESULT agent')
  })
})
