/** What changed in sessions since a revision (schema v7; backend.ts SessionChanges). */
import type { ChangesRequest, SessionChanges } from '../backend.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, toMessage, type Row } from './rows.ts'

/**
 * Each session's revision and its rows stamped after `since`, all in one read transaction: a
 * writer commits a revision with its rows, so the snapshot never holds one without the other.
 * The rows are an index range of `messages_rev`; a page (`request.page`) a range of the session's
 * seqs, read row by row until its bounds are reached.
 */
export function sessionChanges(conn: SqliteConnection, requests: readonly ChangesRequest[]): Array<SessionChanges | undefined> {
  return conn.read('read session changes', () => requests.map(({ sessionId, since, page }) => {
    const session = conn.stmt('SELECT revision, removed_rev, message_count FROM sessions WHERE session_id = ?').get(sessionId) as Row | undefined
    if (session === undefined) return undefined
    const revision = session['revision'] as number
    const found = revision === since ? [] : page === undefined
      ? conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.rev > ? ORDER BY m.seq`).all(sessionId, since) as Row[]
      : pageOf(conn, sessionId, since, page)
    return { revision, removedRev: session['removed_rev'] as number, messageCount: session['message_count'] as number, rows: found.map(toMessage), events: found.map(row => row['stored_event'] as Uint8Array | string) }
  }))
}

/** Rows of one page: above `afterSeq`, in seq order, until `rows` rows or `bytes` bytes of text read. */
function pageOf(conn: SqliteConnection, sessionId: string, since: number, page: NonNullable<ChangesRequest['page']>): Row[] {
  const found: Row[] = []
  let bytes = 0
  const rows = conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.seq > ? AND m.rev > ? ORDER BY m.seq LIMIT ?`)
    .iterate(sessionId, page.afterSeq, since, page.rows) as Iterable<Row>
  for (const row of rows) {
    found.push(row)
    const text = row['text']
    bytes += typeof text === 'string' ? Buffer.byteLength(text) : (text as Uint8Array).byteLength
    if (bytes >= page.bytes) break
  }
  return found
}
