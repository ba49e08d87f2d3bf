import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { ShadowContextReader } from '../src/index.ts'
import { describe, expect, it } from 'vitest'
import { cleanupAfterEach, engineHarness, shadowHarnessAt } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-redaction-')

describe('secret redaction in a real composition', () => {
  it('keeps API keys and configured patterns out of the store file and its index, and the rows still verify', async () => {
    const harness = await engineHarness({ model: new ScriptedModel({ contextWindow: 32_000 }), capture: { redact: true, redactPatterns: ['/acme-[0-9a-f]{12}/i'] } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'secrets' })
    harness.model.enqueue({ kind: 'text', text: 'Stored. I will not repeat the key.' })
    await harness.send(agent, 'Deploy with DEEPSEEK_API_KEY=sk-live0123456789abcdefghij and license ACME-0123456789ab, region eu-west-1')
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    const store = await capture.opened()
    const rows = await store.read({ sessionId: agent.session.id }, { limit: 1_000 })
    const user = rows.find(row => row.role === 'user' && row.text.includes('region eu-west-1'))!
    expect(user.text).toContain('[REDACTED:api-key]')
    expect(user.text).toContain('[REDACTED:custom]')
    for (const row of rows) {
      expect(row.text).not.toContain('sk-live0123456789')
      expect(row.eventJson).not.toContain('sk-live0123456789')
      expect(row.text.toLowerCase()).not.toContain('acme-0123456789ab')
    }
    expect((await store.search('sk-live0123456789abcdefghij', { sessionId: agent.session.id })).hits).toEqual([])
    expect((await store.search('eu-west-1', { sessionId: agent.session.id })).hits.length).toBeGreaterThan(0)
    // the write-ahead check still confirms the redacted rows against the original log events
    const confirmed = await capture.confirm(agent.session, rows.map(row => row.seq))
    expect(confirmed).toMatchObject({ ok: true, repaired: 0 })

    // the web reader (read-only, its own worker) reads the policy the capture saved in the store, and
    // answers with the stored, redacted text in the session and in the workspace scope
    const reader = new ShadowContextReader(harness.ctx, { path: store.path })
    expect(await (await capture.opened()).redactionPolicyOf()).toMatchObject({ patterns: ['/acme-[0-9a-f]{12}/i'] })
    for (const scope of ['session', 'workspace'] as const) {
      const found = await reader.search(agent.session, { query: 'region eu-west-1 ACME-0123456789ab', scope })
      expect(found.ok, JSON.stringify(found)).toBe(true)
      if (found.ok) expect(found.value.hits.map(hit => hit.shadowId)).toContain(user.shadowId)
      // the query is echoed as the store would keep it: a secret typed into the search box is not sent back
      if (found.ok) expect(found.value.query.toLowerCase()).not.toContain('acme-0123456789ab')
      const read = await reader.read(agent.session, { id: user.shadowId, before: 0, after: 0, scope })
      expect(read.ok && read.value.messages[0]!.text).toBe(user.text)
    }
  })

  it('redacts the rows already stored when dsh restarts with redaction on, and says how far it got', async () => {
    const home = newHome()
    const first = await shadowHarnessAt(home)
    harnesses.push(first)
    const agent = await first.createAgent({ sessionId: 'before-redaction' })
    first.model.enqueue({ kind: 'text', text: 'noted' })
    await first.send(agent, 'the staging password: hunter2-secret, keep it safe')
    await first.ctx.shadowCapture.flush()
    expect((await first.ctx.shadowCapture.store.read({ sessionId: 'before-redaction' })).some(row => row.text.includes('hunter2-secret'))).toBe(true)
    await first.dispose({ keepHome: true })
    const second = await shadowHarnessAt(home, { capture: { redact: true } })
    harnesses.push(second)
    const store = await second.ctx.shadowCapture.opened()
    const rows = await store.read({ sessionId: 'before-redaction' })
    expect(rows.length).toBeGreaterThan(1)
    expect(rows.filter(row => row.text.includes('hunter2') || row.eventJson.includes('hunter2'))).toEqual([])
    expect(rows.some(row => row.text.includes('password: [REDACTED:secret]'))).toBe(true)
    expect(second.logs.some(line => /redacting stored messages, \d+ of \d+/.test(line.text))).toBe(true)
    // and the write-ahead check still confirms them against the log
    await second.ctx.shadowCapture.flush()
    expect((await store.search('hunter2', { sessionId: 'before-redaction' })).hits).toEqual([])
  })

  it('takes a turn with 600 KB of adversarial tool output through capture, the write-ahead check and search', async () => {
    // shapes that made the old patterns rescan the rest of the text from every start (minutes on this size)
    const output = ['a.'.repeat(100_000), 'eyJ-'.repeat(50_000), 'x-'.repeat(100_000), '-----BEGIN RSA PRIVATE KEY-----x'.repeat(3_000)].join('\n')
    const harness = await engineHarness({
      model: new ScriptedModel({ contextWindow: 2_000_000 }),
      tools: [{ name: 'dump', description: 'Print a log.', run: () => output }],
      capture: { redact: true },
    })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'adversarial' })
    harness.model.enqueue({ kind: 'tools', calls: [{ name: 'dump', args: {} }] }, { kind: 'text', text: 'The log is noise.' })
    await harness.send(agent, 'Dump the log, my password: hunter2-secret')
    for (let turn = 0; turn < 3; turn += 1) {
      harness.model.enqueue({ kind: 'text', text: `reply ${turn}` })
      await harness.send(agent, `follow-up question ${turn}`)
    }
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    const store = await capture.opened()
    const rows = await store.read({ sessionId: 'adversarial' }, { limit: 100 })
    expect(rows.some(row => row.toolName === 'dump' && row.text.length > 500_000)).toBe(true)
    expect(rows.filter(row => row.text.includes('hunter2'))).toEqual([])
    // the write-ahead check redacts the log events on this thread to compare hashes
    expect(await capture.confirm(agent.session, rows.map(row => row.seq))).toMatchObject({ ok: true, repaired: 0 })
    expect((await store.search('noise', { sessionId: 'adversarial' })).hits.length).toBeGreaterThan(0)
  })

  it('sends the llm summarizer the redacted originals, and keeps a secret it repeats out of the whole compaction record, its raw output included', async () => {
    const secret = 'sk-live9876543210zyxwvutsrqpo'
    const scenario = codingSession({ turns: 12, seed: 7 })
    // a summarizing model that repeats what it read, the key among it (in its text and its reasoning-free raw output)
    const model = new ScriptedModel({ contextWindow: 12_000, summarize: () => `- The deploy uses DEEPSEEK_API_KEY=${secret} for eu-west-1.\n- Tests pass.` })
    const harness = await engineHarness({ tools: scenario.tools(), model, capture: { redact: true }, engine: { summary: 'llm' } })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'llm-secret' })
    harness.model.enqueue({ kind: 'tools', calls: [{ name: 'shell', args: { command: 'deploy --region eu-west-1', password: 'hunter2-secret', apiKey: secret } }] }, { kind: 'text', text: 'Stored.' })
    await harness.send(agent, `Deploy with DEEPSEEK_API_KEY=${secret}, region eu-west-1, password: hunter2-secret`)
    await harness.play(agent, scenario.turns)
    // the summarizer is sent what the store keeps (a configured summarizationProvider may be another provider)
    const asked = model.requests.filter(request => request.purpose === 'compaction')
    expect(asked.length).toBeGreaterThan(0)
    expect(asked.every(request => !request.rejected)).toBe(true)
    for (const request of asked) {
      expect(request.text()).not.toContain('sk-live9876543210')
      expect(request.text()).not.toContain('hunter2')
    }
    expect(asked[0]!.text()).toContain('[REDACTED:')
    const summaries = agent.session.events.filter(event => event.type === 'compaction/summary')
    expect(summaries.length).toBeGreaterThan(0)
    expect(model.requests.filter(request => request.purpose === 'compaction').length).toBeGreaterThan(0)
    // what the engine wrote into the session: the checkpoint message and the summary event with its raw output
    const written = agent.session.events.filter(event => event.type === 'compaction/summary' || (event.type === 'user/message' && (event.data.source as { kind?: string }).kind === 'compaction'))
    for (const event of written) expect(JSON.stringify(event)).not.toContain('sk-live9876543210')
    expect(JSON.stringify(summaries)).toContain('[REDACTED:api-key]')
  })
})
