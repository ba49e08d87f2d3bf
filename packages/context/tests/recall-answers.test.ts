import { ScriptedModel, type ScriptedReply, type ScriptedRequest, type ScriptedTool } from '@dsh-shadow/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { READ_TOOL, SEARCH_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-answers-')

afterEach(() => {
  vi.useRealTimers()
})

const PLANTED = 'ERROR ingest::router rejected batch tenant=t4711 reason=cardinality_limit series=2500117'

/** 15,000 characters of ordinary log lines with the planted line at about 12,000. */
function logDump(): string {
  const lines: string[] = []
  let length = 0
  let planted = false
  for (let index = 0; length < 15_000; index += 1) {
    const line = !planted && length > 12_000 ? PLANTED : `2026-03-10T10:${String(index % 60).padStart(2, '0')}:00Z INFO ingest::router accepted batch tenant=t${100 + (index % 700)} points=${(index * 37) % 9000} lag_ms=${index % 400}`
    if (line === PLANTED) planted = true
    lines.push(line)
    length += line.length + 1
  }
  return lines.join('\n')
}

const TOOLS: ScriptedTool[] = [{ name: 'shell', description: 'Run a shell command.', run: () => logDump() }]

const at = (iso: string): number => Date.parse(iso)

/** Hit lines of a shadow_search result: shadow id and the rest of the line. */
function hitLines(text: string): Array<{ id: string; line: string }> {
  return [...text.matchAll(/^\d+\. (\S+) · (.*)$/gm)].map(match => ({ id: match[1]!, line: match[2]! }))
}

describe('recall answers in one call (real dsh)', () => {
  it('reads a deep passage, orders a changed value, says what is absent, reads time words, and never hits the question itself', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const model = new ScriptedModel({ contextWindow: 64_000 })
    const harness = await recallHarness({ tools: TOOLS, model })
    harnesses.push(harness)
    const agent = await harness.createAgent({ sessionId: 'answers' })
    const say = async (iso: string, text: string, reply = 'Noted.'): Promise<void> => {
      vi.setSystemTime(at(iso))
      model.enqueue({ kind: 'text', text: reply })
      await harness.send(agent, text)
    }

    // day 1
    vi.setSystemTime(at('2026-03-10T10:00:00Z'))
    model.enqueue({ kind: 'tools', text: 'Dumping the ingest logs.', calls: [{ name: 'shell', args: { command: 'dump-ingest-logs' } }] }, { kind: 'text', text: 'Dumped.' })
    await harness.send(agent, 'Dump the ingest router logs please.')
    await say('2026-03-10T11:00:00Z', 'Set request_timeout to 30s in config.yaml.', 'I set request_timeout to 30s.')
    await say('2026-03-10T14:00:00Z', 'The product list cache TTL is 60 seconds for now.')
    await say('2026-03-10T15:00:00Z', '商品列表的缓存过期时间先定成六十秒。', '好的。')
    // day 2
    await say('2026-03-11T09:30:00Z', 'Raise request_timeout please, the upstream is slow.', 'Changed: request_timeout is now 45s.')
    await say('2026-03-11T14:00:00Z', 'Decision: the product list cache TTL goes to 120 seconds.')
    await say('2026-03-11T15:00:00Z', '商品列表的缓存过期时间改成一百二十秒。', '收到。')
    // said on day 2 about day 1: found by the day it refers to
    await say('2026-03-11T16:00:00Z', 'Yesterday we agreed that the ingest shard count stays at 12.')
    await harness.ctx.shadowCapture.flush()

    // day 3: each question is one turn in which the scripted model searches, then follows the suggested read
    const results: string[] = []
    const ask = async (iso: string, question: string, follow: boolean): Promise<{ search: string; read?: string; turnSeq: number }> => {
      vi.setSystemTime(at(iso))
      const before = results.length
      const readSuggested = (request: ScriptedRequest): ScriptedReply => {
        results.push(request.lastText())
        const suggested = /Read the best hit at its passage: shadow_read (\{.*\})$/m.exec(request.lastText())
        if (!follow || suggested === null) return { kind: 'text', text: 'Answered.' }
        return { kind: 'tools', calls: [{ name: READ_TOOL, args: JSON.parse(suggested[1]!) as unknown }] }
      }
      model.enqueue(
        { kind: 'tools', text: 'Looking it up.', calls: [{ name: SEARCH_TOOL, args: { query: question } }] },
        readSuggested,
        request => {
          results.push(request.lastText())
          return { kind: 'text', text: 'Answered.' }
        },
      )
      const turnSeq = agent.session.events.length
      await harness.send(agent, question)
      model.clearQueue()
      await harness.ctx.shadowCapture.flush()
      return { search: results[before]!, ...(results[before + 1] === undefined ? {} : { read: results[before + 1]! }), turnSeq }
    }

    // a passage deep in a 15,000-character tool output comes back in one read
    const deep = await ask('2026-03-12T16:00:00Z', 'Which tenant hit the cardinality limit in the ingest router logs?', true)
    const top = hitLines(deep.search)[0]!
    expect(top.line).toContain('tool shell')
    expect(top.line).toMatch(/chars \d+–\d+ of 15\d{3}/)
    expect(deep.search).toContain('**tenant**=t4711 reason=**cardinality**_**limit**')
    expect(deep.read).toBeDefined()
    expect(deep.read).toContain(PLANTED)
    // the asking message (this turn's user message) is never a hit, let alone hit 1
    const asking = agent.session.events.find(event => event.seq >= deep.turnSeq && event.type === 'user/message')!
    const askingId = (await harness.ctx.shadowCapture.store.messageAt('answers', asking.seq))!.shadowId
    expect(hitLines(deep.search).map(hit => hit.id)).not.toContain(askingId)

    // a changed value: newest first, both times shown
    const value = await ask('2026-03-12T16:10:00Z', 'What is request_timeout now?', false)
    expect(value.search).toMatch(/Value over time \(`request_timeout`\), oldest first:\n {3}2026-03-10 11:00:\d\d UTC {2}30s .*\n {3}2026-03-11 09:30:\d\d UTC {2}45s .*← newest/)
    expect(hitLines(value.search)[0]!.line).toContain('2026-03-11 09:30')

    // an absent term: the explicit no-match line
    const absent = await ask('2026-03-12T16:20:00Z', 'Did we ever discuss Terraform?', false)
    expect(absent.search).toContain('No message in this session mentions `terraform`.')

    // "yesterday" and 昨天 filter to 2026-03-11
    for (const question of ['What did we decide yesterday about the product list cache TTL?', '昨天商品列表的缓存过期时间是怎么定的？']) {
      const day = await ask('2026-03-12T16:30:00Z', question, false)
      expect(day.search).toContain('as 2026-03-11 00:00–24:00 UTC')
      const hits = hitLines(day.search)
      expect(hits.length).toBeGreaterThan(0)
      expect(hits.every(hit => hit.line.startsWith('2026-03-11'))).toBe(true)
      expect(day.search).toMatch(/120 seconds|一百二十秒/)
      expect(day.search).not.toMatch(/60 seconds|六十秒/)
    }
    // a word said only in the other language: not "never discussed" (the glossary's translation is named)
    const translated = await ask('2026-03-12T16:25:00Z', 'Did we discuss the expiry of the product list cache?', false)
    expect(translated.search).toContain('No message in this session mentions `expiry` (but messages say `expiry` as `过期`).')
    expect(translated.search).toContain('**缓存过期**')

    // a date in the question: the messages of that day and those that refer to it ("yesterday" on day 2)
    const dated = await ask('2026-03-12T16:40:00Z', 'What did we agree on March 10 about the ingest shard count?', false)
    expect(dated.search).toContain('as 2026-03-10 00:00–24:00 UTC')
    expect(hitLines(dated.search)[0]!.line).toMatch(/^2026-03-11 16:00/)
    expect(dated.search).toContain('**shard** **count** stays at 12')
    expect(harness.problems()).toEqual([])
  })
})
