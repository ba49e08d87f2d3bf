/** What changed in sessions since a revision (schema v7; backend.ts SessionChanges). */
import type { SessionChanges } from '../backend.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, toMessage, type Row } from './rows.ts'

/**
 * Each session's revision and its rows stamped after `since`, all in one read transaction: a
 * writer commits a revision with its rows, so the snapshot never holds one without the other.
 * The rows are an index range of `messages_rev`.
 */
export function sessionChanges(conn: SqliteConnection, requests: ReadonlyArray<{ readonly sessionId: string; readonly since: number }>): Array<SessionChanges | undefined> {
  return conn.read('read session changes', () => requests.map(({ sessionId, since }) => {
    const session = conn.stmt('SELECT revision, removed_rev, message_count FROM sessions WHERE session_id = ?').get(sessionId) as Row | undefined
    if (session === undefined) return undefined
    const revision = session['revision'] as number
    const found = revision === since ? [] : conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.rev > ? ORDER BY m.seq`).all(sessionId, since) as Row[]
    return { revision, removedRev: session['removed_rev'] as number, messageCount: session['message_count'] as number, rows: found.map(toMessage), events: found.map(row => row['stored_event'] as Uint8Array | string) }
  }))
}
