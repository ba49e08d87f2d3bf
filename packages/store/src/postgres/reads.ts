/**
 * Reads coalesced: every `getMessage` asked in the same tick (a search reads its winners and
 * their calls at once) is answered by one statement instead of one round trip each, which on a
 * pool of a few connections also queued behind each other; so is every `readMessages` of one
 * tick (a search's question/answer lookups, one per asking candidate: 4-7 at once).
 */
import type { MessageMark, ReadQuery } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
import type { ShadowMessage } from '../types.ts'
import { type PgConnection, unreachable } from './connection.ts'
import { deepLineage } from '../filter.ts'
import { filterSql, lineageFrom, MESSAGE_COLUMNS, Params, toMessage } from './rows.ts'

interface Pending {
  readonly sessionId: string
  readonly seq: number
  resolve(message: ShadowMessage | undefined): void
  reject(error: unknown): void
}

interface PendingMarks {
  readonly sessionId: string
  readonly seqs: readonly number[]
  resolve(marks: MessageMark[]): void
  reject(error: unknown): void
}

interface PendingRange {
  readonly query: ReadQuery
  resolve(messages: ShadowMessage[]): void
  reject(error: unknown): void
}

export class MessageReads {
  private readonly connection: PgConnection
  private pending: Pending[] | undefined
  private ranges: PendingRange[] | undefined
  private marking: PendingMarks[] | undefined

  constructor(connection: PgConnection) {
    this.connection = connection
  }

  read(sessionId: string, seq: number): Promise<ShadowMessage | undefined> {
    // a key the batch's typed arrays could not carry is asked alone, as before (its error is its own)
    if (typeof sessionId !== 'string' || !Number.isSafeInteger(seq)) return this.one(sessionId, seq)
    return new Promise((resolve, reject) => {
      if (this.pending === undefined) {
        this.pending = []
        // microtask: the calls made by one synchronous loop (Promise.all over a map) join one batch
        queueMicrotask(() => void this.flush())
      }
      this.pending.push({ sessionId, seq, resolve, reject })
    })
  }

  /**
   * Hash and marks of these seqs of a session's own rows (ShadowBackend.messageHashesFor), in seq
   * order; the calls of one tick (the write-ahead check asks each owner of a deep lineage at once)
   * are answered by one statement.
   */
  marks(sessionId: string, seqs: readonly number[]): Promise<MessageMark[]> {
    if (seqs.length === 0) return Promise.resolve([])
    return new Promise((resolve, reject) => {
      if (this.marking === undefined) {
        this.marking = []
        queueMicrotask(() => void this.flushMarks())
      }
      this.marking.push({ sessionId, seqs, resolve, reject })
    })
  }

  private async flushMarks(): Promise<void> {
    const batch = this.marking ?? []
    this.marking = undefined
    try {
      if (batch.length === 1) {
        batch[0]!.resolve(markRows(await this.connection.query('read hashes', 'SELECT seq, hash, time, elided_by, expired_at FROM messages WHERE session_id = $1 AND seq = ANY($2::bigint[]) ORDER BY seq', [batch[0]!.sessionId, [...batch[0]!.seqs]])))
        return
      }
      // each call's seqs once (a seq asked twice is one row, as `= ANY` answers), tagged with the call
      const sessions: string[] = []
      const seqs: number[] = []
      const calls: number[] = []
      batch.forEach((entry, index) => {
        for (const seq of new Set(entry.seqs)) {
          sessions.push(entry.sessionId)
          seqs.push(seq)
          calls.push(index)
        }
      })
      const rows = await this.connection.query('read hashes', `
        SELECT w.call, m.seq, m.hash, m.time, m.elided_by, m.expired_at
        FROM unnest($1::text[], $2::bigint[], $3::int[]) AS w(session_id, seq, call)
        JOIN messages m ON m.session_id = w.session_id AND m.seq = w.seq ORDER BY w.call, m.seq`, [sessions, seqs, calls])
      const answers = batch.map(() => [] as Array<Record<string, unknown>>)
      for (const row of rows) answers[row['call'] as number]!.push(row)
      batch.forEach((entry, index) => entry.resolve(markRows(answers[index]!)))
    } catch (error) {
      for (const entry of batch) entry.reject(error)
    }
  }

  /** Rows of one filter in seq order, up to its limit (ShadowBackend.readMessages). */
  readRange(query: ReadQuery): Promise<ShadowMessage[]> {
    return new Promise((resolve, reject) => {
      if (this.ranges === undefined) {
        this.ranges = []
        queueMicrotask(() => void this.flushRanges())
      }
      this.ranges.push({ query, resolve, reject })
    })
  }

  private async range(query: ReadQuery): Promise<ShadowMessage[]> {
    const params = new Params()
    const sql = rangeSql(query, params)
    return (await this.connection.query('read messages', sql, params.values)).map(toMessage)
  }

  private async flushRanges(): Promise<void> {
    const batch = this.ranges ?? []
    this.ranges = undefined
    if (batch.length === 1) {
      await this.range(batch[0]!.query).then(batch[0]!.resolve, batch[0]!.reject)
      return
    }
    // one statement, one snapshot: each read a branch, tagged with its place in the batch
    const params = new Params()
    let sql: string
    try {
      sql = batch.map((entry, index) => `(SELECT ${index} AS wanted_at, x.* FROM (${rangeSql(entry.query, params)}) x)`).join(' UNION ALL ')
    } catch {
      // a read the SQL cannot express: each asked alone, with its own answer or error
      await Promise.all(batch.map(entry => this.range(entry.query).then(entry.resolve, entry.reject)))
      return
    }
    let rows: Array<Record<string, unknown>>
    try {
      rows = await this.connection.query('read messages', sql, params.values)
    } catch (error) {
      // a store that is down fails them all at once; any other failure is asked alone, so one bad
      // read does not fail the others
      if (unreachable(error instanceof ShadowStoreError ? error.cause : error)) {
        for (const entry of batch) entry.reject(error)
        return
      }
      await Promise.all(batch.map(entry => this.range(entry.query).then(entry.resolve, entry.reject)))
      return
    }
    const answers = batch.map(() => [] as Array<Record<string, unknown>>)
    for (const row of rows) answers[row['wanted_at'] as number]!.push(row)
    batch.forEach((entry, index) => {
      // a branch's rows in its own order (UNION ALL keeps no order of its own): seq, stable for ties
      const order = entry.query.descending === true ? -1 : 1
      entry.resolve(answers[index]!.map(toMessage).toSorted((a, b) => order * (a.seq - b.seq)))
    })
  }

  private async one(sessionId: string, seq: number): Promise<ShadowMessage | undefined> {
    const [row] = await this.connection.query('read message', `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = $1 AND m.seq = $2`, [sessionId, seq])
    return row === undefined ? undefined : toMessage(row)
  }

  private async flush(): Promise<void> {
    const batch = this.pending ?? []
    this.pending = undefined
    try {
      if (batch.length === 1) {
        batch[0]!.resolve(await this.one(batch[0]!.sessionId, batch[0]!.seq))
        return
      }
      // one snapshot for all of them; a key asked twice is answered twice from the same row
      const rows = await this.connection.query('read messages', `
        SELECT w.i::int AS wanted_at, ${MESSAGE_COLUMNS}
        FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(session_id, seq, i)
        JOIN messages m ON m.session_id = w.session_id AND m.seq = w.seq`,
      [batch.map(entry => entry.sessionId), batch.map(entry => entry.seq)])
      const found = new Map(rows.map(row => [row['wanted_at'] as number, toMessage(row)]))
      batch.forEach((entry, index) => entry.resolve(found.get(index + 1)))
    } catch (error) {
      for (const entry of batch) entry.reject(error)
    }
  }
}

/**
 * One read's statement (alias `m`). Lineage segments are disjoint seq ranges of one history, so
 * seq orders them globally.
 */
function rangeSql(query: ReadQuery, params: Params): string {
  // a deep lineage: its rows joined against the bound list (each session one index range)
  const deep = query.wide === undefined && deepLineage(query.segments)
  const from = deep ? lineageFrom(query.segments, params) : 'messages m'
  const where = filterSql(query, params, deep ? 'joined' : false)
  const order = query.descending === true ? 'DESC' : 'ASC'
  return `SELECT ${MESSAGE_COLUMNS} FROM ${from} WHERE ${where} ORDER BY m.seq ${order} LIMIT ${params.param(Math.max(0, Math.floor(query.limit)))}`
}

function markRows(rows: ReadonlyArray<Record<string, unknown>>): MessageMark[] {
  return rows.map(row => ({ seq: row['seq'] as number, hash: row['hash'] as string, time: row['time'] as number, elidedBy: row['elided_by'] as string | null, expiredAt: row['expired_at'] as number | null }))
}
