import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ShadowMessageInput } from '../src/index.ts'

export function tempDir(prefix = 'shadow-store-'): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

let clock = Date.UTC(2026, 10, 1, 9, 0, 0)

export function message(sessionId: string, seq: number, text: string, extra: Partial<ShadowMessageInput> = {}): ShadowMessageInput {
  clock += 1_000
  return {
    sessionId,
    seq,
    eventType: 'user/message',
    role: 'user',
    sourceKind: 'user',
    turn: 1,
    step: 1,
    toolName: null,
    callId: null,
    time: clock,
    eventJson: JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text }] } }),
    text,
    tokens: Math.ceil(text.length / 4),
    ...extra,
  }
}
