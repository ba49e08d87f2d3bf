/**
 * bench:scale — the store at scale, PostgreSQL and SQLite side by side in one run.
 *
 * One stream of the shared synthetic corpus (bench/corpus.ts, sessions of 10k messages) is loaded
 * through the real store path (`store.append`, analyzer included) into a PostgreSQL store on a
 * real server started here (loopback, fsync on) and into a SQLite file, batch by batch, up to the
 * first size (SQLite: 1M). PostgreSQL loads in bulk mode (its two text indexes dropped during the
 * load and built once after it, both at once, `PostgresBackend.beginBulkLoad`). Each PostgreSQL
 * size is its own store (schema `scale_<n>`): sizes past what was generated (BENCH_SCALE_SIZES,
 * default 1M,3M,10M) are filled by copying the generated sessions server-side from the first
 * store, round r shifted r×365 days later (`BulkLoad.copySession`: the same text, so every term
 * keeps its rate; a planted needle appears once per copy). At each size, per backend:
 *  - search latency p50/p99 per query class (store-wide classes search every session, the
 *    session class one session and its lineage — what the model's tools do by default) in three
 *    conditions: idle, while 1 writer process appends, while 4 writer processes append (the same
 *    number of new messages in total; writers are separate OS processes, as hosts would be);
 *    the writers append as fast as the store takes them, on the same 2 cores as the server and
 *    the searcher. An extra, labelled condition beside them (it replaces none): 4 writers PACED
 *    to BENCH_SCALE_PACED msg/s each (default 25: 100 msg/s in total, already more than a busy
 *    team server's sessions produce), BENCH_SCALE_PACED_S seconds (default 30) — the searcher
 *    then competes with a write load like a deployment's, not with writers that take every free
 *    cycle of the machine;
 *  - ingest rate of the bulk load (one process) and of the 1- and 4-writer phases;
 *  - lost: messages the writers were sent that the store does not hold (count before + sent − count after);
 *  - bytes per message (database size incl. indexes / messages) and per text byte.
 * Before each size it checks free disk (estimated bytes/msg from what is already stored, within
 * BENCH_SCALE_DISK_GB, default 60) and stops at the largest size that fits, saying so; so does a
 * size that would start after BENCH_SCALE_DEADLINE_MIN minutes (default none).
 *
 * BENCH_SCALE_KEEP=<dir> keeps the server's data directory and the SQLite file there: a later run
 * reuses every size already built (its build figures, with the time and load they were taken at,
 * come from <dir>/built.json) and first forgets the sessions earlier runs' writers added.
 *
 * Extra rows per PostgreSQL size, labelled (they replace nothing): the floor — a `SELECT 1` and a
 * one-row primary-key read on the search pool, timed after each search in each condition — and an
 * extra table of the server's CPU per search in the idle condition (the postmaster's children, /proc).
 *
 * Ends with `RESULT scale backend=postgres messages=<largest PG size> p99_ms=<worst class p99 with 4
 * writers> writers=4 lost=<n> bytes_per_msg=<n>`, then the extra keys p99_paced_ms, floor_p99_ms
 * and floor_pk_p99_ms (the floor's p99 with 4 unpaced writers).
 *
 * The session class's scope (one session) is searched in a resident index, built once per store
 * before its searches (ShadowStore.warm, its cold time printed); the store-wide classes read the
 * full-text index lists.
 *
 * Env: BENCH_SCALE_SIZES, BENCH_SCALE_GENERATE (messages generated through the analyzer, default
 * the smallest size), BENCH_SCALE_SQLITE (SQLite size, default 1000000; 0 skips it),
 * BENCH_SCALE_EXTRA (messages the writers add per phase, default 20000), BENCH_SCALE_PACED,
 * BENCH_SCALE_PACED_S (0 skips the paced condition), BENCH_SCALE_REPS (idle
 * runs per query, default 5), BENCH_SCALE_KEEP, BENCH_SCALE_MEASURE (0: build and keep only),
 * BENCH_SCALE_DISK_GB, BENCH_SCALE_DEADLINE_MIN, BENCH_SCALE_PG (extra server settings, name=value,...).
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
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
/** The paced condition: msg/s per writer, and how long it runs. */
const PACED = Number(process.env['BENCH_SCALE_PACED'] ?? 25)
const PACED_S = Number(process.env['BENCH_SCALE_PACED_S'] ?? 30)
const REPS = Math.max(3, Number(process.env['BENCH_SCALE_REPS'] ?? 5))
const GENERATE = Number(process.env['BENCH_SCALE_GENERATE'] ?? PG_SIZES[0] ?? 1_000_000)
const DISK_BUDGET = Number(process.env['BENCH_SCALE_DISK_GB'] ?? 60) * 1e9
const KEEP = process.env['BENCH_SCALE_KEEP']
/** BENCH_SCALE_MEASURE=0: build (and keep) the stores only; a later run measures them. */
const MEASURE = process.env['BENCH_SCALE_MEASURE'] !== '0'
const DEADLINE_MIN = Number(process.env['BENCH_SCALE_DEADLINE_MIN'] ?? Number.POSITIVE_INFINITY)
const BATCH = 2_000
const LIMIT = 10
/** Before anything is stored: a generous guess (PostgreSQL with WAL), replaced by the measured figure. */
const GUESS_BYTES_PER_MSG = 8_000
const WRITER = fileURLToPath(new URL('./scale-writer.ts', import.meta.url))

const dir = KEEP ?? mkdtempSync(join(tmpdir(), 'bench-scale-'))
mkdirSync(dir, { recursive: true })
const PG_SETTINGS: Record<string, string> = { shared_buffers: '512MB', max_wal_size: '4GB', checkpoint_timeout: '15min', ...(process.env['BENCH_SCALE_PG'] === undefined ? {} : Object.fromEntries(process.env['BENCH_SCALE_PG'].split(',').map(pair => pair.split('=') as [string, string]))) }
const server = await startPostgres({ durable: true, settings: PG_SETTINGS, ...(KEEP === undefined ? {} : { keepDir: join(KEEP, 'pg') }) })

/** What this run may still write: the disk's free space, within the budget (counting what the server already holds). */
function freeBytes(): number {
  const stats = statfsSync(dir)
  return Math.min(stats.bavail * stats.bsize, DISK_BUDGET - usedBytes())
}

/** What this run's directory (server data, SQLite files) holds now. */
function usedBytes(): number {
  const walk = (path: string): number => {
    try {
      const entry = statSync(path)
      return entry.isDirectory() ? readdirSync(path).reduce((sum, name) => sum + walk(join(path, name)), 0) : entry.size
    } catch {
      return 0 // removed while we looked (WAL segments)
    }
  }
  return walk(dir)
}

interface Samples { [cls: string]: number[] }

/** Searches that failed (the search guard cancelled a statement), per backend, size and class. */
const failures = new Map<string, number>()
let measuring = ''

/** One search's wall time; a failed one (the guard) counts at the time it took to fail, and is counted. */
async function timeQuery(store: ShadowStore, cls: (typeof CLASSES)[number], query: string): Promise<number> {
  const options: SearchOptions = cls.session ? { sessionId: sessionId(0), limit: LIMIT } : { sessionId: sessionId(0), allSessions: true, limit: LIMIT }
  const begin = performance.now()
  try {
    await store.search(query, options)
  } catch (error) {
    const key = `${measuring} ${cls.name}`
    failures.set(key, (failures.get(key) ?? 0) + 1)
    console.log(`  ${key}: search ${JSON.stringify(query)} failed after ${(performance.now() - begin).toFixed(0)} ms: ${error instanceof Error ? error.message.slice(0, 200) : String(error)}`)
  }
  return performance.now() - begin
}

/**
 * The floor under a search (an extra measurement beside the classes, PostgreSQL only): one
 * trivial round trip on the search pool — `SELECT 1`, and a one-row primary-key read — timed
 * after each search, in the same condition. What any search pays at least for each of its
 * statements there: on a loaded machine this is the queueing, not our plans.
 */
const FLOORS = [
  { name: 'floor: SELECT 1 (search pool, extra)', sql: 'SELECT 1' },
  { name: 'floor: one-row primary-key read (search pool, extra)', sql: 'SELECT id, session_id, seq FROM messages WHERE id = $1' },
] as const
type FloorProbe = () => Promise<void>

/** The floor probes of a store (none for SQLite: it answers in process, with no round trip). */
async function floorProbes(store: ShadowStore): Promise<FloorProbe[] | undefined> {
  if (!(store.backend instanceof PostgresBackend)) return undefined
  const pool = store.backend.connection.searchPool
  const [row] = (await pool.query<{ id: string }>('SELECT max(id) AS id FROM messages')).rows
  // a row of the generated sessions (the writers' rows come and go between runs)
  const id = Math.max(1, Math.floor(Number(row?.id ?? 1) / 2))
  return FLOORS.map(floor => async () => {
    await pool.query(floor.sql, floor.sql.includes('$1') ? [id] : [])
  })
}

/** Each floor probe once, timed into `samples` (keyed by its row name). */
async function timeFloors(probes: FloorProbe[] | undefined, samples: Samples): Promise<void> {
  if (probes === undefined) return
  for (const [index, probe] of probes.entries()) {
    const begin = performance.now()
    await probe()
    ;(samples[FLOORS[index]!.name] ??= []).push(performance.now() - begin)
  }
}

/**
 * CPU time (ms) the server's processes have used so far — the postmaster's children, read from
 * /proc (Linux; undefined elsewhere). Differences over a run of searches on an otherwise idle
 * server give its CPU per search (an extra figure; a process that exits meanwhile drops out,
 * so it is a floor, and it counts 10 ms ticks).
 */
async function serverCpu(store: ShadowStore): Promise<(() => number | undefined) | undefined> {
  if (!(store.backend instanceof PostgresBackend)) return undefined
  const [row] = (await store.backend.connection.searchPool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows
  const statOf = (pid: string | number): string[] | undefined => {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
      return text.slice(text.lastIndexOf(')') + 2).split(' ')
    } catch {
      return undefined
    }
  }
  const postmaster = statOf(row!.pid)?.[1] // fields after the name: state, ppid, ...
  if (postmaster === undefined) return undefined
  const tickMs = 1000 / 100 // USER_HZ
  return () => {
    let ticks = 0
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue
      const fields = statOf(name)
      // utime and stime are fields 14 and 15 of /proc/<pid>/stat (11 and 12 after state)
      if (fields !== undefined && (fields[1] === postmaster || name === postmaster)) ticks += Number(fields[11]) + Number(fields[12])
    }
    return ticks * tickMs
  }
}

/** Every query of every class `reps` times (after one warm-up run each). */
async function idleSearches(store: ShadowStore, floors: FloorProbe[] | undefined): Promise<{ samples: Samples; cpuMs: Map<string, number> }> {
  const samples: Samples = {}
  const cpu = await serverCpu(store)
  const cpuMs = new Map<string, number>()
  for (const cls of CLASSES) {
    samples[cls.name] = []
    // the server's CPU per search, over the class's timed searches only (not the warm-ups, not the floor probes)
    let used: number | undefined = 0
    for (const query of cls.queries) {
      await timeQuery(store, cls, query)
      const before = cpu?.()
      for (let rep = 0; rep < REPS; rep += 1) samples[cls.name]!.push(await timeQuery(store, cls, query))
      const after = cpu?.()
      used = before === undefined || after === undefined || used === undefined ? undefined : used + after - before
    }
    if (used !== undefined && cpu !== undefined) cpuMs.set(cls.name, used / samples[cls.name]!.length)
    for (let rep = 0; rep < REPS; rep += 1) await timeFloors(floors, samples)
  }
  return { samples, cpuMs }
}

function writer(location: string, count: number, name: string, rate?: number): Promise<{ written: number; unchanged: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', WRITER, location, String(count), name, ...(rate === undefined ? [] : ['500', String(rate)])], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', chunk => { stdout += String(chunk) })
    proc.stderr.on('data', chunk => { stderr += String(chunk) })
    proc.on('error', reject)
    proc.on('exit', code => code === 0 ? resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as { written: number; unchanged: number; ms: number }) : reject(new Error(`writer ${name} failed (${code}): ${stderr.slice(0, 2_000)}`)))
  })
}

/**
 * `writers` processes add EXTRA messages in total (as fast as they can), or each `paced` msg/s for
 * PACED_S seconds, while this process searches round-robin over the classes.
 */
async function writePhase(store: ShadowStore, location: string, writers: number, phase: string, floors: FloorProbe[] | undefined, paced?: number): Promise<{ samples: Samples; rate: number; sent: number; written: number }> {
  const samples: Samples = Object.fromEntries(CLASSES.map(cls => [cls.name, [] as number[]]))
  const begin = performance.now()
  const state = { running: true }
  const each = paced === undefined ? Math.floor(EXTRA / writers) : Math.round(paced * PACED_S)
  const jobs = Promise.all(Array.from({ length: writers }, (_, index) => writer(location, each, `${phase}-w${index}`, paced))).finally(() => { state.running = false })
  let turn = 0
  while (state.running) {
    // SQLite answers synchronously: give the event loop a turn, or the writers' exits are never seen
    await new Promise(resolve => setImmediate(resolve))
    const cls = CLASSES[turn % CLASSES.length]!
    samples[cls.name]!.push(await timeQuery(store, cls, cls.queries[Math.floor(turn / CLASSES.length) % cls.queries.length]!))
    await timeFloors(floors, samples)
    turn += 1
  }
  const outcomes = await jobs
  const wall = performance.now() - begin
  return { samples, rate: (each * writers) / (wall / 1000), sent: each * writers, written: outcomes.reduce((sum, outcome) => sum + outcome.written, 0) }
}

// ---- run ------------------------------------------------------------------------------------------

interface Built { messages: number; generatedRate?: number; indexS?: number; copiedRate?: number; minutes: number; at: string; load: string }
const builtFile = join(dir, 'built.json')
const built: Record<string, Built> = existsSync(builtFile) ? JSON.parse(readFileSync(builtFile, 'utf8')) as Record<string, Built> : {}
const saveBuilt = (): void => writeFileSync(builtFile, `${JSON.stringify(built, null, 2)}\n`)
const load = (): string => loadavg().map(value => value.toFixed(1)).join(' ')

const rows: Array<readonly unknown[]> = []
const ingestRows: Array<readonly unknown[]> = []
const cpuRows: Array<readonly unknown[]> = []
const worst: { p99: number; pacedP99?: number | undefined; floorP99?: number[]; lost: number; bytesPerMsg: number; messages: number } = { p99: 0, lost: 0, bytesPerMsg: 0, messages: 0 }
const COLUMNS = ['backend', 'messages', 'class', 'idle', '1 writer', '4 writers', `4 writers paced ${PACED}/s each (extra)`]
const notes: string[] = []
const generated = Math.ceil(GENERATE / SESSION_SIZE)
const baseKey = `postgres-${PG_SIZES[0]}`
const liteKey = `sqlite-${SQLITE_SIZE}`
console.log(`bench:scale: PostgreSQL sizes ${PG_SIZES.join(', ')}, SQLite ${SQLITE_SIZE || 'skipped'}; writers add ${EXTRA} messages per phase; ${REPS} idle runs per query; free disk ${(freeBytes() / 1e9).toFixed(1)} GB; load average ${load()}${KEEP === undefined ? '' : `; keeping the stores (built: ${Object.keys(built).join(', ') || 'none'})`}`)

/** A kept store is reused only when its build finished (recorded) and it still holds what it had. */
async function reusable(key: string, store: ShadowStore): Promise<boolean> {
  const entry = built[key]
  if (entry === undefined) return false
  // earlier runs' writers: their sessions are not generated ones
  for (const session of await store.sessions()) if (!session.sessionId.startsWith('bench-s')) await store.forget(session.sessionId, { force: true })
  return (await store.stats()).messages === entry.messages
}

/** Disk this build needs (rows still to load at the measured bytes per message, or a guess) fits? */
async function fits(size: number, label: string): Promise<boolean> {
  let perMsg = GUESS_BYTES_PER_MSG
  for (const store of open.values()) {
    const stats = await store.stats()
    if (stats.messages > 10_000) perMsg = Math.min(perMsg, stats.bytes / stats.messages * 1.5)
  }
  const need = (size + 4 * EXTRA) * perMsg
  if (need <= freeBytes() * 0.85) return true
  notes.push(`${label}: needs ~${(need / 1e9).toFixed(1)} GB, ${(freeBytes() / 1e9).toFixed(1)} GB free within the ${DISK_BUDGET / 1e9} GB budget — not built`)
  console.log(notes.at(-1))
  return false
}

const open = new Map<string, ShadowStore>()
async function storeOf(key: string): Promise<ShadowStore> {
  let store = open.get(key)
  if (store === undefined) {
    store = await ShadowStore.open(locationOf(key))
    open.set(key, store)
  }
  return store
}
function locationOf(key: string): string {
  const [backend, size] = key.split('-') as [string, string]
  return backend === 'postgres' ? server.storeDsn(`scale_${size}`) : join(dir, `scale-${size}.db`)
}

/** Generate the first PostgreSQL size and the SQLite size (whichever is not reused), batch by batch into each. */
async function generate(): Promise<boolean> {
  const wanted: Array<{ key: string; store: ShadowStore; size: number; ms: number }> = []
  for (const [key, size] of [[baseKey, Math.min(PG_SIZES[0]!, GENERATE)], [liteKey, SQLITE_SIZE]] as const) {
    if (size <= 0) continue
    const store = await storeOf(key)
    if (await reusable(key, store)) continue
    if (!(await fits(size, key))) return false
    wanted.push({ key, store, size, ms: 0 })
  }
  if (wanted.length === 0) return true
  const begin = performance.now()
  const base = wanted.find(entry => entry.key === baseKey)
  const bulk = base === undefined ? undefined : await (base.store.backend as PostgresBackend).beginBulkLoad()
  const generator = new Generator()
  const most = Math.max(...wanted.map(entry => entry.size))
  for (let loaded = 0; loaded < most;) {
    const batch: ShadowMessageInput[] = []
    for (let index = 0; index < BATCH && loaded < most; index += 1, loaded += 1) batch.push(generator.next())
    for (const entry of wanted) {
      const part = batch.slice(0, Math.max(0, entry.size - (loaded - batch.length)))
      if (part.length === 0) continue
      const start = performance.now()
      await entry.store.append(part)
      entry.ms += performance.now() - start
    }
    if (loaded % 100_000 === 0) console.log(`  generated ${loaded} (${((performance.now() - started) / 60_000).toFixed(1)} min, load ${load()})`)
  }
  let indexS: number | undefined
  if (bulk !== undefined) {
    const start = performance.now()
    await bulk.end()
    indexS = (performance.now() - start) / 1000
  }
  for (const entry of wanted) {
    built[entry.key] = { messages: (await entry.store.stats()).messages, generatedRate: entry.size / (entry.ms / 1000), ...(entry.key === baseKey && indexS !== undefined ? { indexS } : {}), minutes: (performance.now() - begin) / 60_000, at: new Date().toISOString(), load: load() }
    saveBuilt()
  }
  return true
}

/** A PostgreSQL size past the generated one: generated sessions copied server-side from the first store, rounds shifted a year each. */
async function grow(size: number): Promise<boolean> {
  const key = `postgres-${size}`
  const store = await storeOf(key)
  if (await reusable(key, store)) return true
  if (!(await fits(size, key))) return false
  const begin = performance.now()
  const bulk = await (store.backend as PostgresBackend).beginBulkLoad()
  let copied = (await store.stats()).messages
  for (let round = 0; copied < size; round += 1) {
    for (let source = 0; source < generated && copied < size; source += 1) {
      const target = round === 0 ? sessionId(source) : `${sessionId(source)}-copy${round}`
      if (((await store.session(target))?.messageCount ?? 0) > 0) continue // a killed earlier build got this far
      await store.registerSession({ sessionId: target })
      copied += await bulk.copySession(sessionId(source), target, round * 365, `scale_${PG_SIZES[0]}`)
    }
    console.log(`  ${key}: copied up to ${copied} (${((performance.now() - started) / 60_000).toFixed(1)} min, load ${load()})`)
  }
  const copyMs = performance.now() - begin
  const start = performance.now()
  await bulk.end()
  built[key] = { messages: (await store.stats()).messages, copiedRate: size / (copyMs / 1000), indexS: (performance.now() - start) / 1000, minutes: (performance.now() - begin) / 60_000, at: new Date().toISOString(), load: load() }
  saveBuilt()
  return true
}

async function measure(key: string): Promise<void> {
  if (!MEASURE) return
  const [name, sizeText] = key.split('-') as [string, string]
  const size = Number(sizeText)
  const store = await storeOf(key)
  measuring = key
  const begin = performance.now()
  if (name === 'postgres') await store.vacuum() // VACUUM ANALYZE: the planner's statistics
  else (store.backend as SqliteBackend).optimize()
  const maintenanceS = (performance.now() - begin) / 1000
  // the session class's scope is searched in a resident index (store README, Resident search): built
  // once per process before the searches, as capture builds it at a session's first write; timed cold
  const warmBegin = performance.now()
  await store.warm(sessionId(0))
  console.log(`  ${key}: the session class's resident index (${SESSION_SIZE} messages) built cold in ${(performance.now() - warmBegin).toFixed(0)} ms`)
  const loadIdle = load()
  const floors = await floorProbes(store)
  const { samples: idle, cpuMs } = await idleSearches(store, floors)
  const before = (await store.stats()).messages
  const one = await writePhase(store, locationOf(key), 1, `n${size}-one`, floors)
  const loadOne = load()
  const four = await writePhase(store, locationOf(key), 4, `n${size}-four`, floors)
  const loadFour = load()
  const paced = PACED > 0 && PACED_S > 0 ? await writePhase(store, locationOf(key), 4, `n${size}-paced`, floors, PACED) : undefined
  const loadPaced = load()
  const stats = await store.stats()
  const lost = before + one.sent + four.sent + (paced?.sent ?? 0) - stats.messages
  const bytesPerMsg = stats.bytes / stats.messages
  const entry = built[key] ?? built[baseKey]
  const fixed = (value: number | undefined, digits = 0): string => value === undefined ? '-' : value.toFixed(digits)
  ingestRows.push([name, size, fixed(entry?.generatedRate), fixed(entry?.indexS), fixed(entry?.copiedRate), entry === undefined ? '-' : `${entry.at.slice(0, 16)} (${entry.minutes.toFixed(1)} min, load ${entry.load})`,
    maintenanceS.toFixed(1), one.rate.toFixed(0), four.rate.toFixed(0), lost, bytesPerMsg.toFixed(0), (stats.bytes / stats.textBytes).toFixed(2)])
  let fourP99 = 0
  let pacedP99 = 0
  const mine: Array<readonly unknown[]> = []
  for (const cls of CLASSES) {
    const cell = (samples: Samples | undefined): string => samples === undefined ? '-' : `${percentile(samples[cls.name]!, 0.5).toFixed(1)} / ${percentile(samples[cls.name]!, 0.99).toFixed(1)} (${samples[cls.name]!.length})`
    const failed = failures.get(`${key} ${cls.name}`) ?? 0
    mine.push([name, size, `${cls.name}${cls.session ? ' (session)' : ''}${failed > 0 ? ` [${failed} failed]` : ''}`, cell(idle), cell(one.samples), cell(four.samples), cell(paced?.samples)])
    if (four.samples[cls.name]!.length > 0) fourP99 = Math.max(fourP99, percentile(four.samples[cls.name]!, 0.99))
    if ((paced?.samples[cls.name]!.length ?? 0) > 0) pacedP99 = Math.max(pacedP99, percentile(paced!.samples[cls.name]!, 0.99))
  }
  const floorP99: number[] = []
  if (floors !== undefined) {
    for (const floor of FLOORS) {
      const cell = (samples: Samples | undefined): string => samples?.[floor.name] === undefined ? '-' : `${percentile(samples[floor.name]!, 0.5).toFixed(1)} / ${percentile(samples[floor.name]!, 0.99).toFixed(1)} (${samples[floor.name]!.length})`
      mine.push([name, size, floor.name, cell(idle), cell(one.samples), cell(four.samples), cell(paced?.samples)])
      floorP99.push(four.samples[floor.name] === undefined ? 0 : percentile(four.samples[floor.name]!, 0.99))
    }
  }
  if (cpuMs.size > 0) cpuRows.push(...CLASSES.map(cls => [name, size, cls.name, cpuMs.get(cls.name)?.toFixed(1) ?? '-', loadIdle] as const))
  mine.push([name, size, 'load average (1 5 15 min)', loadIdle, loadOne, loadFour, paced === undefined ? '-' : loadPaced])
  rows.push(...mine)
  // each size's figures as soon as they exist: a run stopped later keeps them
  printTable(`${key}: p50 / p99 (samples), ms; ingest ${one.rate.toFixed(0)} / ${four.rate.toFixed(0)} msg/s with 1 / 4 writers${paced === undefined ? '' : ` (paced: ${paced.rate.toFixed(0)})`}; lost ${lost}; ${bytesPerMsg.toFixed(0)} bytes/msg`, COLUMNS, mine)
  if (name === 'postgres') Object.assign(worst, { p99: fourP99, pacedP99: paced === undefined ? undefined : pacedP99, floorP99, lost, bytesPerMsg, messages: size })
  console.log(`  ${key}: measured (${((performance.now() - started) / 60_000).toFixed(1)} min, load ${load()})`)
}

if (await generate()) {
  if (SQLITE_SIZE > 0) await measure(liteKey)
  for (const size of PG_SIZES) {
    if ((performance.now() - started) / 60_000 > DEADLINE_MIN) {
      notes.push(`size ${size}: not started, the run is past its ${DEADLINE_MIN} min deadline`)
      console.log(notes.at(-1))
      break
    }
    if (size > PG_SIZES[0]! && !(await grow(size))) break
    await measure(`postgres-${size}`)
  }
}

printTable('ingest (generated: messages/s through store.append, one process, batches of 2000, PostgreSQL in bulk mode without its text indexes; index build: both text indexes built after the load, at once; copied: server-side session copies; built: when, how long, load average then; phases: writer processes, batches of 500, searches running)',
  ['backend', 'messages', 'generated msg/s', 'index build s', 'copied msg/s', 'built (UTC)', 'vacuum/optimize s', '1 writer msg/s', '4 writers msg/s', 'lost', 'bytes/msg', 'bytes/text byte'], ingestRows)
printTable(`search latency, ms: p50 / p99 (samples) per class; limit ${LIMIT}; store-wide classes search every session, session = one session of 10k; idle: ${REPS} runs per query after a warm-up; with writers: round-robin while they append ${EXTRA} messages as fast as the store takes them; paced (an extra condition, not the goal's): 4 writers at ${PACED} msg/s each for ${PACED_S} s; a search the guard cancelled counts at the time it took to fail ([n failed]); last row per size: load average after each condition`,
  COLUMNS, rows)
if (cpuRows.length > 0) printTable('server CPU per search, idle (extra): CPU ms of the server\'s processes (the postmaster\'s children, /proc, 10 ms ticks) over the idle runs of a class, per search', ['backend', 'messages', 'class', 'server CPU ms / search', 'load average'], cpuRows)
for (const note of notes) console.log(note)
for (const [key, store] of open) {
  // a list statement past the list guard was run again bounded to the newest rows (store README): how often, in this run
  if (store.backend instanceof PostgresBackend) console.log(`${key}: list guard (${store.backend.connection.listTimeoutMs} ms) cut ${store.backend.connection.listGuard.bounded} of ${store.backend.connection.listGuard.statements} list statements`)
}
console.log(`conditions: one machine (${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB) runs the server, the writers and the searching process; PostgreSQL 15 with fsync on, ${Object.entries(PG_SETTINGS).map(([k, v]) => `${k} ${v}`).join(', ')}; SQLite WAL, synchronous normal`)
console.log(`total wall time ${((performance.now() - started) / 60_000).toFixed(1)} min`)
for (const store of open.values()) await store.close()
server.stop()
if (KEEP === undefined) rmSync(dir, { recursive: true, force: true })
// extra keys beside the goal's p99_ms: p99_paced_ms (4 writers paced, see the header); the floor
// with 4 (unpaced) writers: floor_p99_ms (SELECT 1 on the search pool), floor_pk_p99_ms (a one-row primary-key read)
const floorKeys = worst.floorP99 === undefined || worst.floorP99.length < 2 ? {} : { floor_p99_ms: worst.floorP99[0]!.toFixed(1), floor_pk_p99_ms: worst.floorP99[1]!.toFixed(1) }
result('scale', { backend: 'postgres', messages: worst.messages, p99_ms: worst.p99.toFixed(1), writers: 4, lost: worst.lost, bytes_per_msg: worst.bytesPerMsg.toFixed(0), ...(worst.pacedP99 === undefined ? {} : { p99_paced_ms: worst.pacedP99.toFixed(1) }), ...floorKeys })
