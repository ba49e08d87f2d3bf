/**
 * renderTranscript's pages at any budget, down to the 1-token pages `read()`'s retry asks for:
 * every character shown once across the pages, no notice of a negative remainder, no cursor
 * past the end of a message.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ShadowMessage } from '@dsh-shadow/store'
import { renderTranscript } from '../src/recall/format.ts'

function message(seq: number, text: string): ShadowMessage {
  return { sessionId: 's', seq, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: null, step: null, toolName: null, callId: null, time: 0, eventJson: '{}', text, tokens: 1, shadowId: `sh_t_${seq}`, hash: '', elidedBy: null, expiredAt: null }
}

/** The text each page shows of each message, pages read until the end. */
function readAll(messages: readonly ShadowMessage[], budget: number): string[] {
  const shown = messages.map(() => '')
  let index = 0
  let offset = 0
  for (let pages = 0; pages < 10_000; pages += 1) {
    const page = renderTranscript(messages, index, offset, budget, { chars: 0, take: 2 })
    expect(page.text).not.toMatch(/\[… -\d+ more characters/)
    for (const part of page.text.split(/\n(?=── )/)) {
      const id = /^── (sh_t_\d+)/.exec(part)![1]!
      const at = messages.findIndex(candidate => candidate.shadowId === id)
      const body = part.slice(part.indexOf('\n') + 1).replace(/\n\[… \d+ more characters of sh_t_\d+\]$/, '')
      shown[at] += body
    }
    if (page.nextIndex === null) return shown
    expect(page.nextOffset).toBeLessThan(messages[page.nextIndex]!.text.length || 1)
    index = page.nextIndex
    offset = page.nextOffset
  }
  throw new Error('the pages never reached the end')
}

describe('renderTranscript', () => {
  it('shows the last character of a message whole at a page with room for less than two', () => {
    const page = renderTranscript([message(0, 'ab')], 0, 1, 1, { chars: 0, take: 2 })
    expect(page.text).not.toContain('-1 more characters')
    expect(page.text.endsWith('\nb')).toBe(true)
    expect(page).toMatchObject({ nextIndex: null, nextOffset: 0 })
  })

  it('pages through any messages at any budget, each character once', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '😀', '\n', ' '), maxLength: 40 })
    fc.assert(fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 40 }), (texts, budget) => {
      const messages = texts.map((body, seq) => message(seq, body))
      expect(readAll(messages, budget)).toEqual(texts)
    }), { numRuns: 1_000 })
  })
})
