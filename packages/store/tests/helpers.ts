import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import v8 from 'node:v8'
import vm from 'node:vm'
import { ShadowStore, type ShadowMessageInput } from '../src/index.ts'

/**
 * SQL that takes a SQLite store made by this code back to schema v6, for tests that simulate an
 * older file from a current one: v7's revision columns and their index go.
 */
export const SQLITE_BEFORE_V7 = `
  DROP INDEX messages_rev; ALTER TABLE messages DROP COLUMN rev;
  ALTER TABLE sessions DROP COLUMN revision; ALTER TABLE sessions DROP COLUMN removed_rev;`

export function tempDir(prefix = 'shadow-store-'): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

let collect: (() => void) | undefined

/** The heap (with array buffers) after a full collection. */
export function heap(): number {
  if (collect === undefined) {
    v8.setFlagsFromString('--expose-gc')
    collect = vm.runInNewContext('gc') as () => void
  }
  collect()
  collect()
  const used = process.memoryUsage()
  return used.heapUsed + used.arrayBuffers
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

/** A store at `location` with `rows` rows of one session, each saying `marker<seq>` and words every row shares. */
export async function seedMarkers(location: string, sessionId: string, rows: number): Promise<void> {
  const store = await ShadowStore.open(location)
  for (let start = 0; start < rows; start += 1_000) {
    await store.append(Array.from({ length: Math.min(1_000, rows - start) }, (_, index) => message(sessionId, start + index, `row marker${start + index} common words here`)))
  }
  await store.close()
}

/** How many of `count` rows sampled across a seedMarkers session a search for their own marker finds. */
export async function markersFound(store: ShadowStore, sessionId: string, rows: number, count: number): Promise<number> {
  let found = 0
  for (let index = 0; index < count; index += 1) {
    const seq = Math.floor((index * rows) / count)
    if ((await store.search(`marker${seq}`, { sessionId })).hits.some(hit => hit.message.seq === seq)) found += 1
  }
  return found
}

/** How many id lists of the index lists a store has read since (a search they answered reads some; a resident one none). */
export function listReads(store: ShadowStore): () => number {
  const backend = store.backend as unknown as { listIds: (...args: never[]) => unknown }
  const listIds = backend.listIds.bind(store.backend)
  let listed = 0
  backend.listIds = (...args: never[]) => {
    listed += 1
    return listIds(...args)
  }
  return () => listed
}
