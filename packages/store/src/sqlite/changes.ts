/** What changed in sessions since a revision (schema v7; backend.ts SessionChanges). */
import type { ChangesRequest, SessionChanges } from '../backend.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, toMessage, type Row } from './rows.ts'

/**
 * Each session's revision and its rows stamped after `since`, all in one read transaction: a
 * writer commits a revision with its rows, so the snapshot never holds one without the other.
 * The rows are an index range of `messages_rev`, read in its order (with `request.bound`, row by
 * row until a bound is reached) and put in seq order here: ordered by seq in SQL, a store someone
 * ran ANALYZE on read every row of the session by its seq index for each delta, and each probe.
 * A page (`request.page`) is a range of the session's seqs, read in that order.
 */
export function sessionChanges(conn: SqliteConnection, requests: readonly ChangesRequest[]): Array<SessionChanges | undefined> {
  return conn.read('read session changes', () => requests.map(({ sessionId, since, page, bound }) => {
    const session = conn.stmt('SELECT revision, removed_rev, message_count FROM sessions WHERE session_id = ?').get(sessionId) as Row | undefined
    if (session === undefined) return undefined
    const revision = session['revision'] as number
    const read = revision === since ? { found: [], complete: true }
      : page !== undefined ? upTo(conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.seq > ? AND m.rev > ? ORDER BY m.seq LIMIT ?`).iterate(sessionId, page.afterSeq, since, page.rows) as IterableIterator<Row>, page.bytes)
        : bound !== undefined
          ? upTo(conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.rev > ? ORDER BY m.rev LIMIT ?`).iterate(sessionId, since, bound.rows) as IterableIterator<Row>, bound.bytes)
          : { found: conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = ? AND m.rev > ? ORDER BY m.rev`).all(sessionId, since) as Row[], complete: true }
    const found = page !== undefined ? read.found : bySeq(read.found)
    return { revision, removedRev: session['removed_rev'] as number, messageCount: session['message_count'] as number, rows: found.map(toMessage), events: found.map(row => row['stored_event'] as Uint8Array | string), complete: read.complete }
  }))
}

function bySeq(rows: Row[]): Row[] {
  return rows.toSorted((a, b) => (a['seq'] as number) - (b['seq'] as number))
}

/**
 * The rows read until the one at which their text reaches `limit` bytes (the statement's LIMIT
 * bounds the rows); `complete`: no row followed that one.
 */
function upTo(rows: IterableIterator<Row>, limit: number): { found: Row[]; complete: boolean } {
  const found: Row[] = []
  let bytes = 0
  try {
    for (let next = rows.next(); next.done !== true; next = rows.next()) {
      const row = next.value
      found.push(row)
      const text = row['text']
      bytes += typeof text === 'string' ? Buffer.byteLength(text) : (text as Uint8Array).byteLength
      if (bytes >= limit) return { found, complete: rows.next().done === true }
    }
    return { found, complete: true }
  } finally {
    // the statement reset, whether read to its end or not
    rows.return?.()
  }
}
