/**
 * bench/fork-depth.ts — what a deep fork chain costs its newest session, against one session that
 * holds the same rows without forks, in one run: a chain of forks each holding one row (fork i
 * forked from i-1 at seq i) beside a flat session of as many rows with the same texts; then on each
 * the lineage, searches, reads, counts, the write-ahead check and `recordCheckpoint` over 1,000
 * seqs, a checkpoint's read and lookups (each read-only operation the median of 3 runs; the
 * checkpoint is recorded once).
 *
 *   npm run bench:fork-depth -- [sqlite|postgres] [depth...]   (default: sqlite 1000 5000)
 *
 * Prints a table per depth (ms, chain / flat) and ends with one line:
 * RESULT fork-depth backend=… depth=<largest> worst_op=… worst_ms=… worst_vs_flat=… growth_max=…
 * (growth_max: the largest ratio of an operation's time at the largest depth to its time at the
 * smallest, over the chain's operations). PostgreSQL runs on a real server started here (loopback,
 * temp data dir); SQLite in a temp dir.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShadowStore } from '../packages/store/src/index.ts'
import { startPostgres } from '../packages/testing/src/postgres.ts'
import { median, printTable, result } from './report.ts'

const args = process.argv.slice(2)
const kind = args[0] ?? 'sqlite'
if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`backend must be sqlite or postgres, not ${kind}`)
const depths = (args.length > 1 ? args.slice(1).map(Number) : [1000, 5000]).toSorted((a, b) => a - b)
if (depths.some(depth => !Number.isInteger(depth) || depth < 2)) throw new Error('each depth must be an integer of at least 2')
const RUNS = 3
const loads = [loadavg()[0]!]
const server = kind === 'postgres' ? await startPostgres() : undefined
const dir = mkdtempSync(join(tmpdir(), 'fork-depth-'))
let clock = Date.UTC(2026, 10, 1)
const row = (sessionId: string, seq: number, text: string) => ({
  sessionId, seq, eventType: 'user/message' as const, role: 'user' as const, sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null,
  time: (clock += 1000), eventJson: JSON.stringify({ type: 'user/message', seq, data: { content: [{ type: 'text', text }] } }), text, tokens: 4,
})
const textAt = (seq: number): string => `depth row ${seq} ${seq === 3 ? 'quartzite' : 'plain words'}`

/** Each operation's time on one session (ms): read-only ones the median of RUNS. */
async function measure(store: ShadowStore, sessionId: string, depth: number): Promise<Map<string, number>> {
  const times = new Map<string, number>()
  const time = async (label: string, run: () => Promise<unknown>, runs = RUNS): Promise<void> => {
    const samples: number[] = []
    for (let index = 0; index < runs; index += 1) {
      const start = performance.now()
      await run()
      samples.push(performance.now() - start)
    }
    times.set(label, median(samples))
  }
  const seqs = Array.from({ length: Math.min(1000, depth) }, (_, i) => i)
  const hashes = new Map((await store.read({ sessionId }, { limit: 100_000 })).map(m => [m.seq, m.hash]))
  const lineage = await store.lineage(sessionId)
  await time('lineage', () => store.lineage(sessionId))
  await time('search_rare', () => store.search('quartzite', { sessionId }))
  await time('search_common', () => store.search('plain', { sessionId }))
  await time('read_whole', () => store.read({ sessionId }, { limit: 100_000 }))
  await time('read_window', () => store.read({ sessionId }, { fromSeq: 100, toSeq: 150 }))
  await time('read_newest_20', () => store.read({ sessionId }, { limit: 20, descending: true }))
  await time('count', () => store.count({ sessionId }))
  await time('count_from_seq_1', () => store.count({ sessionId }, { fromSeq: 1 }))
  await time('confirm_1000', () => store.confirm(sessionId, seqs.map(seq => ({ seq, hash: hashes.get(seq)! }))))
  await time('record_checkpoint_1000', () => store.recordCheckpoint({ checkpointId: `${sessionId}.c1`, sessionId, engine: 'test', status: 'committed', shadowedSeqs: seqs, createdAt: clock, replaceSeq: depth }), 1)
  await time('read_elided_by', () => store.read({ sessionId }, { elidedBy: `${sessionId}.c1`, limit: 100_000 }))
  await time('lookup_all_100', () => store.lookupAllInLineage(lineage, seqs.slice(0, 100)))
  return times
}

const chains = new Map<number, Map<string, number>>()
let worst = { op: '', ms: 0, vsFlat: 0 }
try {
  for (const depth of depths) {
    const store = await ShadowStore.open(server === undefined ? join(dir, `d${depth}.db`) : server.storeDsn())
    const t0 = performance.now()
    const leaf = `d${depth}f${depth - 1}`
    const flat = `d${depth}flat`
    for (let index = 0; index < depth; index += 1) {
      await store.registerSession({ sessionId: `d${depth}f${index}`, ...(index === 0 ? {} : { parentSessionId: `d${depth}f${index - 1}`, forkSeq: index }) })
    }
    await store.registerSession({ sessionId: flat })
    for (let start = 0; start < depth; start += 1000) {
      const seqs = Array.from({ length: Math.min(1000, depth - start) }, (_, o) => start + o)
      await store.append(seqs.map(seq => row(`d${depth}f${seq}`, seq, textAt(seq))))
      await store.append(seqs.map(seq => row(flat, seq, textAt(seq))))
    }
    const built = (performance.now() - t0) / 1000
    const chain = await measure(store, leaf, depth)
    const alone = await measure(store, flat, depth)
    await store.close()
    chains.set(depth, chain)
    printTable(`${kind}: a chain ${depth} forks deep (one row each) vs one session of ${depth} rows (built in ${built.toFixed(1)} s)`, ['operation', 'chain ms', 'flat ms', 'chain / flat'],
      [...chain].map(([op, ms]) => [op, ms, alone.get(op)!, `${(ms / alone.get(op)!).toFixed(1)}x`]))
    if (depth === depths.at(-1)) {
      for (const [op, ms] of chain) if (ms > worst.ms) worst = { op, ms, vsFlat: ms / alone.get(op)! }
    }
  }
} finally {
  server?.stop()
  rmSync(dir, { recursive: true, force: true })
}
const smallest = chains.get(depths[0]!)!
const largest = chains.get(depths.at(-1)!)!
const growth = Math.max(...[...largest].map(([op, ms]) => ms / smallest.get(op)!))
loads.push(loadavg()[0]!)
console.log(`conditions: Node ${process.versions.node}, ${cpus().length} cores, ${kind}; load average (1 min) ${loads[0]!.toFixed(1)} at the start, ${loads[1]!.toFixed(1)} at the end; growth over depths ${depths.join(' / ')}`)
result('fork-depth', { backend: kind, depth: depths.at(-1)!, worst_op: worst.op, worst_ms: worst.ms.toFixed(1), worst_vs_flat: worst.vsFlat.toFixed(1), growth_max: growth.toFixed(2) })
