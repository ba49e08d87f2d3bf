/**
 * The demo — the README's main job. A real dsh 0.1.0-rc.8 composition with Shadow Context plays a
 * long bilingual coding session: tool calls, a big log output, decisions made early. It shows the
 * context pressure as it goes, every compaction with its pointer, and at the end a question that
 * needs the early decisions: the agent searches and reads its shadowed past and answers from it.
 *
 * Offline by default, on the scripted model. With DEEPSEEK_API_KEY set (and
 * DSH_SHADOW_DEMO_OFFLINE unset), the same session runs against DeepSeek through dsh's own adapter.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { codingSession, DshHarness, ScriptedModel, type PluginMount } from '@dsh-shadow/testing'
import { isCapturable, ShadowCapture, ShadowCompactionEngine, ShadowProjection, ShadowRecall, type ShadowContextView } from 'dsh-shadow-context'
import { recallTurn, type Lookup } from './recall-agent.ts'

const WINDOW = 32_000
const TURNS = Number(process.env['DSH_SHADOW_DEMO_TURNS'] ?? 120)
const live = process.env['DEEPSEEK_API_KEY'] !== undefined && process.env['DEEPSEEK_API_KEY'] !== '' && process.env['DSH_SHADOW_DEMO_OFFLINE'] === undefined
const color = process.stdout.isTTY === true && process.env['NO_COLOR'] === undefined
const paint = (code: number, text: string): string => (color ? `\u001b[${code}m${text}\u001b[0m` : text)
const dim = (text: string): string => paint(2, text)
const bold = (text: string): string => paint(1, text)
const cyan = (text: string): string => paint(36, text)
const green = (text: string): string => paint(32, text)
const say = (text = ''): void => { process.stdout.write(`${text}\n`) }

const home = process.env['DSH_SHADOW_DEMO_HOME'] ?? mkdtempSync(join(tmpdir(), 'dsh-shadow-demo-'))
const scenario = codingSession({ turns: TURNS, seed: 42, outputChars: 1_400, bigOutputEvery: 37, bigOutputChars: 40_000 })

async function liveAdapter(): Promise<PluginMount[]> {
  // dsh's own DeepSeek adapter; the demo declares a 32k window so that compaction shows up soon.
  const deepseek = await import('@deepseek-ai/dsh-llm-deepseek')
  return [{ plugin: deepseek, config: { models: [{ id: 'deepseek-v4-flash', contextWindow: WINDOW }], defaultContextWindow: WINDOW } }]
}

const harness = await DshHarness.create({
  home,
  invariants: false,
  tools: scenario.tools(),
  model: new ScriptedModel({ contextWindow: WINDOW }),
  ...(live ? { route: { provider: 'deepseek', model: 'deepseek-v4-flash' } } : {}),
  plugins: [
    ...(live ? await liveAdapter() : []),
    { plugin: ShadowCapture, config: { home } },
    { plugin: ShadowRecall },
    { plugin: ShadowProjection },
  ],
  compaction: { plugin: ShadowCompactionEngine, config: {} },
  commandCompact: true,
})
const agent = await harness.createAgent({ sessionId: `demo-${new Date().toISOString().slice(0, 10)}-${Math.random().toString(36).slice(2, 6)}` })
const session = agent.session

say(bold('Shadow Context demo') + dim(` · dsh 0.1.0-rc.8 · ${live ? 'DeepSeek (deepseek-v4-flash, live)' : 'scripted model (offline)'} · ${WINDOW / 1000}k-token window`))
say(dim(`dsh home ${home}`))
say(dim(`session  ${session.id}`))
say()

// Every committed checkpoint, as it happens, with its pointer footer.
let passes = 0
harness.ctx.on('session/event', (subject, event: SessionEvent) => {
  if (subject !== session || event.type !== 'user/message' || typeof event.surfaceOp !== 'object') return
  if (event.data.source.kind !== 'plugin') return
  passes += 1
  const text = event.data.content.map(block => (block.type === 'text' ? block.text : '')).join('\n')
  const head = text.split('\n')[0] ?? ''
  const footer = text.split('\n').find(line => line.startsWith('[shadow ')) ?? text.split('\n').at(-1) ?? ''
  say(`   ${cyan('⟳')} ${cyan(head)}`)
  say(`     ${dim(footer.length > 150 ? `${footer.slice(0, 149)}…` : footer)}`)
})

function pressure(): string {
  const tokens = harness.ctx.tokenMeter.measure(session).totalTokens
  const cells = Math.min(10, Math.round((tokens / WINDOW) * 10))
  return `[${'▇'.repeat(cells)}${'·'.repeat(10 - cells)} ${(tokens / 1000).toFixed(1).padStart(4)}k/${WINDOW / 1000}k]`
}

const shown = new Set([1, 2, 3, 4, 5, 6, 7, TURNS])
await harness.play(agent, scenario.turns, (index, end) => {
  const turn = index + 1
  const prompt = scenario.turns[index]!.prompt.replace(/\s+/g, ' ')
  const fact = scenario.facts.find(candidate => candidate.turn === turn)
  const big = scenario.turns[index]!.steps.some(step => typeof step !== 'function' && step.kind === 'tools' && step.calls.some(call => JSON.stringify(call.args).includes('docker compose logs')))
  if (shown.has(turn) || fact !== undefined || big || turn % 15 === 0 || end.data.reason.kind !== 'completed') {
    const note = fact !== undefined ? green(` ← decision planted: "${fact.answer}"`) : big ? dim(' ← 40 KB of service logs') : ''
    say(`turn ${String(turn).padStart(3)} ${pressure()}  ${prompt.length > 70 ? `${prompt.slice(0, 69)}…` : prompt}${note}${end.data.reason.kind === 'completed' ? '' : ` (${end.data.reason.kind})`}`)
  }
})

// The question that needs the early decisions.
const wanted = ['db-port', 'migration-name', 'zh-cache-ttl'].map(id => scenario.facts.find(fact => fact.id === id)!)
const lookups: Lookup[] = wanted.map(fact => ({ query: fact.query, topic: fact.id }))
const question = 'Before we ship: which port did we agree for the staging database, what was the exact name of the refund-state migration, and 缓存过期时间定成多少？'
say()
say(bold(`turn ${TURNS + 1} `) + `${pressure()}  ${question}`)
const before = session.events.length
if (!live) {
  const { steps } = recallTurn(lookups, found => {
    const cite = (topic: string): string => {
      const entry = found.find(candidate => candidate.topic === topic)
      return entry?.line === undefined ? '(not found)' : `“${entry.line}” (${entry.shadowId})`
    }
    return [
      'From the shadowed history:',
      `- staging database: ${cite('db-port')}`,
      `- refund-state migration: ${cite('migration-name')}`,
      `- 缓存过期时间: ${cite('zh-cache-ttl')}`,
    ].join('\n')
  })
  harness.model.enqueue(...steps)
}
await harness.send(agent, question)
for (const event of session.events.slice(before)) {
  if (event.type === 'tool/call') say(`   ${cyan('→')} ${event.data.name} ${dim(event.data.arguments)}`)
  if (event.type === 'tool/result') {
    const text = event.data.message.content.map(block => (block.type === 'tool-result' ? block.content.map(inner => (inner.type === 'text' ? inner.text : '')).join('') : '')).join('')
    const first = text.split('\n').find(line => /^1\. |^── /.test(line)) ?? text.split('\n')[0] ?? ''
    say(`     ${dim(first.length > 140 ? `${first.slice(0, 139)}…` : first)}`)
  }
  if (event.type === 'assistant/message' && !event.data.message.content.some(block => block.type === 'tool-call')) {
    say()
    say(bold('assistant:'))
    for (const line of event.data.message.content.map(block => (block.type === 'text' ? block.text : '')).join('\n').split('\n')) say(`  ${line}`)
  }
}

// What is where, and how to look at it.
const capture = harness.ctx.shadowCapture
await capture.flush()
const store = await capture.opened()
const stats = await store.stats()
const view = harness.ctx.sessionProjections.snapshot(session).values['shadowContext'] as ShadowContextView
const visible = session.events.filter(isCapturable).length
const rows = await store.count({ sessionId: session.id })
const llmCalls = harness.model.requests.filter(request => request.purpose === 'compaction').length
say()
say(bold('Summary'))
say(`  ${TURNS + 1} turns · ${passes} compactions (${llmCalls} LLM calls spent on them) · ${view.shadowed} messages shadowed · ${view.recallCount} recalls`)
say(`  store rows for this session: ${rows} of ${visible} model-visible messages (${rows === visible ? green('none lost') : 'DIFFERS'}) · ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB`)
say(`  shadow store: ${stats.path}`)
say()
say(bold('Explore it') + dim(' (from the repository root)'))
const cli = `npm run -s shadow -- --home ${home}`
for (const command of ['sessions', `timeline ${session.id}`, `search --session ${session.id} "staging database port"`, `search --session ${session.id} 缓存过期时间`, `read ${view.checkpoints[0]?.id ?? '<checkpoint id>'}`, `verify ${session.id}`, `export ${session.id} --format md --output demo.md`]) {
  say(`  ${cli} ${command}`)
}
await harness.dispose({ keepHome: true })
