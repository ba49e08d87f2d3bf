/**
 * The PostgreSQL connection: connection string reading, a small node-postgres pool, typed errors,
 * transactions (retried on deadlock and serialization failures), and migrations under an
 * advisory lock so several processes opening one store at once migrate it exactly once.
 */
import pg from 'pg'
import { ANALYZER_VERSION } from '../analyzer.ts'
import { ShadowStoreError } from '../errors.ts'
import { migrationSql, PG_MIGRATIONS, PG_SCHEMA_VERSION, TEXT_INDEXES_SQL } from './schema.ts'

export interface PostgresBackendOptions {
  readonly readOnly?: boolean
  /** How long a statement waits for a lock, and a connection attempt for the server, ms. Default 5000. */
  readonly busyTimeoutMs?: number
  /** Connections per process (and as many again for searches, for their candidate lists and for maintenance). Default 4. */
  readonly poolSize?: number
  /**
   * Guard on each search statement, ms: one that runs longer is cancelled by the server and the
   * search fails with UNAVAILABLE (saying so) instead of holding a turn. Default 3000.
   */
  readonly searchTimeoutMs?: number
  /**
   * Guard on a search's candidate lists, ms (at most `searchTimeoutMs`): a list that runs longer
   * (a plan the store did not expect, or a loaded server) is cancelled and read again among the
   * store's newest rows only, so the search answers instead of failing. Default 300.
   */
  readonly listTimeoutMs?: number
  /**
   * Guard on every other statement (writes, reads, the self-check), ms; migrations, VACUUM and
   * bulk index builds run without one. Default 60000.
   */
  readonly statementTimeoutMs?: number
  /**
   * Ceiling on the store's tables and indexes, bytes. Past it every write that adds rows fails
   * with FULL, as on a full disk (Shadow Context then fails closed). Default: none.
   */
  readonly maxBytes?: number
}

/** `postgres://` and `postgresql://` connection strings select this backend. */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(location)
}

/**
 * Why a store location is neither a file path nor a `postgres://` URL, or undefined when it is one.
 * A mistyped connection string (`postgres:/user:pass@host/db`, `mysql://…`) would otherwise be a
 * relative file path: a SQLite store created in folders named after the password, shown in every
 * message, while the team server gets nothing. The answer never repeats the location.
 */
export function locationProblem(location: string): string | undefined {
  if (/^postgres(?:ql)?:(?!\/\/)/i.test(location)) return 'looks like a PostgreSQL connection string but does not start with postgres:// (or postgresql://)'
  if (!isPostgresLocation(location) && /^[a-z][a-z0-9+.-]+:\/\//i.test(location)) return 'is a URL the shadow store does not know: give a postgres:// connection string or a file path'
  return undefined
}

/**
 * A connection string safe to print: its password masked, in the userinfo and in every query
 * parameter naming one (`?password=`, `sslpassword=`: node-postgres honours both).
 */
function masked(url: URL): URL {
  const shown = new URL(url.href)
  if (shown.password !== '') shown.password = '***'
  for (const name of new Set(shown.searchParams.keys())) {
    if (/password/i.test(name)) shown.searchParams.set(name, '***')
  }
  return shown
}

/** A store location safe to print: a connection string without its password, a file path as it is. */
export function displayLocation(location: string): string {
  if (!isPostgresLocation(location)) return location
  try {
    return masked(new URL(location)).href
  } catch {
    return 'postgres://(unparsable location)'
  }
}

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/
export const DEFAULT_SCHEMA = 'dsh_shadow'

export interface PostgresLocation {
  /** What node-postgres connects with (our `schema` parameter removed). */
  readonly connectionString: string
  readonly schema: string
  /** The location without its password: safe to print. */
  readonly display: string
}

export function parseLocation(location: string): PostgresLocation {
  let url: URL
  try {
    url = new URL(location)
  } catch {
    throw new ShadowStoreError('INVALID_INPUT', 'shadow store location is not a valid postgres:// URL')
  }
  const schema = url.searchParams.get('schema') ?? DEFAULT_SCHEMA
  if (!SCHEMA_NAME.test(schema)) throw new ShadowStoreError('INVALID_INPUT', `schema ${JSON.stringify(schema)} must be a lowercase SQL identifier (letters, digits, _)`)
  url.searchParams.delete('schema')
  const display = masked(url)
  display.searchParams.set('schema', schema)
  return { connectionString: url.href, schema, display: display.href }
}

/** Whether a driver error says the server cannot be reached (down, restarting, network), not that a statement failed. */
export function unreachable(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  const text = typeof code === 'string' ? code : ''
  const detail = error instanceof Error ? error.message : String(error)
  return text.startsWith('08') || text.startsWith('57P') || text === 'ECONNREFUSED' || text === 'ECONNRESET' || text === 'ETIMEDOUT' || text === 'ENOTFOUND' || text === 'EHOSTUNREACH'
    || /terminated|timeout|connect/i.test(detail)
}

/** Map a node-postgres or socket failure to a typed store error (never with the password: pg errors do not carry it). */
export function pgError(error: unknown, action: string, where: string): ShadowStoreError {
  if (error instanceof ShadowStoreError) return error
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  const detail = error instanceof Error ? error.message : String(error)
  const text = typeof code === 'string' ? code : ''
  if (text === '53100') return new ShadowStoreError('FULL', `shadow store ${where} ${action}: the database server's disk is full: ${detail}`, { cause: error })
  if (text === '23505') return new ShadowStoreError('CONFLICT', `shadow store ${where} ${action}: ${detail}`, { cause: error })
  if (text === '3F000' || text === '42P01') return new ShadowStoreError('UNAVAILABLE', `shadow store ${where} ${action}: the store's tables are gone (${detail}); reopen to recreate them`, { cause: error })
  if (detail === 'Query read timeout') {
    return new ShadowStoreError('UNAVAILABLE', `shadow store ${where} did not answer (${action}) within its statement guard and ${CLIENT_GUARD_MARGIN_MS} ms more: the server is stopped, overloaded or cut off`, { cause: error })
  }
  if (unreachable(error)) {
    return new ShadowStoreError('UNAVAILABLE', `shadow store ${where} is unreachable (${action}): ${detail}`, { cause: error })
  }
  return new ShadowStoreError('UNAVAILABLE', `shadow store ${where} ${action} failed: ${detail}${text === '' ? '' : ` (${text})`}`, { cause: error })
}

/**
 * How much longer than a statement's server-side guard the client waits for its answer. A server
 * that stops answering (frozen, cut off by the network, a failover that blackholes its address)
 * cannot enforce its own statement_timeout: without a client-side guard a search waited forever.
 */
export const CLIENT_GUARD_MARGIN_MS = 2_000

/** Failures a transaction is retried on: the other writer won; doing it again is correct. */
const RETRYABLE = new Set(['40001', '40P01'])

export type Db = pg.PoolClient | pg.Pool

/** bigint columns come back as numbers (every stored integer is a safe integer: seqs, times, counts). */
const types = {
  getTypeParser(oid: number, format?: string): (value: string) => unknown {
    if (oid === 20) return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown
  },
}

export class PgConnection {
  readonly location: PostgresLocation
  readonly pool: pg.Pool
  /** Index queries of searches, on their own connections with a tight statement timeout. */
  readonly searchPool: pg.Pool
  /**
   * Connections for work that may run as long as the table is large (migrations, VACUUM, bulk
   * index builds): no client-side guard, so a statement is never given up while the server works.
   */
  readonly maintenancePool: pg.Pool
  readonly searchTimeoutMs: number
  /** Candidate lists of searches, under the shorter list guard (searchList). */
  readonly listPool: pg.Pool
  readonly listTimeoutMs: number
  /** List statements run, and how many of them the list guard cut (then run bounded): for benchmarks and diagnosis. */
  readonly listGuard = { statements: 0, bounded: 0 }
  readonly readOnly: boolean
  private closed = false

  constructor(location: PostgresLocation, options: PostgresBackendOptions) {
    this.location = location
    this.readOnly = options.readOnly === true
    const busy = Math.max(1, Math.floor(options.busyTimeoutMs ?? 5_000))
    const settings = [`-c search_path=${location.schema}`, `-c lock_timeout=${busy}`]
    if (this.readOnly) settings.push('-c default_transaction_read_only=on')
    this.searchTimeoutMs = Math.max(1, Math.floor(options.searchTimeoutMs ?? 3_000))
    const pool = (statementTimeout: number, extra: readonly string[] = [], guarded = true): pg.Pool => {
      const made = new pg.Pool({
        connectionString: location.connectionString,
        options: [...settings, ...extra, `-c statement_timeout=${statementTimeout}`].join(' '),
        max: Math.max(1, Math.floor(options.poolSize ?? 4)),
        connectionTimeoutMillis: busy,
        idleTimeoutMillis: 30_000,
        // the client gives up a little after the server would have (a connection that timed out is dropped)
        ...(guarded ? { query_timeout: statementTimeout + CLIENT_GUARD_MARGIN_MS } : {}),
        types,
      })
      // an idle connection the server dropped reports here; the next query gets a fresh one
      made.on('error', () => {})
      // and so does one held between statements (a transaction, a vacuum): without a listener its
      // 'error' event was thrown, and a server restart killed the process (the store's worker thread
      // under dsh). The next statement on it fails and the connection is dropped, not pooled.
      made.on('connect', client => { client.on('error', () => {}) })
      return made
    }
    const statementTimeout = Math.max(1, Math.floor(options.statementTimeoutMs ?? 60_000))
    this.pool = pool(statementTimeout)
    // no JIT for searches: a batch of lists (or one probing many buckets) is estimated past
    // jit_above_cost, and compiling it took ~55 ms of a statement that runs in 5–40 ms (10M rows)
    this.searchPool = pool(this.searchTimeoutMs, ['-c jit=off'])
    this.listTimeoutMs = Math.max(1, Math.min(this.searchTimeoutMs, Math.floor(options.listTimeoutMs ?? 300)))
    this.listPool = pool(this.listTimeoutMs, ['-c jit=off'])
    this.maintenancePool = pool(statementTimeout, [], false)
  }

  private check(action: string): void {
    if (this.closed) throw new ShadowStoreError('CLOSED', `shadow store ${this.location.display} is closed (${action})`)
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(action: string, sql: string, params: unknown[] = [], db: Db = this.pool): Promise<R[]> {
    this.check(action)
    try {
      return (await db.query<R>(sql, params)).rows
    } catch (error) {
      throw pgError(error, action, this.location.display)
    }
  }

  /** A search's index query, under the search statement timeout (a typed UNAVAILABLE when it trips). */
  async search<R extends pg.QueryResultRow = Record<string, unknown>>(action: string, sql: string, params: unknown[] = []): Promise<R[]> {
    this.check(action)
    try {
      return (await this.searchPool.query<R>(sql, params)).rows
    } catch (error) {
      if ((error as { code?: unknown }).code === '57014') {
        throw new ShadowStoreError('UNAVAILABLE', `shadow store ${this.location.display} ${action}: the query ran past the ${this.searchTimeoutMs} ms search guard and was cancelled (a loaded server, or a plan the store did not expect)`, { cause: error })
      }
      throw pgError(error, action, this.location.display)
    }
  }

  /**
   * A search's candidate list under the list guard: its rows, or undefined when the guard tripped
   * (the caller reads a bounded plan instead, on the search pool).
   */
  async searchList<R extends pg.QueryResultRow = Record<string, unknown>>(action: string, sql: string, params: unknown[] = []): Promise<R[] | undefined> {
    this.check(action)
    try {
      return (await this.listPool.query<R>(sql, params)).rows
    } catch (error) {
      if ((error as { code?: unknown }).code === '57014') return undefined
      throw pgError(error, action, this.location.display)
    }
  }

  /** One connection of a pool, to hold for several statements. */
  private async connect(action: string, pool = this.pool): Promise<pg.PoolClient> {
    this.check(action)
    try {
      return await pool.connect()
    } catch (error) {
      throw pgError(error, action, this.location.display)
    }
  }

  /**
   * Run `work` on one connection without the statement guard (maintenance that runs as long as
   * the table is large, e.g. VACUUM of 10M rows after a forget: no transaction can hold it).
   */
  async unguarded<T>(action: string, work: (db: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect(action, this.maintenancePool)
    let reset = false
    try {
      await client.query('SET statement_timeout = 0')
      const value = await work(client)
      await client.query('RESET statement_timeout')
      reset = true
      return value
    } catch (error) {
      throw pgError(error, action, this.location.display)
    } finally {
      // a connection that may still be unguarded is closed, not pooled
      client.release(!reset)
    }
  }

  /**
   * Run `work` in one transaction on one connection; retried when another writer deadlocked it.
   * `maintenance`: on a connection without the client-side guard (a migration lifts the server's).
   */
  async transaction<T>(action: string, work: (db: pg.PoolClient) => Promise<T>, options: { readonly maintenance?: boolean } = {}): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const client = await this.connect(action, options.maintenance === true ? this.maintenancePool : this.pool)
      let broken = false
      try {
        await client.query('BEGIN')
        const value = await work(client)
        await client.query('COMMIT')
        return value
      } catch (error) {
        // a statement the client gave up on is still running on that connection: a ROLLBACK would
        // wait behind it for a second guard; the connection is dropped instead (the server rolls back)
        const cause = error instanceof ShadowStoreError ? error.cause : error
        if (cause instanceof Error && cause.message === 'Query read timeout') broken = true
        else {
          try {
            await client.query('ROLLBACK')
          } catch {
            broken = true
          }
        }
        const code = (error as { code?: unknown }).code ?? ((error as { cause?: { code?: unknown } }).cause?.code)
        if (typeof code === 'string' && RETRYABLE.has(code) && attempt < 5) continue
        throw pgError(error, action, this.location.display)
      } finally {
        client.release(broken)
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    try {
      await Promise.all([this.pool.end(), this.searchPool.end(), this.listPool.end(), this.maintenancePool.end()])
    } catch {
      // closing after the server went away must not throw at shutdown
    }
  }
}

/** A stable 32-bit key for one of the store's advisory locks (migration, bulk load). */
export function lockKey(schema: string): number {
  let hash = 0x811c9dc5
  for (const char of `dsh-shadow:${schema}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193)
  return hash | 0
}

/**
 * Create or upgrade the store's schema (writable opens), or check it (read-only opens). Typed
 * errors: NOT_FOUND (read-only, no store), SCHEMA_TOO_OLD, SCHEMA_TOO_NEW, CORRUPT (the schema
 * holds tables that are not a shadow store).
 */
export async function migrate(connection: PgConnection): Promise<void> {
  const { schema, display } = connection.location
  const versionOf = async (db: Db): Promise<number | undefined> => {
    const meta = await connection.query<{ present: boolean }>('open', 'SELECT to_regclass($1) IS NOT NULL AS present', [`${schema}.meta`], db)
    if (meta[0]?.present !== true) return undefined
    const rows = await connection.query<{ value: string }>('open', "SELECT value FROM meta WHERE key = 'schema_version'", [], db)
    return rows[0] === undefined ? undefined : Number(rows[0].value)
  }
  const tooNew = (version: number): ShadowStoreError =>
    new ShadowStoreError('SCHEMA_TOO_NEW', `shadow store ${display} has schema ${version}; this version understands up to ${PG_SCHEMA_VERSION}`)
  if (connection.readOnly) {
    const version = await versionOf(connection.pool)
    if (version === undefined) throw new ShadowStoreError('NOT_FOUND', `no shadow store at ${display}`)
    if (version > PG_SCHEMA_VERSION) throw tooNew(version)
    if (version < PG_SCHEMA_VERSION) throw new ShadowStoreError('SCHEMA_TOO_OLD', `shadow store ${display} has schema ${version}, older than ${PG_SCHEMA_VERSION}: open it writable once (e.g. start dsh, or any dsh-shadow command without --read-only) to upgrade it`)
    return
  }
  await connection.transaction('migrate', async db => {
    await db.query('SELECT pg_advisory_xact_lock($1)', [lockKey(schema)])
    // an upgrade may rewrite a large table or build its indexes: no statement timeout here
    await db.query('SET LOCAL statement_timeout = 0')
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    let version = await versionOf(db)
    const fresh = version === undefined
    if (version === undefined) {
      const foreign = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename IN ('sessions', 'messages', 'checkpoints')", [schema])
      if ((foreign.rows[0]?.n ?? 0) > 0) throw new ShadowStoreError('CORRUPT', `schema ${schema} of ${display} holds tables that are not a shadow store; name another schema with ?schema=`)
      await db.query('CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)')
      // every row hash of a PostgreSQL store is of the stored (redacted) event
      await db.query("INSERT INTO meta(key, value) VALUES ('row_hash', 'stored')")
      version = 0
    }
    if (version > PG_SCHEMA_VERSION) throw tooNew(version)
    if (version === PG_SCHEMA_VERSION) {
      await restoreTextIndexes(db, schema)
      return
    }
    const trgm = await trgmSchema(db)
    await ensureExtension(db, 'btree_gin')
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= version) continue
      await db.query(migrationSql(migration.sql, trgm))
    }
    await db.query("INSERT INTO meta(key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [String(PG_SCHEMA_VERSION)])
    // a new store has nothing to index: made with the current analyzer, its first open rebuilds nothing
    if (fresh) await db.query("INSERT INTO meta(key, value) VALUES ('analyzer_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [String(ANALYZER_VERSION)])
  }, { maintenance: true })
}

/** The bulk-load mark (bulk.ts) and the lock its loader holds while it runs. */
export const BULK_LOAD_META = 'bulk_load'
export const bulkLockKey = (schema: string): number => lockKey(`${schema}:bulk-load`)

/** A bulk load that died before rebuilding the text indexes: rebuild them now (unless it is still running). */
async function restoreTextIndexes(db: pg.PoolClient, schema: string): Promise<void> {
  const mark = await db.query('SELECT 1 FROM meta WHERE key = $1', [BULK_LOAD_META])
  if (mark.rows.length === 0) return
  const free = await db.query<{ free: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS free', [bulkLockKey(schema)])
  if (free.rows[0]?.free !== true) return
  await db.query(migrationSql(TEXT_INDEXES_SQL, await trgmSchema(db)))
  await db.query('DELETE FROM meta WHERE key = $1', [BULK_LOAD_META])
}

/** The schema pg_trgm lives in (quoted), installing it when the database lacks it. */
export async function trgmSchema(db: pg.PoolClient): Promise<string> {
  return ensureExtension(db, 'pg_trgm')
}

/**
 * The schema an extension the store needs lives in (quoted), installing it (in public) when the
 * database lacks it: pg_trgm (substring search) and btree_gin (the id bucket as a second key of
 * the text indexes). Both ship with the standard server packages.
 */
async function ensureExtension(db: pg.PoolClient, name: 'pg_trgm' | 'btree_gin'): Promise<string> {
  const find = async (): Promise<string | undefined> =>
    (await db.query<{ schema: string }>('SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = $1', [name])).rows[0]?.schema
  const quoted = (schema: string): string => `"${schema.replaceAll('"', '""')}"`
  const found = await find()
  if (found !== undefined) return quoted(found)
  // one database-wide lock: stores in other schemas may be installing it at this moment
  await db.query('SELECT pg_advisory_xact_lock($1)', [lockKey(`(${name})`)])
  const raced = await find()
  if (raced !== undefined) return quoted(raced)
  try {
    await db.query(`CREATE EXTENSION IF NOT EXISTS ${name} SCHEMA public`)
  } catch (error) {
    throw new ShadowStoreError('UNAVAILABLE', `the shadow store needs the ${name} extension and could not install it (${error instanceof Error ? error.message : String(error)}); ask the database owner to run CREATE EXTENSION ${name}`, { cause: error })
  }
  return 'public'
}
