/**
 * bench:scale — the store at scale, PostgreSQL and SQLite side by side in one run.
 *
 * One stream of the shared synthetic corpus (bench/corpus.ts, sessions of 10k messages) is loaded
 * through the real store path (`store.append`, analyzer included) into a PostgreSQL store on a
 * real server started here (loopback, temp data dir, fsync on) and into a SQLite file, batch by
 * batch, up to the first size (SQLite: 1M). PostgreSQL loads in bulk mode (its two text indexes
 * dropped during the load and built once after it, `PostgresBackend.beginBulkLoad`); sizes past
 * what was generated (BENCH_SCALE_SIZES, default 1M,3M,10M) are reached by copying the generated
 * sessions server-side into new sessions with later times (`BulkLoad.copySession`: the same text,
 * so every term keeps its rate; a planted needle appears once per copy). At each size, per backend:
 *  - search latency p50/p99 per query class (store-wide classes search every session, the
 *    session class one session and its lineage — what the model's tools do by default) in three
 *    conditions: idle, while 1 writer process appends, while 4 writer processes append (the same
 *    number of new messages in total; writers are separate OS processes, as hosts would be);
 *  - ingest rate of the bulk load (one process) and of the 1- and 4-writer phases;
 *  - lost: messages the writers were sent that the store does not hold (stored count vs expected);
 *  - bytes per message (database size incl. indexes / messages) and per text byte.
 * Before each size it checks free disk (estimated bytes/msg from what is already stored, within
 * BENCH_SCALE_DISK_GB, default 35) and stops at the largest size that fits, saying so; so does a
 * size that would start after BENCH_SCALE_DEADLINE_MIN minutes (default none). Sizes are
 * cumulative: the 3M store is the 1M one grown.
 *
 * Ends with `RESULT scale backend=postgres messages=<largest PG size> p99_ms=<worst class p99 with 4
 * writers> writers=4 lost=<n> bytes_per_msg=<n>`.
 *
 * Env: BENCH_SCALE_SIZES, BENCH_SCALE_GENERATE (messages generated through the analyzer, default
 * the smallest size), BENCH_SCALE_SQLITE (SQLite size, default 1000000; 0 skips it),
 * BENCH_SCALE_EXTRA (messages the writers add per phase, default 20000), BENCH_SCALE_REPS (idle
 * runs per query, default 5).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PostgresBackend, ShadowStore, SqliteBackend, type SearchOptions, type ShadowMessageInput } from '@dsh-shadow/store'
import { startPostgres } from '@dsh-shadow/testing'
import { CLASSES, Generator, SESSION_SIZE, sessionId } from './corpus.ts'
import { percentile, printTable, result } from './report.ts'

const started = performance.now()
const PG_SIZES = (process.env['BENCH_SCALE_SIZES'] ?? '1000000,3000000,10000000').split(',').map(Number).filter(size => size > 0).toSorted((a, b) => a - b)
const SQLITE_SIZE = Number(process.env['BENCH_SCALE_SQLITE'] ?? 1_000_000)
const EXTRA = Number(process.env['BENCH_SCALE_EXTRA'] ?? 20_000)
const REPS = Math.max(3, Number(process.env['BENCH_SCALE_REPS'] ?? 5))
const GENERATE = Number(process.env['BENCH_SCALE_GENERATE'] ?? PG_SIZES[0] ?? 1_000_000)
const DISK_BUDGET = Number(process.env['BENCH_SCALE_DISK_GB'] ?? 35) * 1e9
const DEADLINE_MIN = Number(process.env['BENCH_SCALE_DEADLINE_MIN'] ?? Number.POSITIVE_INFINITY)
const BATCH = 2_000
const LIMIT = 10
/** Before anything is stored: a generous guess (PostgreSQL with WAL), replaced by the measured figure. */
const GUESS_BYTES_PER_MSG = 8_000
const WRITER = fileURLToPath(new URL('./scale-writer.ts', import.meta.url))

const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'))
const server = await startPostgres({ durable: true, settings: { shared_buffers: '512MB', max_wal_size: '4GB', checkpoint_timeout: '15min' } })
const pg = await ShadowStore.open(server.storeDsn('scale'))
const lite = SQLITE_SIZE > 0 ? await ShadowStore.open(join(dir, 'scale.db')) : undefined
const targets = [{ name: 'postgres', store: pg, location: server.storeDsn('scale') }, ...(lite === undefined ? [] : [{ name: 'sqlite', store: lite, location: join(dir, 'scale.db') }])]

/** What this run may still write: the disk's free space, within the budget (counting what the server already holds). */
function freeBytes(used = 0): number {
  const stats = statfsSync(tmpdir())
  return Math.min(stats.bavail * stats.bsize, DISK_BUDGET - used)
}

interface Samples { [cls: string]: number[] }

async function timeQuery(store: ShadowStore, cls: (typeof CLASSES)[number], query: string): Promise<number> {
  const options: SearchOptions = cls.session ? { sessionId: sessionId(0), limit: LIMIT } : { sessionId: sessionId(0), allSessions: true, limit: LIMIT }
  const begin = performance.now()
  await store.search(query, options)
  return performance.now() - begin
}

/** Every query of every class `reps` times (after one warm-up run each). */
async function idleSearches(store: ShadowStore): Promise<Samples> {
  const samples: Samples = {}
  for (const cls of CLASSES) {
    samples[cls.name] = []
    for (const query of cls.queries) {
      await timeQuery(store, cls, query)
      for (let rep = 0; rep < REPS; rep += 1) samples[cls.name]!.push(await timeQuery(store, cls, query))
    }
  }
  return samples
}

function writer(location: string, count: number, name: string): Promise<{ written: number; unchanged: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', WRITER, location, String(count), name], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', chunk => { stdout += String(chunk) })
    proc.stderr.on('data', chunk => { stderr += String(chunk) })
    proc.on('error', reject)
    proc.on('exit', code => code === 0 ? resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as { written: number; unchanged: number; ms: number }) : reject(new Error(`writer ${name} failed (${code}): ${stderr.slice(0, 2_000)}`)))
  })
}

/** `writers` processes add EXTRA messages in total while this process searches round-robin over the classes. */
async function writePhase(store: ShadowStore, location: string, writers: number, phase: string): Promise<{ samples: Samples; rate: number; sent: number; written: number }> {
  const samples: Samples = Object.fromEntries(CLASSES.map(cls => [cls.name, [] as number[]]))
  const begin = performance.now()
  const state = { running: true }
  const each = Math.floor(EXTRA / writers)
  const jobs = Promise.all(Array.from({ length: writers }, (_, index) => writer(location, each, `${phase}-w${index}`))).finally(() => { state.running = false })
  let turn = 0
  while (state.running) {
    // SQLite answers synchronously: give the event loop a turn, or the writers' exits are never seen
    await new Promise(resolve => setImmediate(resolve))
    const cls = CLASSES[turn % CLASSES.length]!
    samples[cls.name]!.push(await timeQuery(store, cls, cls.queries[Math.floor(turn / CLASSES.length) % cls.queries.length]!))
    turn += 1
  }
  const outcomes = await jobs
  const wall = performance.now() - begin
  return { samples, rate: (each * writers) / (wall / 1000), sent: each * writers, written: outcomes.reduce((sum, outcome) => sum + outcome.written, 0) }
}

// ---- run ------------------------------------------------------------------------------------------

const generator = new Generator()
let loaded = 0
const loadMs = new Map<string, number>(targets.map(target => [target.name, 0]))
const expected = new Map<string, number>(targets.map(target => [target.name, 0]))
const rows: Array<readonly unknown[]> = []
const ingestRows: Array<readonly unknown[]> = []
const worst: { p99: number; lost: number; bytesPerMsg: number; messages: number } = { p99: 0, lost: 0, bytesPerMsg: 0, messages: 0 }
const sizes = [...new Set([...PG_SIZES, ...(SQLITE_SIZE > 0 ? [SQLITE_SIZE] : [])])].toSorted((a, b) => a - b)
const notes: string[] = []
/** Sessions copied in round r are shifted r years later: newer than every generated one. */
const COPY_SHIFT_MS = 365 * 24 * 3_600_000
let indexMs = 0
let copiedMs = 0
console.log(`bench:scale: PostgreSQL sizes ${PG_SIZES.join(', ')}, SQLite ${SQLITE_SIZE || 'skipped'}; writers add ${EXTRA} messages per phase; ${REPS} idle runs per query; free disk ${(freeBytes() / 1e9).toFixed(1)} GB`)

for (const size of sizes) {
  const active = targets.filter(target => (target.name === 'postgres' ? PG_SIZES.includes(size) || PG_SIZES.some(big => big > size) : size <= SQLITE_SIZE))
  // disk: what the rows still to load will take at the measured bytes per message (or a guess), plus the writer phases
  let perMsg = 0
  for (const target of active) {
    const stats = await target.store.stats()
    perMsg += stats.messages > 10_000 ? stats.bytes / stats.messages * 1.5 : GUESS_BYTES_PER_MSG
  }
  const need = (size - loaded + 2 * EXTRA) * perMsg
  let used = 0
  for (const target of targets) used += (await target.store.stats()).bytes
  if (need > freeBytes(used) * 0.85) {
    notes.push(`size ${size}: needs ~${(need / 1e9).toFixed(1)} GB, ${(freeBytes(used) / 1e9).toFixed(1)} GB free within the ${DISK_BUDGET / 1e9} GB budget — not run; the largest size run is ${loaded}`)
    console.log(notes.at(-1))
    break
  }
  if ((performance.now() - started) / 60_000 > DEADLINE_MIN) {
    notes.push(`size ${size}: not started, the run is past its ${DEADLINE_MIN} min deadline; the largest size run is ${loaded}`)
    console.log(notes.at(-1))
    break
  }
  // generate up to `size` (at most GENERATE), one batch into each backend in turn; PostgreSQL in bulk mode
  const bulk = loaded < Math.min(size, GENERATE) && active.some(target => target.name === 'postgres') ? await (pg.backend as PostgresBackend).beginBulkLoad() : undefined
  while (loaded < Math.min(size, GENERATE)) {
    const batch: ShadowMessageInput[] = []
    for (let index = 0; index < BATCH && loaded < size; index += 1, loaded += 1) batch.push(generator.next())
    for (const target of active) {
      const begin = performance.now()
      await target.store.append(batch)
      loadMs.set(target.name, loadMs.get(target.name)! + performance.now() - begin)
      expected.set(target.name, expected.get(target.name)! + batch.length)
    }
    if (loaded % 100_000 === 0) console.log(`  loaded ${loaded} (${((performance.now() - started) / 60_000).toFixed(1)} min)`)
  }
  // past what was generated: copy generated sessions server-side into new ones (PostgreSQL only)
  const copying = loaded < size ? bulk ?? await (pg.backend as PostgresBackend).beginBulkLoad() : bulk
  const copyBegin = performance.now()
  for (let round = 1; loaded < size; round += 1) {
    const generated = Math.ceil(GENERATE / SESSION_SIZE)
    for (let source = 0; source < generated && loaded < size; source += 1) {
      const target = `${sessionId(source)}-copy${round}`
      await pg.registerSession({ sessionId: target })
      const copied = await copying!.copySession(sessionId(source), target, round * COPY_SHIFT_MS)
      loaded += copied
      expected.set('postgres', expected.get('postgres')! + copied)
    }
    console.log(`  copied up to ${loaded} (${((performance.now() - started) / 60_000).toFixed(1)} min)`)
  }
  const copyMs = performance.now() - copyBegin
  if (copying !== undefined) {
    const begin = performance.now()
    await copying.end()
    indexMs += performance.now() - begin
    copiedMs += copyMs
  }
  for (const target of active) {
    const begin = performance.now()
    if (target.name === 'postgres') await target.store.vacuum() // VACUUM ANALYZE: the planner's statistics
    else (target.store.backend as SqliteBackend).optimize()
    const maintenanceS = (performance.now() - begin) / 1000
    const idle = await idleSearches(target.store)
    const one = await writePhase(target.store, target.location, 1, `n${size}-one`)
    const four = await writePhase(target.store, target.location, 4, `n${size}-four`)
    expected.set(target.name, expected.get(target.name)! + one.sent + four.sent)
    const stats = await target.store.stats()
    const lost = expected.get(target.name)! - stats.messages
    const bytesPerMsg = stats.bytes / stats.messages
    const pgOnly = (value: string): string => (target.name === 'postgres' ? value : '-')
    ingestRows.push([target.name, size, (Math.min(size, GENERATE) / (loadMs.get(target.name)! / 1000)).toFixed(0), pgOnly((indexMs / 1000).toFixed(0)),
      pgOnly(copiedMs > 0 ? ((size - Math.min(size, GENERATE)) / (copiedMs / 1000)).toFixed(0) : '-'), maintenanceS.toFixed(1), one.rate.toFixed(0), four.rate.toFixed(0), lost, bytesPerMsg.toFixed(0), (stats.bytes / stats.textBytes).toFixed(2)])
    let fourP99 = 0
    for (const cls of CLASSES) {
      const cell = (samples: Samples): string => `${percentile(samples[cls.name]!, 0.5).toFixed(1)} / ${percentile(samples[cls.name]!, 0.99).toFixed(1)} (${samples[cls.name]!.length})`
      rows.push([target.name, size, `${cls.name}${cls.session ? ' (session)' : ''}`, cell(idle), cell(one.samples), cell(four.samples)])
      if (four.samples[cls.name]!.length > 0) fourP99 = Math.max(fourP99, percentile(four.samples[cls.name]!, 0.99))
    }
    if (target.name === 'postgres') Object.assign(worst, { p99: fourP99, lost, bytesPerMsg, messages: size })
    console.log(`  ${target.name} at ${size}: done (${((performance.now() - started) / 60_000).toFixed(1)} min)`)
  }
  if (loaded >= Math.max(...PG_SIZES)) break
}

printTable('ingest (generated: messages/s through store.append, one process, batches of 2000, PostgreSQL in bulk mode without its text indexes; index build: both text indexes built after the load (cumulative); copied: server-side session copies; phases: writer processes, batches of 500, searches running)',
  ['backend', 'messages', 'generated msg/s', 'index build s', 'copied msg/s', 'vacuum/optimize s', '1 writer msg/s', '4 writers msg/s', 'lost', 'bytes/msg', 'bytes/text byte'], ingestRows)
printTable(`search latency, ms: p50 / p99 (samples) per class; limit ${LIMIT}; store-wide classes search every session, session = one session of 10k; idle: ${REPS} runs per query after a warm-up; with writers: round-robin while they append ${EXTRA} messages`,
  ['backend', 'messages', 'class', 'idle', '1 writer', '4 writers'], rows)
for (const note of notes) console.log(note)
console.log(`conditions: one machine (${(await import('node:os')).cpus().length} cores) runs the server, the writers and the searching process; PostgreSQL 15 with fsync on, shared_buffers 512MB; SQLite WAL, synchronous normal`)
console.log(`total wall time ${((performance.now() - started) / 60_000).toFixed(1)} min`)
await pg.close()
await lite?.close()
server.stop()
rmSync(dir, { recursive: true, force: true })
result('scale', { backend: 'postgres', messages: worst.messages, p99_ms: worst.p99.toFixed(1), writers: 4, lost: worst.lost, bytes_per_msg: worst.bytesPerMsg.toFixed(0) })
