/**
 * Session revisions (schema 6, backend.ts SessionChanges) of one PostgreSQL write transaction.
 * Writers lock rows first and session rows last (writes.ts), so a row is written before its
 * session is locked: it is stamped with its session's revision + 1 as read beforehand (`of`), and
 * the session is bumped last (`UPDATE … RETURNING revision`, which waits for another writer of the
 * session to commit and then sees its revision). When such a writer came in between, this
 * transaction's rows of that session are stamped again with the revision it got (`settle`): rare
 * (one session is written by one process), and no new lock (the rows are this transaction's).
 * The session row lock, held to commit, orders a session's revisions in commit order.
 */
import type pg from 'pg'
import { REVISION_FLOOR_META } from '../backend.ts'

/** A new session's revision (and removed_rev), read in the statement that creates it: above every forgotten one's. */
export const REVISION_FLOOR = `(SELECT coalesce(max(value::bigint), 0) FROM meta WHERE key = '${REVISION_FLOOR_META}')`

/**
 * In a forget's transaction, before the session rows go: a session registered again starts above
 * every revision these reached (REVISION_FLOOR_META).
 */
export async function raiseRevisionFloor(db: pg.PoolClient, sessionIds: readonly string[]): Promise<void> {
  await db.query(`INSERT INTO meta(key, value) SELECT $1, (max(revision) + 1)::text FROM sessions WHERE session_id = ANY($2::text[]) HAVING count(*) > 0
    ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value::bigint, excluded.value::bigint)::text`, [REVISION_FLOOR_META, sessionIds])
}

export class PgRevisions {
  /** Each session's revision as read before the rows were written. */
  private readonly known: ReadonlyMap<string, number>
  /** Seqs of the rows each changed session's transaction wrote. */
  private readonly changed = new Map<string, number[]>()
  private readonly removed = new Set<string>()

  private constructor(known: ReadonlyMap<string, number>) {
    this.known = known
  }

  /** The sessions' revisions as they are now (no lock: `settle` corrects a guess that went stale). */
  static async read(db: pg.PoolClient, sessionIds: readonly string[]): Promise<PgRevisions> {
    const found = sessionIds.length === 0 ? [] : (await db.query<{ session_id: string; revision: number }>('SELECT session_id, revision FROM sessions WHERE session_id = ANY($1::text[])', [[...new Set(sessionIds)]])).rows
    return new PgRevisions(new Map(found.map(row => [row.session_id, row.revision])))
  }

  /** Revisions of a transaction that writes no rows (deletes only). */
  static none(): PgRevisions {
    return new PgRevisions(new Map())
  }

  /** The rev to stamp on the session's rows this transaction writes (a guess for a session not stored yet: `settle` restamps). */
  of(sessionId: string): number {
    return (this.known.get(sessionId) ?? 0) + 1
  }

  /** These rows of the session were written, stamped with `of(sessionId)`. */
  change(sessionId: string, seqs: readonly number[]): void {
    if (seqs.length === 0) return
    const list = this.changed.get(sessionId)
    if (list === undefined) this.changed.set(sessionId, [...seqs])
    else list.push(...seqs)
  }

  /** Rows of the session were deleted: its revision moves, and its removed_rev with it. */
  remove(sessionId: string): void {
    this.removed.add(sessionId)
  }

  /** Sessions whose revision this transaction moves, in id order (the order every writer locks them in). */
  sessions(): string[] {
    return [...new Set([...this.changed.keys(), ...this.removed])].toSorted()
  }

  /** The session got `revision` (its bump returned it): restamp its rows when the guess went stale. */
  async settle(db: pg.PoolClient, sessionId: string, revision: number): Promise<void> {
    const seqs = this.changed.get(sessionId)
    if (seqs === undefined || revision === this.of(sessionId)) return
    await db.query('UPDATE messages SET rev = $3 WHERE session_id = $1 AND seq = ANY($2::bigint[])', [sessionId, seqs, revision])
  }

  /** Bump every session this transaction changed, last and in id order, and settle its rows. */
  async bump(db: pg.PoolClient): Promise<void> {
    for (const sessionId of this.sessions()) {
      const removed = this.removed.has(sessionId)
      const bumped = await db.query<{ revision: number }>(
        `UPDATE sessions SET revision = revision + 1${removed ? ', removed_rev = revision + 1' : ''} WHERE session_id = $1 RETURNING revision`, [sessionId])
      const revision = bumped.rows[0]?.revision
      if (revision !== undefined) await this.settle(db, sessionId, revision)
    }
  }
}
