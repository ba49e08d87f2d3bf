import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { hashEventJson } from '@dsh-shadow/store'
import { codingSession, ScriptedModel } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { compareWithLog, modelVisible, shadowHarness, shadowHarnessAt, cleanupAfterEach } from './support.ts'

const { harnesses, newHome } = cleanupAfterEach('shadow-capture-')

describe('ShadowCapture on real dsh', () => {
  it('stores every model-visible message of a 50-turn session exactly once, in order, with times', async () => {
    const scenario = codingSession({ turns: 50, seed: 3, chineseRatio: 0.35, bigOutputEvery: 25, bigOutputChars: 1_000_000 })
    const nulPrompt = 'Binary check: the payload starts with \u0000 and ends here.'
    const turns = scenario.turns.map((turn, index) => (index === 9 ? { ...turn, prompt: nulPrompt } : turn))
    // A window large enough that nothing overflows: this test is about capture alone.
    const harness = await shadowHarness({ tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 10_000_000 }) })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'capture-50' })
    await harness.play(agent, turns)
    const capture = harness.ctx.shadowCapture
    await capture.flush()

    const log = modelVisible(agent.session)
    const rows = await capture.store.read({ sessionId: 'capture-50' }, { limit: 10_000 })
    expect(rows.map(row => row.seq)).toEqual(log.map(event => event.seq))
    expect(rows.map(row => row.time)).toEqual(log.map(event => event.time))
    expect(rows.map(row => row.hash)).toEqual(log.map(event => hashEventJson(JSON.stringify(event))))
    expect(rows.map(row => row.eventType)).toEqual(log.map(event => event.type))
    expect(new Set(rows.map(row => row.eventType))).toEqual(new Set(['user/message', 'request/header', 'assistant/message', 'tool/result']))

    // positions and tool names follow the log
    for (const row of rows.filter(candidate => candidate.eventType === 'tool/result')) {
      const event = agent.session.events[row.seq]!
      expect(event.type).toBe('tool/result')
      const data = event.data as { turn: number; step: number }
      expect([row.turn, row.step]).toEqual([data.turn, data.step])
      const call = agent.session.events.find(candidate => candidate.type === 'tool/call' && candidate.data.callId === row.callId)
      expect(call?.type === 'tool/call' ? call.data.name : undefined).toBe(row.toolName)
    }

    // the 1 MB outputs, the NUL byte and the Chinese text are stored exactly
    const big = rows.filter(row => row.text.length >= 1_000_000)
    expect(big).toHaveLength(2)
    const nulRow = rows.find(row => row.text.includes('\u0000'))
    expect(nulRow?.text).toBe(nulPrompt)
    const zhFact = scenario.facts.find(fact => fact.id === 'zh-cache-ttl')!
    const found = await capture.store.search(zhFact.query, { sessionId: 'capture-50' })
    expect(found.hits[0]!.message.text).toContain(zhFact.answer)

    expect(capture.health).toMatchObject({ failures: 0, pending: 0, lastFailure: null })
    expect(capture.health.rows.replaced).toBe(0)
    // dsh's invariant companions ran on every append and reported nothing
    expect(harness.problems()).toEqual([])
    expect((await capture.store.stats()).messages).toBe(log.length)
  })

  it('survives SIGKILL: a new process resumes the session with nothing lost or duplicated', async () => {
    const home = newHome()
    const child = fileURLToPath(new URL('./fixtures/session-child.ts', import.meta.url))
    const run = (mode: string, killAfterTurn: number | undefined): Promise<{ code: number | null; signal: string | null; turns: number }> =>
      new Promise((resolve, reject) => {
        const proc = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', child, home, 'killed-session', '40', mode], { stdio: ['ignore', 'pipe', 'pipe'] })
        let turns = 0
        let killing = false
        let stderr = ''
        proc.stderr.on('data', chunk => { stderr += String(chunk) })
        proc.stdout.on('data', chunk => {
          for (const line of String(chunk).split('\n')) {
            const progress = /^turn (\d+) written (\d+)$/.exec(line)
            if (progress === null) continue
            turns = Number(progress[1])
            // Kill a few milliseconds into the next turn, in the middle of dsh's and our writes, once
            // this process has written rows of its own (under load its store may open late)
            if (killAfterTurn !== undefined && !killing && turns >= killAfterTurn && Number(progress[2]) > 0) {
              killing = true
              setTimeout(() => proc.kill('SIGKILL'), 3)
            }
          }
        })
        proc.on('error', reject)
        proc.on('exit', (code, signal) => (code !== 0 && signal === null ? reject(new Error(`child failed (${code}): ${stderr}`)) : resolve({ code, signal, turns })))
      })
    const first = await run('new', 20)
    expect(first.signal).toBe('SIGKILL')

    // The parent is the "new process": same dsh home, same store.
    const harness = await shadowHarnessAt(home)
    harnesses.push(harness)
    const agent = await harness.resume('killed-session')
    await harness.ctx.shadowCapture.flush()
    const report = await compareWithLog(harness.ctx.shadowCapture.store, 'killed-session', agent.session.events)
    expect(report).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    // the killed process had really written rows (the resume found them unchanged) and had run >= 20 turns
    expect(harness.ctx.shadowCapture.health.rows.unchanged).toBeGreaterThan(0)
    expect(agent.session.events.filter(event => event.type === 'turn/end').length).toBeGreaterThanOrEqual(20)

    // and the resumed session keeps capturing
    harness.model.enqueue({ kind: 'text', text: 'resumed and still here' })
    await harness.send(agent, 'are you still there?')
    await harness.ctx.shadowCapture.flush()
    expect(await compareWithLog(harness.ctx.shadowCapture.store, 'killed-session', agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    expect(harness.problems()).toEqual([])
  })

  it('keeps two concurrent sessions of one process apart', async () => {
    const harness = await shadowHarness()
    harnesses.push(harness)
    const [alpha, beta] = await Promise.all([harness.createAgent({ sessionId: 'alpha' }), harness.createAgent({ sessionId: 'beta' })])
    // Both agents share one scripted model; replies are generic so interleaving is harmless.
    for (let turn = 0; turn < 8; turn += 1) {
      harness.model.enqueue({ kind: 'text', text: `reply ${turn}` }, { kind: 'text', text: `reply ${turn}` })
      await Promise.all([harness.send(alpha!, `alpha question ${turn} about apples`), harness.send(beta!, `beta question ${turn} about bananas`)])
    }
    const capture = harness.ctx.shadowCapture
    await capture.flush()
    for (const agent of [alpha!, beta!]) {
      expect(await compareWithLog(capture.store, agent.session.id, agent.session.events)).toEqual({ missing: [], mismatched: [], extra: [], duplicated: 0 })
    }
    const apples = await capture.store.search('apples', { sessionId: 'beta' })
    expect(apples.hits).toEqual([])
    const bananas = await capture.store.search('bananas', { sessionId: 'beta' })
    expect(bananas.hits.length).toBeGreaterThan(0)
    expect(bananas.hits.every(hit => hit.message.sessionId === 'beta')).toBe(true)
  })

  it('lets a fork read its parent prefix by reference, with no row copied', async () => {
    const harness = await shadowHarness()
    harnesses.push(harness)
    const parent = await harness.createAgent({ sessionId: 'parent' })
    for (let turn = 0; turn < 4; turn += 1) {
      harness.model.enqueue({ kind: 'text', text: `parent reply ${turn}` })
      await harness.send(parent, `parent turn ${turn}`)
    }
    const boundary = parent.session.events.length - 1
    const seed = parent.session.events.slice(0, boundary + 1)
    const handle = await harness.ctx.agents.create({
      sessionId: 'child' as never,
      seed,
      meta: { parentSession: parent.session.id, seedLength: seed.length },
      agentOptions: { provider: 'scripted', model: 'scripted-coder' },
    })
    harness.model.enqueue({ kind: 'text', text: 'child reply' })
    await harness.send(handle.agent, 'child turn')
    // the parent goes on after the fork; the child must not see that
    harness.model.enqueue({ kind: 'text', text: 'parent after fork' })
    await harness.send(parent, 'parent continues')
    const capture = harness.ctx.shadowCapture
    await capture.flush()

    const visible = await capture.store.read({ sessionId: 'child' }, { limit: 1_000 })
    const childLog = modelVisible(handle.agent.session)
    expect(visible.map(row => row.seq)).toEqual(childLog.map(event => event.seq))
    expect(visible.map(row => row.hash)).toEqual(childLog.map(event => hashEventJson(JSON.stringify(event))))
    expect(visible.filter(row => row.sessionId === 'child').every(row => row.seq >= seed.length)).toBe(true)
    // one row per distinct message across both sessions
    const distinct = new Set([...modelVisible(parent.session), ...childLog].map(event => hashEventJson(JSON.stringify(event))))
    expect((await capture.store.stats()).messages).toBe(distinct.size)
    expect((await capture.store.search('after fork', { sessionId: 'child' })).hits).toEqual([])
    await handle.dispose()
  })
})
