/**
 * bench/fork-depth.ts — what a deep fork chain costs its newest session: a chain of forks each
 * holding one row (fork i forked from i-1 at seq i), then the newest session's lineage, searches,
 * reads, counts, the write-ahead check and `recordCheckpoint` over 1,000 seqs, a checkpoint's read
 * and lookups, each timed once.
 *
 *   npm run bench:fork-depth -- <sqlite|postgres> <depth>...   (one RESULT line per depth, times in ms)
 *
 * PostgreSQL runs on a real server started here (loopback, temp data dir); SQLite in a temp dir.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShadowStore } from '../packages/store/src/index.ts'
import { startPostgres } from '../packages/testing/src/postgres.ts'

const [kind, ...depths] = process.argv.slice(2)
const server = kind === 'postgres' ? await startPostgres() : undefined
const dir = mkdtempSync(join(tmpdir(), 'fork-depth-'))
let clock = Date.UTC(2026, 10, 1)
const row = (sessionId: string, seq: number, text: string) => ({
  sessionId, seq, eventType: 'user/message' as const, role: 'user' as const, sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null,
  time: (clock += 1000), eventJson: JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text }] } }), text, tokens: 4,
})
const results: string[] = []
async function time<T>(label: string, run: () => Promise<T>, check?: (value: T) => unknown): Promise<void> {
  const start = performance.now()
  const value = await run()
  const ms = performance.now() - start
  results.push(`${label.replace(/[^a-z0-9]+/gi, '_').replace(/^_+|_+$/g, '')}=${ms.toFixed(1)}`)
  console.log(`  ${label.padEnd(34)} ${ms.toFixed(1).padStart(9)} ms ${check === undefined ? '' : JSON.stringify(check(value))}`)
}
try {
  for (const depth of depths.map(Number)) {
    const location = server === undefined ? join(dir, `d${depth}.db`) : server.storeDsn()
    const store = await ShadowStore.open(location)
    const t0 = performance.now()
    for (let index = 0; index < depth; index += 1) {
      await store.registerSession({ sessionId: `f${index}`, ...(index === 0 ? {} : { parentSessionId: `f${index - 1}`, forkSeq: index }) })
    }
    for (let start = 0; start < depth; start += 1000) {
      await store.append(Array.from({ length: Math.min(1000, depth - start) }, (_, o) => row(`f${start + o}`, start + o, `depth row ${start + o} ${start + o === 3 ? 'quartzite' : 'plain words'}`)))
    }
    const leaf = `f${depth - 1}`
    console.log(`${kind} depth ${depth} (built in ${((performance.now() - t0) / 1000).toFixed(1)} s)`)
    const seqs = Array.from({ length: Math.min(1000, depth) }, (_, i) => i)
    const hashes = new Map((await store.read({ sessionId: leaf }, { limit: 100_000 })).map(m => [m.seq, m.hash]))
    await time('lineage', () => store.lineage(leaf), v => v.length)
    await time('search (rare word)', () => store.search('quartzite', { sessionId: leaf }), v => v.hits.length)
    await time('search (common word)', () => store.search('plain', { sessionId: leaf }), v => v.hits.length)
    await time('read whole', () => store.read({ sessionId: leaf }, { limit: 100_000 }), v => v.length)
    await time('read window 100..150', () => store.read({ sessionId: leaf }, { fromSeq: 100, toSeq: 150 }), v => v.length)
    await time('read newest 20', () => store.read({ sessionId: leaf }, { limit: 20, descending: true }), v => v.length)
    await time('count', () => store.count({ sessionId: leaf }))
    await time('count from seq 1', () => store.count({ sessionId: leaf }, { fromSeq: 1 }))
    await time(`confirm ${seqs.length} seqs`, () => store.confirm(leaf, seqs.map(seq => ({ seq, hash: hashes.get(seq)! }))), v => [v.missing.length, v.mismatched.length])
    await time(`recordCheckpoint ${seqs.length} seqs`, () => store.recordCheckpoint({ checkpointId: `${leaf}.c1`, sessionId: leaf, engine: 'test', status: 'committed', shadowedSeqs: seqs, createdAt: clock, replaceSeq: depth }), v => v.messageCount)
    await time('read elidedBy', () => store.read({ sessionId: leaf }, { elidedBy: `${leaf}.c1`, limit: 100_000 }), v => v.length)
    await time('lookupAllInLineage 100', async () => store.lookupAllInLineage(await store.lineage(leaf), seqs.slice(0, 100)), v => v.length)
    await store.close()
    console.log(`RESULT fork-depth backend=${kind} depth=${depth} ${results.splice(0).join(' ')}`)
  }
} finally {
  server?.stop()
  rmSync(dir, { recursive: true, force: true })
}
