import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { describe, expect, it } from 'vitest'
import { composeDigest, composeRollup, INDEX_MAX_LINES, parseIndexEntry, tokensOf, type DigestMessage } from '../src/engine/digest.ts'
import { composeMask } from '../src/engine/mask.ts'

const T0 = Date.UTC(2026, 10, 30, 9, 12, 5)

function user(seq: number, turn: number, text: string): DigestMessage {
  return { turn, toolName: null, event: { type: 'user/message', seq, time: T0 + seq * 1000, data: { role: 'user', id: `u${seq}`, content: [{ type: 'text', text }], source: { kind: 'user' } }, surfaceOp: 'append' } as unknown as SessionEvent }
}
function call(seq: number, turn: number, name: string, args: object, text = ''): DigestMessage {
  return {
    turn, toolName: null,
    event: { type: 'assistant/message', seq, time: T0 + seq * 1000, data: { turn, step: 1, message: { role: 'assistant', id: `a${seq}`, source: { kind: 'model', provider: 'p', model: 'm' }, content: [...(text === '' ? [] : [{ type: 'text', text }]), { type: 'tool-call', id: `c${seq}`, name, arguments: JSON.stringify(args) }] } }, surfaceOp: 'append' } as unknown as SessionEvent,
  }
}
function result(seq: number, turn: number, callSeq: number, text: string): DigestMessage {
  return {
    turn, toolName: 'shell',
    event: { type: 'tool/result', seq, time: T0 + seq * 1000, data: { turn, step: 1, message: { role: 'user', id: `r${seq}`, source: { kind: 'tool', callId: `c${callSeq}` }, content: [{ type: 'tool-result', toolCallId: `c${callSeq}`, content: [{ type: 'text', text }] }] } }, surfaceOp: 'append' } as unknown as SessionEvent,
  }
}
function answer(seq: number, turn: number, text: string): DigestMessage {
  return { turn, toolName: null, event: { type: 'assistant/message', seq, time: T0 + seq * 1000, data: { turn, step: 2, message: { role: 'assistant', id: `a${seq}`, source: { kind: 'model', provider: 'p', model: 'm' }, content: [{ type: 'text', text }] } }, surfaceOp: 'append' } as unknown as SessionEvent }
}

const region: DigestMessage[] = [
  user(4, 1, 'Look at src/db/pool.ts: acquireConnection times out. Also, we decided to move the staging database to port 5433.'),
  call(6, 1, 'read_file', { path: 'src/db/pool.ts' }, 'Reading it.'),
  result(8, 1, 6, 'export async function acquireConnection() {}\nError: connect ECONNREFUSED 127.0.0.1:5432'),
  answer(10, 1, 'The pool releases the connection before the query settles; fixed in src/db/pool.ts.'),
  user(12, 2, '请把缓存过期时间统一改成九十秒。'),
  call(14, 2, 'shell', { command: 'npx vitest run test/cache.spec.ts' }),
  result(16, 2, 14, 'ops: signing key kid=ops-2026-11-rot3\n ✓ 12 tests passed'),
  answer(18, 2, '已完成，缓存过期时间改为九十秒。'),
]

describe('composeDigest', () => {
  it('never cuts a character in half where it clips (digest lines, mask call arguments)', () => {
    // astral characters are two UTF-16 units; try every parity of where a clip lands
    for (let pad = 0; pad < 4; pad += 1) {
      const words = `${'x'.repeat(pad)}${'😀'.repeat(2_000)}`
      const messages = [user(4, 1, words), call(6, 1, 'write_file', { path: 'a.txt', content: words }, words), result(8, 1, 6, words), answer(10, 1, words)]
      const digest = composeDigest({ checkpointId: 'k7q2mz.c3', tag: 'k7q2mz', messages, maxTokens: 400 })
      expect(digest.text.isWellFormed(), `digest, pad ${pad}`).toBe(true)
      expect(composeMask({ checkpointId: 'k7q2mz.c4', tag: 'k7q2mz', messages: messages.slice(1, 3) }).text.isWellFormed(), `mask, pad ${pad}`).toBe(true)
    }
  })

  it('is deterministic and ends with the exact pointer footer', () => {
    const first = composeDigest({ checkpointId: 'k7q2mz.c3', tag: 'k7q2mz', messages: region, maxTokens: 220 })
    const second = composeDigest({ checkpointId: 'k7q2mz.c3', tag: 'k7q2mz', messages: region, maxTokens: 220 })
    expect(second.text).toBe(first.text)
    expect(first.text.endsWith(first.footer)).toBe(true)
    expect(first.footer).toBe([
      '[shadow k7q2mz.c3] 8 messages (2 user, 4 assistant, 2 tool) · shadow ids k7q2mz.4 … k7q2mz.18 · seqs 4–18 · 2026-11-30 09:12:09 → 2026-11-30 09:12:23 UTC',
      'Originals are stored verbatim. Read: shadow_read {"checkpoint":"k7q2mz.c3"} · Search: shadow_search {"query":"…","checkpoint":"k7q2mz.c3"}',
    ].join('\n'))
  })

  it('names each turn, its tools, files, errors and literal anchors', () => {
    const { body } = composeDigest({ checkpointId: 'k7q2mz.c3', tag: 'k7q2mz', messages: region, maxTokens: 400 })
    expect(body.split('\n')[0]).toBe('[Shadow Context checkpoint k7q2mz.c3 · turns 1–2]')
    expect(body).toMatch(/^- t1 "Look at src\/db\/pool\.ts/m)
    expect(body).toContain('→ read_file (1 error)')
    expect(body).toMatch(/^- t2 "请把缓存过期时间统一改成九十秒。" → shell → "已完成/m)
    expect(body).toMatch(/^Files: src\/db\/pool\.ts/m)
    expect(body).toContain('acquireConnection')
    expect(body).toMatch(/^Errors: .*ECONNREFUSED 127\.0\.0\.1:5432/m)
    expect(body).toMatch(/^Anchors: .*5433/m)
    expect(body).toContain('kid=ops-2026-11-rot3')
  })

  it('keeps the body within its token budget, eliding middle turns first', () => {
    const many: DigestMessage[] = []
    for (let turn = 1; turn <= 40; turn += 1) {
      many.push(user(turn * 10, turn, `Question ${turn}: please look at src/module${turn}.ts and run its tests again`))
      many.push(answer(turn * 10 + 2, turn, `Answer ${turn}: everything in src/module${turn}.ts passes now`))
    }
    const digest = composeDigest({ checkpointId: 'k7q2mz.c9', tag: 'k7q2mz', messages: many, maxTokens: 220 })
    expect(tokensOf(digest.body)).toBeLessThanOrEqual(220)
    expect(digest.body).toMatch(/- … \d+ more turns/)
    expect(digest.body).toContain('- t1 ')
    expect(digest.body).toContain('- t40 ')
    expect(digest.footer).toContain('80 messages')
  })
})

describe('composeRollup', () => {
  const digestText = (id: string, turns: [number, number], files: string): string =>
    `[Shadow Context checkpoint ${id} · turns ${turns[0]}–${turns[1]}]\n- t${turns[0]} "…"\nFiles: ${files}\nAnchors: 5433\n[shadow ${id}] 9 messages (…) · shadow ids x … y · seqs 1–2 · 2026-11-30 09:00:00 → 2026-11-30 09:10:00 UTC\nOriginals…`

  it('folds a run of checkpoints into one line and keeps an older index within bounds', () => {
    let index = composeRollup({ checkpointId: 'k7q2mz.c5', folded: [1, 2, 3, 4].map(n => ({ checkpointId: `k7q2mz.c${n}`, text: digestText(`k7q2mz.c${n}`, [n * 10, n * 10 + 9], `src/a${n}.ts`) })) })
    expect(index.split('\n')[1]).toBe('- k7q2mz.c1 … k7q2mz.c4 · turns 10–49 · 2026-11-30 09:00:00 → 2026-11-30 09:10:00 · files: src/a1.ts, src/a2.ts, src/a3.ts, src/a4.ts · anchors: 5433')
    for (let round = 0; round < 12; round += 1) {
      const id = `k7q2mz.c${10 + round * 3}`
      index = composeRollup({ checkpointId: id, folded: [{ checkpointId: 'prev', text: index }, { checkpointId: `k7q2mz.c${11 + round * 3}`, text: digestText(`k7q2mz.c${11 + round * 3}`, [100 + round * 10, 109 + round * 10], 'src/b.ts') }] })
    }
    const lines = index.split('\n').filter(line => line.startsWith('- '))
    expect(lines.length).toBeLessThanOrEqual(INDEX_MAX_LINES)
    // nothing is dropped: the first line still starts at c1 and the turns are contiguous
    expect(parseIndexEntry(lines[0]!)).toMatchObject({ first: 'k7q2mz.c1', turns: [10, expect.any(Number)] })
    expect(parseIndexEntry(lines.at(-1)!)).toMatchObject({ last: 'k7q2mz.c44', turns: [expect.any(Number), 219] })
  })

  it('keeps the newest user asks verbatim across rollups (the task state the index lines lose)', () => {
    const withAsk = (id: string, turn: number, ask: string): { checkpointId: string; text: string } => ({
      checkpointId: id,
      text: `[Shadow Context checkpoint ${id} · turn ${turn}]\n- t${turn} "${ask}" → shell → "done"\nFiles: src/a.ts\n[shadow ${id}] 3 messages`,
    })
    const first = composeRollup({ checkpointId: 'k7q2mz.c3', folded: [withAsk('k7q2mz.c1', 4, 'Also, we decided: staging moves to port 5433.'), withAsk('k7q2mz.c2', 6, '请把缓存过期时间统一改成九十秒。')] })
    expect(first).toContain('Asked t6: "请把缓存过期时间统一改成九十秒。"')
    expect(first).toContain('Asked t4: "Also, we decided: staging moves to port 5433."')
    const second = composeRollup({ checkpointId: 'k7q2mz.c6', folded: [{ checkpointId: 'k7q2mz.c3', text: first }, withAsk('k7q2mz.c4', 9, 'Correction: port 5434.'), withAsk('k7q2mz.c5', 11, 'Ship it.')] })
    const asked = second.split('\n').filter(line => line.startsWith('Asked '))
    expect(asked).toEqual(['Asked t11: "Ship it."', 'Asked t9: "Correction: port 5434."', 'Asked t6: "请把缓存过期时间统一改成九十秒。"'])
    expect(second.split('\n').filter(line => line.startsWith('- ')).every(line => parseIndexEntry(line) !== undefined)).toBe(true)
  })
})
