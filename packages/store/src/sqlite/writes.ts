/** Row writes: sessions, messages with their index entries, elision marks, checkpoints, recalls, forgetting sessions. */
import { REVISION_FLOOR_META, VACUUM_DUE_META, type CheckpointDerived, type ForgetCounts, type PreparedMessage } from '../backend.ts'
import { sessionConflict } from '../errors.ts'
import { failpoint } from '../failpoint.ts'
import type { AppendResult, CheckpointInput, RecallInput, ShadowSessionInput } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { packEventJson } from '../event-json.ts'
import { indexMessage, unindexMessage } from './index-rows.ts'
import { REVISION_FLOOR, Revisions } from './revisions.ts'
import { encodeText, type Row } from './rows.ts'

/**
 * Meta key: the highest message id a delete may have freed. SQLite gives a new row max(id) + 1,
 * so deleting the newest rows would hand their ids to the next rows written; a search that listed
 * ids before the delete (listIds, then candidateRows) would then read rows it never matched, of
 * any session. New rows start above this mark, so an id names one row for the store's lifetime.
 */
const ID_FLOOR = 'message_id_floor'

/** Before deleting rows: no id up to the current highest may be handed out again. */
function holdIds(conn: SqliteConnection): void {
  conn.stmt(`INSERT INTO meta(key, value) SELECT ?1, newest FROM (SELECT max(id) AS newest FROM messages) WHERE newest IS NOT NULL
    ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`).run(ID_FLOOR)
}

/** The id the next new row must take (above every id ever deleted), or null for SQLite's own choice. */
function nextId(conn: SqliteConnection): number | null {
  const floor = conn.meta(ID_FLOOR)
  if (floor === undefined) return null
  const newest = ((conn.stmt('SELECT max(id) AS n FROM messages').get() as Row)['n'] as number | null) ?? 0
  return newest > Number(floor) ? null : Number(floor) + 1
}

export function upsertSession(conn: SqliteConnection, input: ShadowSessionInput & { readonly tag: string }): void {
  conn.guard('write session', () => {
    conn.stmt(`
      INSERT INTO sessions(session_id, tag, parent_session_id, fork_seq, workspace, created_at, revision, removed_rev)
      VALUES (?, ?, ?, ?, ?, ?, ${REVISION_FLOOR}, ${REVISION_FLOOR})
      ON CONFLICT(session_id) DO UPDATE SET
        parent_session_id = coalesce(excluded.parent_session_id, sessions.parent_session_id),
        fork_seq = coalesce(excluded.fork_seq, sessions.fork_seq),
        workspace = coalesce(excluded.workspace, sessions.workspace),
        created_at = coalesce(sessions.created_at, excluded.created_at)
    `).run(input.sessionId, input.tag, input.parentSessionId ?? null, input.forkSeq ?? null, input.workspace ?? null, input.createdAt ?? null)
  })
}

/** Register sessions bare unless stored, in one transaction (backend.ts addSessions). */
export function addSessions(conn: SqliteConnection, sessions: ReadonlyArray<{ readonly sessionId: string; readonly tag: string }>): void {
  if (sessions.length === 0) return
  conn.guard('write session', () => conn.transaction(() => {
    const insert = conn.stmt(`INSERT INTO sessions(session_id, tag, revision, removed_rev) VALUES (?, ?, ${REVISION_FLOOR}, ${REVISION_FLOOR}) ON CONFLICT DO NOTHING`)
    const find = conn.stmt('SELECT tag FROM sessions WHERE session_id = ?')
    for (const session of sessions) {
      insert.run(session.sessionId, session.tag)
      const stored = (find.get(session.sessionId) as Row | undefined)?.['tag']
      if (stored !== session.tag) throw sessionConflict(conn.path, session, stored as string | undefined)
    }
  }))
}

export function appendMessages(conn: SqliteConnection, rows: readonly PreparedMessage[]): AppendResult {
  if (rows.length === 0) return { written: 0, unchanged: 0, replaced: 0 }
  return conn.guard('append messages', () => conn.transaction(() => {
    let written = 0
    let unchanged = 0
    let replaced = 0
    const touched = new Map<string, { added: number; maxSeq: number; minTime: number; maxTime: number }>()
    const revisions = new Revisions(conn)
    const find = conn.stmt('SELECT id, hash FROM messages WHERE session_id = ? AND seq = ?')
    const insert = conn.stmt(`
      INSERT INTO messages(id, session_id, seq, shadow_id, event_type, role, source_kind, turn, step, tool_name, call_id, time, tokens, hash, event_json, event_bytes, text, rev)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    `)
    // the first new row above the freed ids; SQLite's max(id) + 1 is right for the rest
    let first = nextId(conn)
    const update = conn.stmt(`
      UPDATE messages SET event_type = ?, role = ?, source_kind = ?, turn = ?, step = ?, tool_name = ?, call_id = ?, time = ?, tokens = ?, hash = ?, event_json = ?, event_bytes = ?, text = ?, elided_by = NULL, expired_at = NULL, rev = ?
      WHERE id = ?
    `)
    const deleteCalls = conn.stmt('DELETE FROM message_calls WHERE session_id = ? AND seq = ?')
    const insertCall = conn.stmt('INSERT OR IGNORE INTO message_calls(session_id, call_id, seq) VALUES (?, ?, ?)')
    for (const row of rows) {
      const existing = find.get(row.sessionId, row.seq) as Row | undefined
      let id: number
      if (existing !== undefined) {
        if (existing['hash'] === row.hash) {
          unchanged += 1
          continue
        }
        id = existing['id'] as number
        update.run(row.eventType, row.role, row.sourceKind, row.turn, row.step, row.toolName, row.callId, row.time, row.tokens, row.hash, packEventJson(row.eventJson, row.text, row.time), Buffer.byteLength(row.eventJson, 'utf8'), encodeText(row.text), revisions.change(row.sessionId), id)
        unindexMessage(conn, id)
        deleteCalls.run(row.sessionId, row.seq)
        replaced += 1
      } else {
        const result = insert.run(first, row.sessionId, row.seq, row.shadowId, row.eventType, row.role, row.sourceKind, row.turn, row.step, row.toolName, row.callId, row.time, row.tokens, row.hash, packEventJson(row.eventJson, row.text, row.time), Buffer.byteLength(row.eventJson, 'utf8'), encodeText(row.text), revisions.change(row.sessionId))
        id = Number(result.lastInsertRowid)
        first = null
        written += 1
      }
      indexMessage(conn, id, row, row.tag)
      if (row.role === 'assistant' && row.callId !== null) for (const call of row.callId.split(' ')) if (call.length > 0) insertCall.run(row.sessionId, call, row.seq)
      // a kill here leaves an open transaction: SQLite must roll all of it back
      if (written + replaced === 1) failpoint('store.mid-append')
      const entry = touched.get(row.sessionId) ?? { added: 0, maxSeq: -1, minTime: Number.POSITIVE_INFINITY, maxTime: Number.NEGATIVE_INFINITY }
      if (existing === undefined) entry.added += 1
      entry.maxSeq = Math.max(entry.maxSeq, row.seq)
      entry.minTime = Math.min(entry.minTime, row.time)
      entry.maxTime = Math.max(entry.maxTime, row.time)
      touched.set(row.sessionId, entry)
    }
    const bump = conn.stmt(`
      UPDATE sessions SET
        message_count = message_count + ?,
        last_seq = max(last_seq, ?),
        first_time = min(coalesce(first_time, ?), ?),
        last_time = max(coalesce(last_time, ?), ?)
      WHERE session_id = ?
    `)
    for (const [sessionId, entry] of touched) {
      bump.run(entry.added, entry.maxSeq, entry.minTime, entry.minTime, entry.maxTime, entry.maxTime, sessionId)
    }
    revisions.commit()
    return { written, unchanged, replaced }
  }))
}

export function deleteMessages(conn: SqliteConnection, sessionId: string, seqs: readonly number[]): number {
  if (seqs.length === 0) return 0
  return conn.guard('delete messages', () => conn.transaction(() => {
    const find = conn.stmt('SELECT id FROM messages WHERE session_id = ? AND seq = ?')
    const remove = conn.stmt('DELETE FROM messages WHERE id = ?')
    const removeCalls = conn.stmt('DELETE FROM message_calls WHERE session_id = ? AND seq = ?')
    holdIds(conn)
    let removed = 0
    for (const seq of seqs) {
      const row = find.get(sessionId, seq) as Row | undefined
      if (row === undefined) continue
      const id = row['id'] as number
      unindexMessage(conn, id)
      removeCalls.run(sessionId, seq)
      remove.run(id)
      removed += 1
    }
    const revisions = new Revisions(conn)
    if (removed > 0) revisions.remove(sessionId)
    revisions.commit()
    conn.stmt(`
      UPDATE sessions SET
        message_count = (SELECT count(*) FROM messages WHERE session_id = ?1),
        last_seq = coalesce((SELECT max(seq) FROM messages WHERE session_id = ?1), -1),
        first_time = (SELECT min(time) FROM messages WHERE session_id = ?1),
        last_time = (SELECT max(time) FROM messages WHERE session_id = ?1)
      WHERE session_id = ?1
    `).run(sessionId)
    return removed
  }))
}

/** Delete these sessions outright: rows, index entries, call links, checkpoints, recalls, session rows. */
export function forgetSessions(conn: SqliteConnection, sessionIds: readonly string[], options: { readonly vacuumDue?: boolean } = {}): ForgetCounts {
  return conn.guard('forget sessions', () => conn.transaction(() => {
    const ids = conn.stmt('SELECT id FROM messages WHERE session_id = ?')
    const counts = { sessions: 0, messages: 0, checkpoints: 0, recalls: 0 }
    holdIds(conn)
    // a session registered again starts above every revision these reached (REVISION_FLOOR_META)
    const floor = conn.stmt(`INSERT INTO meta(key, value) SELECT ?1, revision + 1 FROM sessions WHERE session_id = ?2
      ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`)
    for (const sessionId of sessionIds) {
      floor.run(REVISION_FLOOR_META, sessionId)
      // contentless FTS5 rows can only be deleted by rowid, before the messages go
      for (const row of ids.all(sessionId) as Row[]) unindexMessage(conn, row['id'] as number)
      conn.stmt('DELETE FROM message_calls WHERE session_id = ?').run(sessionId)
      counts.messages += Number(conn.stmt('DELETE FROM messages WHERE session_id = ?').run(sessionId).changes)
      counts.checkpoints += Number(conn.stmt('DELETE FROM checkpoints WHERE session_id = ?').run(sessionId).changes)
      counts.recalls += Number(conn.stmt('DELETE FROM recalls WHERE session_id = ?').run(sessionId).changes)
      counts.sessions += Number(conn.stmt('DELETE FROM sessions WHERE session_id = ?').run(sessionId).changes)
    }
    if (options.vacuumDue === true) conn.setMeta(VACUUM_DUE_META, 'forget')
    return counts
  }))
}

export function markElided(conn: SqliteConnection, sessionId: string, seqs: readonly number[], checkpointId: string): void {
  if (seqs.length === 0) return
  conn.guard('mark elided', () => conn.transaction(() => {
    // a row marked so already is no change (its session's revision stays)
    const mark = conn.stmt('UPDATE messages SET elided_by = ?1, rev = ?2 WHERE session_id = ?3 AND seq = ?4 AND elided_by IS NOT ?1')
    const revisions = new Revisions(conn)
    let marked = 0
    for (const seq of seqs) marked += Number(mark.run(checkpointId, revisions.of(sessionId), sessionId, seq).changes)
    if (marked > 0) revisions.change(sessionId)
    revisions.commit()
  }))
}

export function putCheckpoint(conn: SqliteConnection, input: CheckpointInput, derived: CheckpointDerived): void {
  conn.guard('write checkpoint', () => {
    conn.stmt(`
      INSERT INTO checkpoints(checkpoint_id, session_id, engine, status, trigger, start_seq, summary_seq, replace_seq, shadowed_seqs,
        first_seq, last_seq, first_shadow_id, last_shadow_id, time_from, time_to, message_count, shadowed_tokens, summary_tokens, footer, error, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(checkpoint_id) DO UPDATE SET
        engine = excluded.engine, status = excluded.status, trigger = coalesce(excluded.trigger, checkpoints.trigger),
        start_seq = coalesce(excluded.start_seq, checkpoints.start_seq), summary_seq = coalesce(excluded.summary_seq, checkpoints.summary_seq),
        replace_seq = coalesce(excluded.replace_seq, checkpoints.replace_seq), shadowed_seqs = excluded.shadowed_seqs,
        first_seq = excluded.first_seq, last_seq = excluded.last_seq, first_shadow_id = excluded.first_shadow_id, last_shadow_id = excluded.last_shadow_id,
        time_from = excluded.time_from, time_to = excluded.time_to, message_count = excluded.message_count,
        shadowed_tokens = coalesce(excluded.shadowed_tokens, checkpoints.shadowed_tokens),
        summary_tokens = coalesce(excluded.summary_tokens, checkpoints.summary_tokens),
        footer = coalesce(excluded.footer, checkpoints.footer), error = excluded.error
    `).run(
      input.checkpointId, input.sessionId, input.engine, input.status, input.trigger ?? null, input.startSeq ?? null, input.summarySeq ?? null,
      input.replaceSeq ?? null, JSON.stringify(input.shadowedSeqs), derived.firstSeq, derived.lastSeq, derived.firstShadowId, derived.lastShadowId,
      derived.timeFrom, derived.timeTo, derived.messageCount, input.shadowedTokens ?? null, input.summaryTokens ?? null, input.footer ?? null,
      input.error ?? null, input.createdAt,
    )
  })
}

export function addRecall(conn: SqliteConnection, input: RecallInput): number {
  return conn.guard('write recall', () => {
    const result = conn.stmt('INSERT INTO recalls(session_id, seq, time, kind, query, shadow_ids, checkpoint_ids) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(input.sessionId, input.seq ?? null, input.time, input.kind, input.query ?? null, JSON.stringify(input.shadowIds), JSON.stringify(input.checkpointIds ?? []))
    return Number(result.lastInsertRowid)
  })
}
