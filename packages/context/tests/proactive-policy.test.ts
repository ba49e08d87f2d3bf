import { describe, expect, it } from 'vitest'
import { chooseProactiveHit, ECHO_RUN, sharedRun } from '../src/recall/proactive.ts'

describe('ProactivePolicy: a past request phrased like the prompt is an echo, a shared topic is not', () => {
  it('counts the longest shared run of words, CJK characters at half weight', () => {
    expect(sharedRun('Run the tests around src/lib/logger.ts and fix whatever breaks.', 'Run the tests around src/api/orders.ts and fix whatever breaks.')).toBeGreaterThanOrEqual(ECHO_RUN)
    expect(sharedRun('帮我跑一下 src/api/users.ts 相关的测试，把失败的修好。', '帮我跑一下 docker-compose.yml 相关的测试，把失败的修好。')).toBeGreaterThanOrEqual(ECHO_RUN)
    // a decision and the ask that needs it share a topic, not a phrasing
    expect(sharedRun('Update the billing staging connection string to the port we agreed on earlier.', 'Also, we decided: the billing staging database moves to port 5480.')).toBeLessThan(ECHO_RUN)
    expect(sharedRun('把刚才billing灰度发布的 release 编号写进变更单。', '开始billing灰度发布。')).toBeLessThan(ECHO_RUN)
    expect(sharedRun('', 'anything')).toBe(0)
  })
})

type Hit = Parameters<typeof chooseProactiveHit>[0]['result']['hits'][number]

function hit(id: string, text: string, matched: string[], over: { role?: 'user' | 'tool'; elided?: boolean } = {}): Hit {
  const message = { shadowId: id, text, role: over.role ?? 'tool', sourceKind: over.role === 'user' ? 'user' : 'tool', eventType: over.role === 'user' ? 'user/message' : 'tool/result', elidedBy: over.elided === false ? null : 'k.c1' }
  return { message, matched, score: 1, snippet: text, passage: { start: 0, end: text.length } } as unknown as Hit
}

const terms = (words: string[]): Parameters<typeof chooseProactiveHit>[0]['result']['terms'] => words.map(term => ({ term, inScope: 1, inHits: 1, distinctive: true }))

describe('ProactivePolicy.choose', () => {
  const prompt = 'Compare the zebra export p95 against the target.'
  const report = hit('k.5', 'zebra export route p95=412ms errors=0', ['zebra', 'export', 'p95'])
  const base = { prompt, surface: 'nothing relevant here', minMatches: 2, result: { hits: [report], terms: terms(['zebra', 'export', 'p95']) } }

  it('fires on the one hidden message that holds the prompt\'s rare words', () => {
    expect(chooseProactiveHit(base)).toEqual({ hit: report })
  })

  it('skips for each reason it names', () => {
    expect(chooseProactiveHit({ ...base, result: { ...base.result, terms: terms(['zebra']) } })).toEqual({ skip: 'too few rare words in the prompt' })
    expect(chooseProactiveHit({ ...base, surface: 'the zebra export p95 is on screen' })).toEqual({ skip: 'every rare word is on the surface' })
    expect(chooseProactiveHit({ ...base, result: { ...base.result, hits: [hit('k.5', report.message.text, ['zebra', 'export', 'p95'], { elided: false })] } })).toEqual({ skip: 'the best hit is on the surface' })
    expect(chooseProactiveHit({ ...base, result: { ...base.result, hits: [report, hit('k.9', 'zebra export route p95=388ms', ['zebra', 'export', 'p95'])] } })).toEqual({ skip: 'another hit holds the same rare words' })
    // an earlier request phrased like this one brings no fact along
    const echo = hit('k.2', 'Compare the zebra export p95 against the target, please.', ['zebra', 'export', 'p95'], { role: 'user' })
    expect(chooseProactiveHit({ ...base, result: { ...base.result, hits: [echo] } })).toEqual({ skip: 'the best hit is a past request phrased like this one' })
    // the same words in a user's decision (not the same phrasing) still fire
    const decision = hit('k.3', 'We decided: the zebra export keeps p95 under 500ms.', ['zebra', 'export', 'p95'], { role: 'user' })
    expect(chooseProactiveHit({ ...base, result: { ...base.result, hits: [decision] } })).toEqual({ hit: decision })
  })
})
