/**
 * The backends every store contract test runs against: SQLite files in a temp dir, and a real
 * PostgreSQL server on loopback with a temp data dir (each store its own schema).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgres, type PostgresServer } from '../../testing/src/postgres.ts'
import { tempDir } from './helpers.ts'

export interface StoreTarget {
  readonly name: 'sqlite' | 'postgres'
  /** Start what the backend needs (a server); once per suite. */
  setup(): Promise<void>
  teardown(): Promise<void>
  /** Where a fresh, empty store would live (nothing is created yet). */
  location(): string
  /** Whether anything of a store exists at `location`. */
  exists(location: string): Promise<boolean>
  /**
   * Whether the bytes of `needle` sit anywhere in the store's files: the SQLite file with its
   * -wal and -shm, or every table and index file of the server's database (needles are unique to
   * a test: the database holds every test's schema).
   */
  storageHolds(location: string, needle: string): Promise<boolean>
}

const holds = (file: string, needle: Buffer): boolean => existsSync(file) && readFileSync(file).includes(needle)

export function sqliteTarget(): StoreTarget {
  let dir: ReturnType<typeof tempDir> | undefined
  let count = 0
  return {
    name: 'sqlite',
    async setup() {
      dir = tempDir()
    },
    async teardown() {
      dir?.cleanup()
    },
    location: () => join(dir!.path, `store-${++count}`, 'shadow.db'),
    exists: async location => existsSync(location),
    storageHolds: async (location, needle) => ['', '-wal', '-shm'].some(suffix => holds(location + suffix, Buffer.from(needle))),
  }
}

export interface PostgresTarget extends StoreTarget {
  readonly server: () => PostgresServer
  /** Run SQL against the server's database (outside any store). */
  sql(statement: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>
}

export function postgresTarget(): PostgresTarget {
  let server: PostgresServer | undefined
  return {
    name: 'postgres',
    server: () => server!,
    async setup() {
      server = await startPostgres()
    },
    async teardown() {
      server?.stop()
    },
    location: () => server!.storeDsn(),
    async exists(location) {
      const schema = new URL(location).searchParams.get('schema')
      const rows = await this.sql('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [schema])
      return rows[0]!['n'] !== 0
    },
    async storageHolds(_location, needle) {
      // what a checkpoint has not written out yet is in the server's memory, not the files
      await this.sql('CHECKPOINT')
      const [row] = await this.sql("SELECT current_setting('data_directory') AS dir, (SELECT oid FROM pg_database WHERE datname = current_database())::text AS db")
      const base = join(String(row!['dir']), 'base', String(row!['db']))
      return readdirSync(base).some(name => holds(join(base, name), Buffer.from(needle)))
    },
    async sql(statement, params = []) {
      const client = new pg.Client({ connectionString: server!.dsn })
      await client.connect()
      try {
        return (await client.query(statement, params)).rows as Array<Record<string, unknown>>
      } finally {
        await client.end()
      }
    },
  }
}

export const TARGETS = [sqliteTarget(), postgresTarget()]
