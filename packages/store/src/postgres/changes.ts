/** What changed in sessions since a revision (schema 6; backend.ts SessionChanges). */
import { CANDIDATE_READ_BYTES, type ChangesRequest, type SessionChanges } from '../backend.ts'
import type { PgConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, completeLight, toMessage, type Row } from './rows.ts'

/** No bound (a request without one): above any seq, row count or bytes a bound names. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER
/** Text bytes of a row as a candidate reads it (cut). */
const READ_BYTES = `least(octet_length(m.text), ${CANDIDATE_READ_BYTES})`

/**
 * The rows of one request, by how it is bounded: a page (a range of seqs, in seq order), a
 * bounded delta (in revision order: the index range of (session_id, rev)), or the whole delta.
 * OFFSET 0 keeps each subquery whole, run per session as an index range: flattened into the join,
 * the rev bound stayed a join filter, so every row of the session was read (or of the table,
 * hashed: 34 ms against 1.9 for a 1,000-row delta of 40k rows). A bound cuts at the text bytes read
 * before each row (a running sum, so the server stops at it); `cut_after` marks the row at which it
 * did with a row after it (SessionChanges.complete).
 */
const ROWS = {
  page: `SELECT * FROM (
      SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event, sum(${READ_BYTES}) OVER (ORDER BY m.seq) - ${READ_BYTES} AS bytes_before,
        lead(m.seq) OVER (ORDER BY m.seq) IS NOT NULL AND sum(${READ_BYTES}) OVER (ORDER BY m.seq) >= w.max_bytes AS cut_after
      FROM messages m WHERE m.session_id = s.session_id AND m.seq > w.after_seq AND m.rev > w.since AND s.revision <> w.since
      ORDER BY m.seq LIMIT w.max_rows
    ) p WHERE p.bytes_before < w.max_bytes OFFSET 0`,
  bound: `SELECT * FROM (
      SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event, sum(${READ_BYTES}) OVER (ORDER BY m.rev ROWS UNBOUNDED PRECEDING) - ${READ_BYTES} AS bytes_before,
        lead(m.rev) OVER (ORDER BY m.rev) IS NOT NULL AND sum(${READ_BYTES}) OVER (ORDER BY m.rev ROWS UNBOUNDED PRECEDING) >= w.max_bytes AS cut_after
      FROM messages m WHERE m.session_id = s.session_id AND m.rev > w.since AND s.revision <> w.since
      ORDER BY m.rev LIMIT w.max_rows
    ) p WHERE p.bytes_before < w.max_bytes OFFSET 0`,
  whole: `SELECT ${CANDIDATE_COLUMNS}, m.event_json AS stored_event, false AS cut_after FROM messages m WHERE m.session_id = s.session_id AND m.rev > w.since AND s.revision <> w.since OFFSET 0`,
} as const

/**
 * Each session's revision and its rows stamped after `since`, in one statement (one snapshot: a
 * revision commits with its rows, so none is seen without the other). One result row per changed
 * message, each carrying its session's revision; a session with none still gives one, without a
 * message. (Requests bounded in different ways are asked in a statement each.)
 */
export async function sessionChanges(connection: PgConnection, requests: readonly ChangesRequest[]): Promise<Array<SessionChanges | undefined>> {
  const kindOf = (request: ChangesRequest): keyof typeof ROWS => (request.page !== undefined ? 'page' : request.bound !== undefined ? 'bound' : 'whole')
  const kinds = [...new Set(requests.map(kindOf))]
  const answers: Array<SessionChanges | undefined> = requests.map(() => undefined)
  await Promise.all(kinds.map(async kind => {
    const asked = requests.flatMap((request, at) => (kindOf(request) === kind ? [{ request, at }] : []))
    const rows = await connection.search<Row & { at: number; revision: number; removed_rev: number; message_count: number }>('read session changes', `
      SELECT w.at, s.revision, s.removed_rev, s.message_count, c.*
      FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS w(session_id, since, after_seq, max_rows, max_bytes, at)
      JOIN sessions s ON s.session_id = w.session_id
      LEFT JOIN LATERAL (${ROWS[kind]}) c ON true
      ORDER BY w.at, c.seq`, [
      asked.map(({ request }) => request.sessionId),
      asked.map(({ request }) => request.since),
      asked.map(({ request }) => request.page?.afterSeq ?? -1),
      asked.map(({ request }) => request.page?.rows ?? request.bound?.rows ?? UNBOUNDED),
      asked.map(({ request }) => request.page?.bytes ?? request.bound?.bytes ?? UNBOUNDED),
    ])
    await completeLight((sql, params) => connection.search('read session changes', sql, params), rows)
    for (const row of rows) {
      const at = asked[row.at - 1]!.at
      const answer = (answers[at] ??= { revision: Number(row.revision), removedRev: Number(row.removed_rev), messageCount: Number(row.message_count), rows: [], events: [], complete: true })
      // a session with no row since: its one result row has no message
      if (row['seq'] !== null) {
        answer.rows.push(toMessage(row))
        // the row at which the byte bound stopped the read, with a row after it (left out)
        if (row['cut_after'] === true) (answer as { complete: boolean }).complete = false
        // as event-json.ts reads it: packed (a control byte first), or the JSON itself as text
        const stored = row['stored_event'] as Uint8Array
        ;(answer.events as Array<Uint8Array | string>).push(stored.length > 0 && stored[0]! < 0x20 ? stored : Buffer.from(stored).toString('utf8'))
      }
    }
  }))
  return answers
}
