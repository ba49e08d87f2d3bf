/**
 * A real PostgreSQL server for tests and benchmarks: the machine's binaries, a temporary data
 * directory, listening only on 127.0.0.1 on a free port with its unix socket in the same temporary
 * directory. Nothing is written outside that directory, and `stop()` removes it (unless it is a
 * `keepDir` a benchmark reuses).
 *
 * PostgreSQL refuses to run as root: when the process is root, the server is initialised and run
 * as the `postgres` OS user (which the Debian package creates), owning the temporary directory.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PostgresServer {
  /** Connection string of the server's `postgres` database (trust auth, loopback only). */
  readonly dsn: string
  readonly port: number
  /** A connection string for a fresh store: its own schema in the server's database. */
  storeDsn(name?: string): string
  /** Stop the server (`immediate`: as a crash would; the data directory stays, `start` brings it back). */
  halt(mode?: 'fast' | 'immediate'): void
  /** Start the stopped server again on the same port and data. */
  start(): void
  /** Stop and delete the data directory. Safe to call twice. */
  stop(): void
  /** The server log so far (for failure messages). */
  log(): string
}

export interface PostgresOptions {
  /**
   * fsync: off by default in tests (they kill processes and the server, never the machine, so the
   * OS keeps what was written); benchmarks turn it on. Commits always wait for their WAL write.
   */
  readonly durable?: boolean
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string>>
  /**
   * A directory kept across runs (benchmarks reuse a built database): initialised on first use,
   * started again on the next, and `stop()` only stops the server there, never deletes it.
   */
  readonly keepDir?: string
}

/** Where the PostgreSQL server binaries are, or undefined when this machine has none. */
export function postgresBinDir(): string | undefined {
  const fromEnv = process.env['PG_BINDIR']
  if (fromEnv !== undefined && existsSync(join(fromEnv, 'initdb'))) return fromEnv
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    if (existsSync(join(dir, 'initdb'))) return dir
  } catch {
    // no pg_config: look where Debian puts the server
  }
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter(name => existsSync(join(root, name, 'bin', 'initdb'))).toSorted((a, b) => Number(b) - Number(a))
  return versions.length === 0 ? undefined : join(root, versions[0]!, 'bin')
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')))
    })
  })
}

let schemas = 0

/** Start a server; throws with the reason when the binaries are missing or it does not come up. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinDir()
  if (bin === undefined) throw new Error('PostgreSQL server binaries not found (install the Debian package postgresql, or set PG_BINDIR)')
  const keep = options.keepDir
  if (keep !== undefined) mkdirSync(keep, { recursive: true })
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'shadow-pg-'))
  const data = join(dir, 'data')
  const remove = (): void => {
    if (keep === undefined) rmSync(dir, { recursive: true, force: true })
  }
  const logFile = join(dir, 'server.log')
  const root = process.getuid?.() === 0
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, uid, gid)
  }
  const run = (command: string, args: string[]): void => {
    const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, command), ...args]] : [join(bin, command), args]
    const result = spawnSync(file, argv, { encoding: 'utf8', cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    if (result.status !== 0) throw new Error(`${command} failed (${result.status ?? result.signal}): ${result.stderr}${result.stdout}${existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : ''}`)
  }
  try {
    if (!existsSync(join(data, 'PG_VERSION'))) run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-instructions'])
  } catch (error) {
    remove()
    throw error
  }
  const durable = options.durable === true
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: dir,
    fsync: durable ? 'on' : 'off',
    synchronous_commit: 'on',
    full_page_writes: durable ? 'on' : 'off',
    max_connections: '100',
    ...options.settings,
  }
  let port = await freePort()
  let stopped = false
  let running = false
  const start = (): void => {
    const flags = [`-p ${port}`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ')
    run('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', flags, 'start'])
    running = true
  }
  for (let attempt = 0; ; attempt += 1) {
    try {
      start()
      break
    } catch (error) {
      // another process may have taken the port between the probe and the start
      if (attempt >= 2) {
        remove()
        throw error
      }
      port = await freePort()
    }
  }
  const halt = (mode: 'fast' | 'immediate' = 'fast'): void => {
    if (!running) return
    run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop'])
    running = false
  }
  const dsn = `postgres://postgres@127.0.0.1:${port}/postgres`
  // a test process that ends without stop() must not leave a server running
  const onExit = (): void => {
    try {
      if (!stopped) { stopped = true; halt(keep === undefined ? 'immediate' : 'fast'); remove() }
    } catch {
      // exiting anyway
    }
  }
  process.once('exit', onExit)
  return {
    dsn,
    port,
    storeDsn: name => `${dsn}?schema=${name ?? `t${process.pid}_${++schemas}`}`,
    halt,
    start: () => {
      if (!running) start()
    },
    stop: () => {
      if (stopped) return
      stopped = true
      process.off('exit', onExit)
      try {
        halt(keep === undefined ? 'immediate' : 'fast')
      } finally {
        remove()
      }
    },
    log: () => existsSync(logFile) ? readFileSync(logFile, 'utf8') : '',
  }
}
