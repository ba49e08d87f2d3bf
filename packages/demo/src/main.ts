/**
 * The demo (README main job). For now: a real dsh composition with Shadow Context capture plays a
 * scripted bilingual coding session offline, then shows what the shadow store holds.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShadowCapture } from 'dsh-shadow-context'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'

const home = process.env['DSH_SHADOW_DEMO_HOME'] ?? mkdtempSync(join(tmpdir(), 'dsh-shadow-demo-'))
const scenario = codingSession({ turns: 30, seed: 42, bigOutputEvery: 15, bigOutputChars: 200_000 })
const harness = await DshHarness.create({
  home,
  invariants: false,
  tools: scenario.tools(),
  model: new ScriptedModel({ contextWindow: 1_000_000 }),
  plugins: dshHome => [{ plugin: ShadowCapture, config: { home: dshHome } }],
})
const agent = await harness.createAgent({ sessionId: 'demo-session' })
console.log(`dsh home: ${home}`)
await harness.play(agent, scenario.turns, index => {
  const prompt = scenario.turns[index]!.prompt
  console.log(`turn ${String(index + 1).padStart(2)}  ${prompt.slice(0, 90)}`)
})
const capture = harness.ctx.shadowCapture
await capture.flush()
const stats = await capture.store.stats()
console.log(`\nshadow store: ${stats.path}`)
console.log(`sessions ${stats.sessions}, messages ${stats.messages}, ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB`)
for (const fact of scenario.facts) {
  const found = await capture.store.search(fact.query, { sessionId: agent.session.id, limit: 1 })
  const hit = found.hits[0]
  console.log(`search ${JSON.stringify(fact.query)} → ${hit === undefined ? '(nothing)' : `${hit.message.shadowId}: ${hit.snippet.slice(0, 110)}`}`)
}
await harness.dispose({ keepHome: true })
