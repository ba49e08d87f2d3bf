/**
 * Message writes on PostgreSQL: idempotent upserts keyed by (session, seq) for many concurrent
 * writers. Existing rows are locked first, new rows inserted with ON CONFLICT DO NOTHING (another
 * writer may insert the same row at the same moment: it is then compared like an existing one),
 * session counters and revisions bumped last, all in one transaction; rows in (session, seq) order
 * and sessions in id order so two writers never wait on each other in a cycle.
 */
import type pg from 'pg'
import type { ForgetCounts, PreparedMessage } from '../backend.ts'
import { ShadowStoreError } from '../errors.ts'
import { failpoint } from '../failpoint.ts'
import type { AppendResult } from '../types.ts'
import { PgRevisions, raiseRevisionFloor, REVISION_FLOOR } from './revisions.ts'
import { storedEventJson } from './rows.ts'
import { gramsText, tsvectorText } from './tokens.ts'

interface Touched {
  added: number
  maxSeq: number
  minTime: number
  maxTime: number
}

const COLUMNS = ['session_id', 'seq', 'shadow_id', 'event_type', 'role', 'source_kind', 'turn', 'step', 'tool_name', 'call_id', 'time', 'tokens', 'hash', 'event_json', 'event_bytes', 'text', 'words', 'grams', 'rev'] as const
const TYPES = ['text', 'bigint', 'text', 'text', 'text', 'text', 'bigint', 'bigint', 'text', 'text', 'bigint', 'bigint', 'text', 'bytea', 'bigint', 'bytea', 'text', 'text', 'bigint'] as const

function columnsOf(rows: readonly PreparedMessage[], revisions: PgRevisions): unknown[][] {
  const columns: unknown[][] = COLUMNS.map(() => [])
  for (const row of rows) {
    const values = [row.sessionId, row.seq, row.shadowId, row.eventType, row.role, row.sourceKind, row.turn, row.step, row.toolName, row.callId, row.time, row.tokens, row.hash,
      storedEventJson(row.eventJson, row.text), Buffer.byteLength(row.eventJson, 'utf8'), Buffer.from(row.text, 'utf8'), tsvectorText(row.words, row.tag, row.days), gramsText(row.grams),
      revisions.of(row.sessionId)]
    values.forEach((value, index) => columns[index]!.push(value))
  }
  return columns
}

const UNNEST = `unnest(${TYPES.map((type, index) => `$${index + 1}::${type}[]`).join(', ')}) AS r(${COLUMNS.join(', ')})`
/**
 * New rows take ids in the batch's own order (`ord`: each row's place in the append), as SQLite
 * gives them, and go into the unique index sorted by (session, seq), so concurrent batches never
 * wait on each other's keys crosswise. Ids in (session, seq) order put one batch spanning sessions
 * out of arrival order in every newest-first list: a store-wide search of 3,000 rows alternating two
 * sessions found only the first session's rows, SQLite both (adversarial hunt). The ids are drawn
 * after the sort on `ord` (PostgreSQL evaluates a volatile select list after ORDER BY).
 */
const INSERT_SQL = `
  WITH r AS MATERIALIZED (SELECT * FROM unnest(${[...TYPES, 'bigint'].map((type, index) => `$${index + 1}::${type}[]`).join(', ')}) AS r(${COLUMNS.join(', ')}, ord)),
    ids AS MATERIALIZED (SELECT r.ord, nextval(pg_get_serial_sequence('messages', 'id')) AS id FROM r ORDER BY r.ord)
  INSERT INTO messages(id, ${COLUMNS.join(', ')}) OVERRIDING SYSTEM VALUE
  SELECT ids.id, ${COLUMNS.map(column => column === 'words' ? 'r.words::tsvector' : `r.${column}`).join(', ')} FROM r JOIN ids ON ids.ord = r.ord
  ORDER BY r.session_id, r.seq
  ON CONFLICT (session_id, seq) DO NOTHING
  RETURNING session_id, seq`
const UPDATE_SQL = `
  UPDATE messages m SET event_type = r.event_type, role = r.role, source_kind = r.source_kind, turn = r.turn, step = r.step, tool_name = r.tool_name,
    call_id = r.call_id, time = r.time, tokens = r.tokens, hash = r.hash, event_json = r.event_json, event_bytes = r.event_bytes, text = r.text, words = r.words::tsvector, grams = r.grams,
    elided_by = NULL, expired_at = NULL, rev = r.rev
  FROM ${UNNEST} WHERE m.session_id = r.session_id AND m.seq = r.seq`

const key = (sessionId: string, seq: number): string => `${sessionId}\u0000${seq}`

const BUMP_SQL = `
  UPDATE sessions s SET message_count = s.message_count + t.added, last_seq = greatest(s.last_seq, t.max_seq),
    first_time = least(coalesce(s.first_time, t.min_time), t.min_time), last_time = greatest(coalesce(s.last_time, t.max_time), t.max_time), revision = s.revision + 1
  FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS t(session_id, added, max_seq, min_time, max_time)
  WHERE s.session_id = t.session_id RETURNING s.session_id, s.revision`

/**
 * Each session's counters and revision moved together, under its row lock: the new revisions (a
 * session not stored is left out). Several sessions are locked in id order by a statement of its own
 * first, as every writer locks them (an UPDATE … FROM visits rows in its plan's order, and two such
 * could wait on each other in a cycle), then updated by one statement: an append spanning 2,000
 * sessions made 2,000 round trips here.
 */
async function bumpCounters(db: pg.PoolClient, sessionIds: readonly string[], touched: ReadonlyMap<string, Touched>): Promise<Map<string, number>> {
  if (sessionIds.length === 0) return new Map()
  if (sessionIds.length > 1) await db.query('SELECT 1 FROM sessions WHERE session_id = ANY($1::text[]) ORDER BY session_id FOR UPDATE', [sessionIds])
  const entries = sessionIds.map(sessionId => touched.get(sessionId)!)
  const result = await db.query<{ session_id: string; revision: number }>(BUMP_SQL, [sessionIds, ...(['added', 'maxSeq', 'minTime', 'maxTime'] as const).map(field => entries.map(entry => entry[field]))])
  return new Map(result.rows.map(row => [row.session_id, row.revision]))
}

/** Write one batch in the caller's transaction. */
export async function appendRows(db: pg.PoolClient, input: readonly PreparedMessage[]): Promise<AppendResult> {
  // Within a batch a later row for the same (session, seq) wins, as if written one after another.
  const last = new Map<string, PreparedMessage>()
  const order = new Map<string, number>()
  input.forEach((row, at) => {
    last.set(key(row.sessionId, row.seq), row)
    order.set(key(row.sessionId, row.seq), at)
  })
  const rows = [...last.values()].toSorted((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : a.seq - b.seq))
  let unchanged = input.length - rows.length
  let written = 0
  let replaced = 0
  const sessions = [...new Set(rows.map(row => row.sessionId))]
  const revisions = await PgRevisions.read(db, sessions)
  const stored = new Map<string, string>()
  const lockExisting = async (targets: readonly PreparedMessage[]): Promise<void> => {
    if (targets.length === 0) return
    const found = await db.query<{ session_id: string; seq: number; hash: string }>(
      'SELECT session_id, seq, hash FROM messages WHERE (session_id, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[])) ORDER BY session_id, seq FOR UPDATE',
      [targets.map(row => row.sessionId), targets.map(row => row.seq)],
    )
    for (const row of found.rows) stored.set(key(row.session_id, row.seq), row.hash)
  }
  await lockExisting(rows)
  const fresh = rows.filter(row => !stored.has(key(row.sessionId, row.seq)))
  const inserted = new Set<string>()
  if (fresh.length > 0) {
    const result = await db.query<{ session_id: string; seq: number }>(INSERT_SQL, [...columnsOf(fresh, revisions), fresh.map(row => order.get(key(row.sessionId, row.seq))!)])
    for (const row of result.rows) inserted.add(key(row.session_id, row.seq))
    // a kill here leaves an open transaction: PostgreSQL must roll all of it back
    if (inserted.size > 0) failpoint('store.mid-append')
  }
  written = inserted.size
  // rows another writer inserted between our lock and our insert: compare them as existing rows
  await lockExisting(fresh.filter(row => !inserted.has(key(row.sessionId, row.seq))))
  const changed: PreparedMessage[] = []
  for (const row of rows) {
    const id = key(row.sessionId, row.seq)
    if (inserted.has(id)) continue
    if (stored.get(id) === row.hash) unchanged += 1
    else changed.push(row)
  }
  if (changed.length > 0) {
    await db.query(UPDATE_SQL, columnsOf(changed, revisions))
    await db.query('DELETE FROM message_calls WHERE (session_id, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))', [changed.map(row => row.sessionId), changed.map(row => row.seq)])
    replaced = changed.length
  }
  const calls = [...rows.filter(row => inserted.has(key(row.sessionId, row.seq))), ...changed]
    .filter(row => row.role === 'assistant' && row.callId !== null)
    .flatMap(row => row.callId!.split(' ').filter(call => call.length > 0).map(call => ({ sessionId: row.sessionId, call, seq: row.seq })))
  if (calls.length > 0) {
    await db.query('INSERT INTO message_calls(session_id, call_id, seq) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) ON CONFLICT DO NOTHING',
      [calls.map(call => call.sessionId), calls.map(call => call.call), calls.map(call => call.seq)])
  }
  const touched = new Map<string, Touched>()
  for (const row of rows) {
    const id = key(row.sessionId, row.seq)
    if (!inserted.has(id) && stored.get(id) === row.hash) continue
    const entry = touched.get(row.sessionId) ?? { added: 0, maxSeq: -1, minTime: Number.POSITIVE_INFINITY, maxTime: Number.NEGATIVE_INFINITY }
    if (inserted.has(id)) entry.added += 1
    entry.maxSeq = Math.max(entry.maxSeq, row.seq)
    entry.minTime = Math.min(entry.minTime, row.time)
    entry.maxTime = Math.max(entry.maxTime, row.time)
    touched.set(row.sessionId, entry)
    revisions.change(row.sessionId, [row.seq])
  }
  const bumps = revisions.sessions()
  const bumped = await bumpCounters(db, bumps, touched)
  for (const sessionId of bumps) {
    let revision = bumped.get(sessionId)
    if (revision === undefined) {
      // Another host forgot the session between the store's registration check and this commit: its
      // rows are gone, ours are not. Register it again (the rows carry its tag) rather than leave
      // rows that belong to no session.
      const tag = rows.find(row => row.sessionId === sessionId)!.tag
      await db.query(`INSERT INTO sessions(session_id, tag, revision, removed_rev) VALUES ($1, $2, ${REVISION_FLOOR}, ${REVISION_FLOOR}) ON CONFLICT DO NOTHING`, [sessionId, tag])
      revision = (await bumpCounters(db, [sessionId], touched)).get(sessionId)
      if (revision === undefined) throw new ShadowStoreError('CONFLICT', `session ${sessionId} was forgotten while this batch was written and its tag ${tag} is taken; retry the write`)
    }
    await revisions.settle(db, sessionId, revision)
  }
  return { written, unchanged, replaced }
}

/**
 * Delete these sessions outright in the caller's transaction: rows (their index entries are
 * columns of the row), call links, checkpoints, recalls, session rows. Sessions in id order, as
 * every writer locks them.
 */
export async function forgetRows(db: pg.PoolClient, sessionIds: readonly string[]): Promise<ForgetCounts> {
  const ids = [...new Set(sessionIds)].toSorted()
  const locked = await db.query('SELECT session_id FROM sessions WHERE session_id = ANY($1::text[]) ORDER BY session_id FOR UPDATE', [ids])
  await raiseRevisionFloor(db, ids)
  await db.query('DELETE FROM message_calls WHERE session_id = ANY($1::text[])', [ids])
  const messages = await db.query('DELETE FROM messages WHERE session_id = ANY($1::text[])', [ids])
  const checkpoints = await db.query('DELETE FROM checkpoints WHERE session_id = ANY($1::text[])', [ids])
  const recalls = await db.query('DELETE FROM recalls WHERE session_id = ANY($1::text[])', [ids])
  await db.query('DELETE FROM sessions WHERE session_id = ANY($1::text[])', [ids])
  return { sessions: locked.rowCount ?? 0, messages: messages.rowCount ?? 0, checkpoints: checkpoints.rowCount ?? 0, recalls: recalls.rowCount ?? 0 }
}

/** Set a session's counters from its rows (after rows were removed or copied in). */
export async function recountSession(db: pg.PoolClient, sessionId: string): Promise<void> {
  await db.query(`
    UPDATE sessions s SET message_count = c.n, last_seq = coalesce(c.max_seq, -1), first_time = c.min_time, last_time = c.max_time
    FROM (SELECT count(*) AS n, max(seq) AS max_seq, min(time) AS min_time, max(time) AS max_time FROM messages WHERE session_id = $1) c
    WHERE s.session_id = $1`, [sessionId])
}
