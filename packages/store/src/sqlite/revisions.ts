/**
 * Session revisions (schema v7, backend.ts SessionChanges) of one SQLite write transaction. Under
 * the write lock no other connection writes meanwhile, so a changed row is stamped with its
 * session's revision + 1 as read once, and the session takes that revision when the transaction's
 * writes are done (`commit`): once per session, however many of its rows changed.
 */
import type { SqliteConnection } from './connection.ts'
import { REVISION_FLOOR_META } from '../backend.ts'
import type { Row } from './rows.ts'

/** A new session's revision (and removed_rev), read in the statement that creates it: above every forgotten one's. */
export const REVISION_FLOOR = `(SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM meta WHERE key = '${REVISION_FLOOR_META}')`

export class Revisions {
  private readonly conn: SqliteConnection
  private readonly next = new Map<string, number>()
  private readonly changed = new Set<string>()
  private readonly removed = new Set<string>()

  constructor(conn: SqliteConnection) {
    this.conn = conn
  }

  /** The revision this transaction stamps on the session's changed rows (nothing is counted yet). */
  of(sessionId: string): number {
    let revision = this.next.get(sessionId)
    if (revision === undefined) {
      // a session not stored yet starts where a new session row would (REVISION_FLOOR)
      const row = this.conn.stmt(`SELECT coalesce((SELECT revision FROM sessions WHERE session_id = ?), ${REVISION_FLOOR}) AS revision`).get(sessionId) as Row
      revision = (row['revision'] as number) + 1
      this.next.set(sessionId, revision)
    }
    return revision
  }

  /** A row of the session changed: its revision moves at commit. Returns the row's rev. */
  change(sessionId: string): number {
    this.changed.add(sessionId)
    return this.of(sessionId)
  }

  /** Rows of the session were deleted: its revision moves, and its removed_rev with it. */
  remove(sessionId: string): void {
    this.change(sessionId)
    this.removed.add(sessionId)
  }

  /** Give each changed session its new revision, in the caller's transaction. */
  commit(): void {
    const set = this.conn.stmt('UPDATE sessions SET revision = ?1, removed_rev = CASE WHEN ?2 THEN ?1 ELSE removed_rev END WHERE session_id = ?3')
    for (const sessionId of this.changed) set.run(this.next.get(sessionId)!, this.removed.has(sessionId) ? 1 : 0, sessionId)
  }
}
