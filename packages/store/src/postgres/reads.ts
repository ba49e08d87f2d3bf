/**
 * Reads by key coalesced: every `getMessage` asked in the same tick (a search reads its winners
 * and their calls at once) is answered by one statement instead of one round trip each, which on
 * a pool of a few connections also queued behind each other.
 */
import type { ShadowMessage } from '../types.ts'
import type { PgConnection } from './connection.ts'
import { MESSAGE_COLUMNS, toMessage } from './rows.ts'

interface Pending {
  readonly sessionId: string
  readonly seq: number
  resolve(message: ShadowMessage | undefined): void
  reject(error: unknown): void
}

export class MessageReads {
  private readonly connection: PgConnection
  private pending: Pending[] | undefined

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
