import { charBoundary } from '@dsh-shadow/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { composeDigest, type DigestMessage } from '../src/engine/digest.ts'
import { composeMask } from '../src/engine/mask.ts'
import { clip } from '../src/text.ts'

const T0 = Date.UTC(2026, 10, 30, 9, 12, 5)

function output(text: string): DigestMessage[] {
  const call = { type: 'assistant/message', seq: 1, time: T0, data: { turn: 1, step: 1, message: { role: 'assistant', id: 'a1', source: { kind: 'model', provider: 'p', model: 'm' }, content: [{ type: 'tool-call', id: 'c1', name: 'shell', arguments: JSON.stringify({ command: text.slice(0, 4_000) }) }] } }, surfaceOp: 'append' }
  const result = { type: 'tool/result', seq: 2, time: T0 + 1000, data: { turn: 1, step: 1, message: { role: 'user', id: 'r1', source: { kind: 'tool', callId: 'c1' }, content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text }] }] } }, surfaceOp: 'append' }
  const user = { type: 'user/message', seq: 0, time: T0, data: { role: 'user', id: 'u0', content: [{ type: 'text', text: text.slice(0, 20_000) }], source: { kind: 'user' } }, surfaceOp: 'append' }
  return [user, call, result].map(event => ({ turn: 1, toolName: event.type === 'tool/result' ? 'shell' : null, event: event as unknown as SessionEvent }))
}

// Shapes that made the extraction patterns rescan the rest of the text from every start
// (a 150 KB output took 22 s, 300 KB 90 s before the patterns were bounded).
const SHAPES: Record<string, string> = {
  'dotted run (a.)': 'a.',
  'slashed run (a/)': 'a/',
  'dashed digits (a-1)': 'a-1',
  'upper run (A)': 'A',
  'camel run (aA)': 'aA',
  'snake run (a_)': 'a_',
  'digit dots (1.)': '1.',
  'assignments (a=)': 'a=',
  'header run (X-a)': 'X-a',
  'error words (AError)': 'AErro',
  'digits (9)': '9',
}

describe('composeDigest on adversarial tool output', () => {
  for (const [name, unit] of Object.entries(SHAPES)) {
    it(`digests 400 KB of ${name} without rescanning the text from every start`, () => {
      const text = unit.repeat(Math.ceil(400_000 / unit.length))
      const started = performance.now()
      const digest = composeDigest({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages: output(text), maxTokens: 220 })
      const ms = performance.now() - started
      // generous guard against super-linear work: linear patterns take well under 100 ms here
      expect(ms).toBeLessThan(2_000)
      expect(digest.text).toContain('shadow_read')
    })
  }
})

describe('composeDigest on a huge tool output', () => {
  it('reads the head and the tail of a message, not all 20 MB of it (a 50 MB output took 3.5 s and 0.5 GB on the pass)', () => {
    const head = 'Starting the export of src/export/runner.ts with batchSize=500\n'
    const tail = '\nTypeError: cannot read properties of undefined (reading exportRows) at src/export/writer.ts:41\n'
    // an error deep in the middle of 20 MB of progress lines: it is past the head and before the tail
    const filler = 'exported another chunk of rows, all fine\n'.repeat(Math.ceil(10_000_000 / 41))
    const middle = `${filler}QuotaExceededError: middleOnlyRowBuffer is full\n${filler}`
    const digest = composeDigest({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages: output(`${head}${middle}${tail}`), maxTokens: 220 })
    expect(digest.text).toContain('src/export/runner.ts')
    expect(digest.text).toContain('src/export/writer.ts')
    expect(digest.text).toContain('TypeError')
    // (the user's ask quotes the output's first characters; the extracted lines must not)
    const extracted = digest.text.split('\n').filter(line => /^(Files|Identifiers|Errors|Anchors): /.test(line)).join('\n')
    expect(extracted).toContain('exportRows')
    expect(extracted).not.toContain('middleOnlyRowBuffer')
  })
})

describe('clip on huge text', () => {
  const reference = (text: string, max: number): string => {
    const flat = text.replace(/\s+/g, ' ').trim()
    return flat.length <= max ? flat : `${flat.slice(0, charBoundary(flat, Math.max(1, max - 1)))}…`
  }

  it('cuts exactly as flattening the whole text would', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\n', '\t', '😀', '中'), maxLength: 3_000 }), fc.integer({ min: 1, max: 400 }), (text, max) => {
      expect(clip(text, max)).toBe(reference(text, max))
    }), { numRuns: 2_000 })
  })

  it('never puts half a surrogate pair into a digest or a stub, wherever a line is cut (an Errors line ended in a lone \\ud83d)', () => {
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
    const units = ['ECONNREFUSED ', 'TypeError: ', 'failed: ', 'x', ' ', '\n', '😀', 'e\u0301', '👩\u200d👩\u200d👧', '中', 'src/a.ts ', 'key=v1 ']
    fc.assert(fc.property(fc.array(fc.constantFrom(...units), { maxLength: 400 }), pieces => {
      const messages = output(pieces.join(''))
      for (const text of [composeDigest({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages, maxTokens: 220 }).text, composeMask({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages }).text]) {
        expect(lone.test(text), JSON.stringify(text)).toBe(false)
      }
    }), { numRuns: 1_500 })
    // the shape found: an error word, then astral characters where the pattern's 60-unit tail ends
    for (let pad = 40; pad < 70; pad += 1) {
      const text = composeDigest({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages: output(`ECONNREFUSED ${'x'.repeat(pad)}${'😀'.repeat(8)}`), maxTokens: 220 }).text
      expect(lone.test(text), `pad ${pad}`).toBe(false)
    }
  })

  it('quotes a 40 MB ask and answer without flattening them whole (a 20 MB one took 2.6 s a digest)', () => {
    const text = 'word '.repeat(8_000_000)
    const user = { type: 'user/message', seq: 0, time: T0, data: { role: 'user', id: 'u0', content: [{ type: 'text', text }], source: { kind: 'user' } }, surfaceOp: 'append' }
    const answer = { type: 'assistant/message', seq: 1, time: T0, data: { turn: 1, step: 1, message: { role: 'assistant', id: 'a1', source: { kind: 'model', provider: 'p', model: 'm' }, content: [{ type: 'text', text }, { type: 'tool-call', id: 'c1', name: 'write_file', arguments: JSON.stringify({ content: text }) }] } }, surfaceOp: 'append' }
    const result = { type: 'tool/result', seq: 2, time: T0 + 1000, data: { turn: 1, step: 1, message: { role: 'user', id: 'r1', source: { kind: 'tool', callId: 'c1' }, content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'wrote it' }] }] } }, surfaceOp: 'append' }
    const messages = [user, answer, result].map(event => ({ turn: 1, toolName: null, event: event as unknown as SessionEvent }))
    const started = performance.now()
    const digest = composeDigest({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages, maxTokens: 220 })
    const mask = composeMask({ checkpointId: 'k7q2mz.c1', tag: 'k7q2mz', messages })
    // generous guard against rewriting the whole text per quote (it took seconds; a bounded clip takes milliseconds)
    expect(performance.now() - started).toBeLessThan(1_500)
    expect(digest.text).toContain('"word word')
    expect(mask.text).toContain('- write_file {"content":"word word')
  })
})
