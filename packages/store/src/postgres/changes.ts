/** What changed in sessions since a revision (schema 6; backend.ts SessionChanges). */
import { CANDIDATE_READ_BYTES, type ChangesRequest, type SessionChanges } from '../backend.ts'
import type { PgConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, toMessage, type Row } from './rows.ts'

/** No bound (a request without a page): above any seq, row count or bytes a page names. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER

/**
 * Each session's revision and its rows stamped after `since`, in one statement (one snapshot: a
 * revision commits with its rows, so none is seen without the other). One result row per changed
 * message, each carrying its session's revision; a session with none still gives one, without a
 * message. A page (`request.page`) is a range of the session's seqs, cut at its rows and at the
 * text bytes read before each row (a running sum, so the server stops at the bound).
 */
export async function sessionChanges(connection: PgConnection, requests: readonly ChangesRequest[]): Promise<Array<SessionChanges | undefined>> {
  if (requests.length === 0) return []
  const paged = requests.some(request => request.page !== undefined)
  const rows = await connection.search<Row & { at: number; revision: number; removed_rev: number; message_count: number }>('read session changes', paged ? `
    SELECT w.at, s.revision, s.removed_rev, s.message_count, c.*
    FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS w(session_id, since, after_seq, page_rows, page_bytes, at)
    JOIN sessions s ON s.session_id = w.session_id
    LEFT JOIN LATERAL (
      SELECT * FROM (
        SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event,
          sum(least(octet_length(m.text), ${CANDIDATE_READ_BYTES})) OVER (ORDER BY m.seq) - least(octet_length(m.text), ${CANDIDATE_READ_BYTES}) AS bytes_before
        FROM messages m WHERE m.session_id = s.session_id AND m.seq > w.after_seq AND m.rev > w.since AND s.revision <> w.since
        ORDER BY m.seq LIMIT w.page_rows
      ) p WHERE p.bytes_before < w.page_bytes OFFSET 0
    ) c ON true
    ORDER BY w.at, c.seq` : `
    SELECT w.at, s.revision, s.removed_rev, s.message_count, c.*
    FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(session_id, since, at)
    JOIN sessions s ON s.session_id = w.session_id
    LEFT JOIN LATERAL (
      -- OFFSET 0 keeps the subquery whole, run per session as an index range of (session_id, rev):
      -- flattened into the join, the rev bound stayed a join filter, so every row of the session
      -- was read (or of the table, hashed: 34 ms against 1.9 for a 1,000-row delta of 40k rows)
      SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event FROM messages m WHERE m.session_id = s.session_id AND m.rev > w.since AND s.revision <> w.since OFFSET 0
    ) c ON true
    ORDER BY w.at, c.seq`, [
    requests.map(request => request.sessionId),
    requests.map(request => request.since),
    ...(paged ? [
      requests.map(request => request.page?.afterSeq ?? -1),
      requests.map(request => request.page?.rows ?? UNBOUNDED),
      requests.map(request => request.page?.bytes ?? UNBOUNDED),
    ] : []),
  ])
  const answers: Array<SessionChanges | undefined> = requests.map(() => undefined)
  for (const row of rows) {
    const at = row.at - 1
    const answer = (answers[at] ??= { revision: Number(row.revision), removedRev: Number(row.removed_rev), messageCount: Number(row.message_count), rows: [], events: [] })
    // a session with no row since: its one result row has no message
    if (row['seq'] !== null) {
      answer.rows.push(toMessage(row))
      // as event-json.ts reads it: packed (a control byte first), or the JSON itself as text
      const stored = row['stored_event'] as Uint8Array
      ;(answer.events as Array<Uint8Array | string>).push(stored.length > 0 && stored[0]! < 0x20 ? stored : Buffer.from(stored).toString('utf8'))
    }
  }
  return answers
}
