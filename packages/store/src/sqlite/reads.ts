/** Row reads: sessions, messages by key or filter, call partners, counts, checkpoints, recalls. */
import type { MessageFilter, MessageMark, ReadQuery, SessionLink, WideScope } from '../backend.ts'
import { deepLineage, onlySegments } from '../filter.ts'
import type { LineageSegment, ShadowCheckpoint, ShadowMessage, ShadowRecall, ShadowSession } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, toCheckpoint, toMessage, toRecall, toSession, type Row } from './rows.ts'
import { lineageFrom } from './lineage.ts'
import { wholeStore } from './search.ts'

export function getSession(conn: SqliteConnection, sessionId: string): ShadowSession | undefined {
  return conn.guard('read session', () => {
    const row = conn.stmt('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as Row | undefined
    return row === undefined ? undefined : toSession(row)
  })
}

export function getSessionByTag(conn: SqliteConnection, tag: string): ShadowSession | undefined {
  return conn.guard('read session', () => {
    const row = conn.stmt('SELECT * FROM sessions WHERE tag = ?').get(tag) as Row | undefined
    return row === undefined ? undefined : toSession(row)
  })
}

/**
 * The stored sessions whose id (or tag) is one of these: one prepared statement per value, a round
 * trip costs nothing in process. No read transaction: each append asks this of its sessions.
 */
export function sessionsBy(conn: SqliteConnection, column: 'session_id' | 'tag', values: readonly string[]): ShadowSession[] {
  return conn.guard('read session', () => {
    const find = conn.stmt(`SELECT * FROM sessions WHERE ${column} = ?`)
    return [...new Set(values)].flatMap(value => {
      const row = find.get(value) as Row | undefined
      return row === undefined ? [] : [toSession(row)]
    })
  })
}

export function listSessions(conn: SqliteConnection, workspace?: string, limit = -1): ShadowSession[] {
  return conn.guard('list sessions', () => {
    // LIMIT -1: no limit
    const rows = workspace === undefined
      ? conn.stmt('SELECT * FROM sessions ORDER BY coalesce(last_time, created_at, 0) DESC LIMIT ?').all(limit)
      : conn.stmt('SELECT * FROM sessions WHERE workspace = ? ORDER BY coalesce(last_time, created_at, 0) DESC LIMIT ?').all(workspace, limit)
    return (rows as Row[]).map(toSession)
  })
}

/** Labelled as the session reads it replaces: a capture reports a failing store once per distinct message. */
export function ancestry(conn: SqliteConnection, sessionId: string, limit: number): SessionLink[] {
  return conn.guard('read session', () => {
    const rows = conn.stmt(`
      WITH RECURSIVE chain(session_id, tag, parent, fork_seq, workspace, depth) AS (
        SELECT session_id, tag, parent_session_id, fork_seq, workspace, 1 FROM sessions WHERE session_id = ?
        UNION ALL
        SELECT s.session_id, s.tag, s.parent_session_id, s.fork_seq, s.workspace, c.depth + 1 FROM chain c JOIN sessions s ON s.session_id = c.parent WHERE c.depth < ?
      )
      SELECT session_id, tag, parent, fork_seq, workspace FROM chain ORDER BY depth`).all(sessionId, Math.max(1, Math.floor(limit))) as Row[]
    return rows.map(linkOf)
  })
}

/** A session's link to its parent, as `ancestry` reads it. */
export function linkOf(row: Row): SessionLink {
  return { sessionId: row['session_id'] as string, tag: row['tag'] as string, parentSessionId: (row['parent'] as string | null) ?? null, forkSeq: row['fork_seq'] === null || row['fork_seq'] === undefined ? null : Number(row['fork_seq']), workspace: (row['workspace'] as string | null | undefined) ?? null }
}

/** At most `limit` sessions of the store or a workspace, any order (ShadowBackend.someSessions). */
export function someSessions(conn: SqliteConnection, scope: WideScope, limit: number): Array<Pick<ShadowSession, 'sessionId' | 'tag'>> {
  return conn.guard('list sessions', () => {
    const rows = scope.of === 'store'
      ? conn.stmt('SELECT session_id, tag FROM sessions LIMIT ?').all(limit)
      : conn.stmt('SELECT session_id, tag FROM sessions WHERE workspace = ? LIMIT ?').all(scope.workspace, limit)
    return (rows as Row[]).map(row => ({ sessionId: row['session_id'] as string, tag: row['tag'] as string }))
  })
}

export function getMessage(conn: SqliteConnection, sessionId: string, seq: number): ShadowMessage | undefined {
  return conn.guard('read message', () => {
    const row = conn.stmt(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.session_id = ? AND m.seq = ?`).get(sessionId, seq) as Row | undefined
    return row === undefined ? undefined : toMessage(row)
  })
}

/** Rows by key, one statement for all (a search's winners); undefined for a key not stored. */
export function getMessages(conn: SqliteConnection, keys: ReadonlyArray<{ readonly sessionId: string; readonly seq: number }>): Array<ShadowMessage | undefined> {
  if (keys.length === 0) return []
  return conn.guard('read message', () => {
    const rows = conn.stmt(`SELECT ${MESSAGE_COLUMNS} FROM json_each(?) j CROSS JOIN messages m ON m.session_id = j.value ->> 0 AND m.seq = j.value ->> 1`)
      .all(JSON.stringify(keys.map(key => [key.sessionId, key.seq]))) as Row[]
    const byKey = new Map(rows.map(row => [`${row['session_id'] as string}\u0000${row['seq'] as number}`, row]))
    return keys.map(key => {
      const row = byKey.get(`${key.sessionId}\u0000${key.seq}`)
      return row === undefined ? undefined : toMessage(row)
    })
  })
}

export function readMessages(conn: SqliteConnection, query: ReadQuery): ShadowMessage[] {
  return conn.guard('read messages', () => {
    const params: unknown[] = []
    // a deep lineage: its rows joined against the bound list (each session one index range)
    const from = query.wide === undefined && deepLineage(query.segments) ? lineageFrom(query.segments, params) : 'messages m'
    const where = filterSql(query, params, from !== 'messages m')
    params.push(Math.max(0, Math.floor(query.limit)))
    // Lineage segments are disjoint seq ranges of one history, so seq orders them globally.
    const order = query.descending === true ? 'DESC' : 'ASC'
    const rows = conn.stmt(`SELECT ${MESSAGE_COLUMNS} FROM ${from} WHERE ${where} ORDER BY m.seq ${order} LIMIT ?`).all(...params as never[]) as Row[]
    return rows.map(toMessage)
  })
}

export function callRows(conn: SqliteConnection, keys: ReadonlyArray<{ readonly sessionId: string; readonly callId: string }>): ShadowMessage[] {
  if (keys.length === 0) return []
  return conn.guard('read calls', () => {
    const out: ShadowMessage[] = []
    // one statement per chunk: index lookups per pair, well under SQLite's parameter limit
    for (let start = 0; start < keys.length; start += 400) {
      const chunk = keys.slice(start, start + 400)
      const rows = conn.stmt(`
        WITH wanted(session_id, call_id) AS (VALUES ${chunk.map(() => '(?, ?)').join(', ')})
        SELECT ${CANDIDATE_COLUMNS} FROM wanted w CROSS JOIN messages m ON m.session_id = w.session_id AND m.call_id = w.call_id AND m.role = 'tool'
        UNION ALL
        SELECT ${CANDIDATE_COLUMNS} FROM wanted w CROSS JOIN message_calls c ON c.session_id = w.session_id AND c.call_id = w.call_id
          CROSS JOIN messages m ON m.session_id = c.session_id AND m.seq = c.seq
      `).all(...chunk.flatMap(key => [key.sessionId, key.callId])) as Row[]
      out.push(...rows.map(toMessage))
    }
    return out
  })
}

export function messageTotal(conn: SqliteConnection): number {
  return conn.guard('count messages', () => (conn.stmt('SELECT coalesce(sum(message_count), 0) AS n FROM sessions').get() as Row)['n'] as number)
}

export function countMessages(conn: SqliteConnection, filter: MessageFilter): number {
  return conn.read('count messages', () => {
    const whole = wholeStore(conn, filter)
    // a wide scope's unnamed sessions by their kept counters, its named ones as a lineage of their own
    if (filter.wide !== undefined && !whole && onlySegments(filter)) return wideCount(conn, filter.segments, filter.wide) + countNamed(conn, filter.segments)
    if (filter.wide === undefined && deepLineage(filter.segments)) {
      // one statement, each session an index range count (a statement per segment was 5,000 at 5,000 deep)
      const params: unknown[] = []
      const from = lineageFrom(filter.segments, params)
      const where = filterSql(filter, params, true)
      return (conn.stmt(`SELECT count(*) AS n FROM ${from} WHERE ${where}`).get(...params as never[]) as Row)['n'] as number
    }
    if (onlySegments(filter)) {
      if (whole) return ((conn.stmt('SELECT coalesce(sum(message_count), 0) AS n FROM sessions').get() as Row)['n'] as number)
      return countNamed(conn, filter.segments)
    }
    const params: unknown[] = []
    const where = filterSql(filter, params, whole)
    const row = conn.stmt(`SELECT count(*) AS n FROM messages m WHERE ${where}`).get(...params as never[]) as Row
    return row['n'] as number
  })
}

/** Rows of these segments: sessions.message_count is kept by every write; a fork's bounded segment is an index range count. */
function countNamed(conn: SqliteConnection, segments: readonly LineageSegment[]): number {
  if (deepLineage(segments)) {
    const params: unknown[] = []
    return (conn.stmt(`SELECT count(*) AS n FROM ${lineageFrom(segments, params)}`).get(...params as never[]) as Row)['n'] as number
  }
  let total = 0
  for (const segment of segments) {
    total += Number.isFinite(segment.belowSeq)
      ? (conn.stmt('SELECT count(*) AS n FROM messages WHERE session_id = ? AND seq < ?').get(segment.sessionId, segment.belowSeq) as Row)['n'] as number
      : ((conn.stmt('SELECT message_count AS n FROM sessions WHERE session_id = ?').get(segment.sessionId) as Row | undefined)?.['n'] as number | undefined) ?? 0
  }
  return total
}

/**
 * Messages of the sessions of a wide scope that the segments do not name (their kept counters):
 * the provenance's sum less the named sessions' part of it (a NOT IN over the named ones checked
 * each of the workspace's sessions, twice the cost). The workspace's sum reads sessions_workspace_count
 * alone; the named part seeks each named session (`+`: not the workspace's range).
 */
function wideCount(conn: SqliteConnection, segments: readonly LineageSegment[], wide: WideScope): number {
  const named = JSON.stringify([...new Set(segments.map(segment => segment.sessionId))])
  const row = (wide.of === 'store'
    ? conn.stmt(`SELECT (SELECT coalesce(sum(message_count), 0) FROM sessions)
      - (SELECT coalesce(sum(message_count), 0) FROM sessions WHERE session_id IN (SELECT value FROM json_each(?))) AS n`).get(named)
    : conn.stmt(`SELECT (SELECT coalesce(sum(message_count), 0) FROM sessions WHERE workspace = ?)
      - (SELECT coalesce(sum(message_count), 0) FROM sessions WHERE session_id IN (SELECT value FROM json_each(?)) AND +workspace = ?) AS n`).get(wide.workspace, named, wide.workspace)) as Row
  return row['n'] as number
}

export function messageHashes(conn: SqliteConnection, sessionId: string): Array<{ seq: number; hash: string }> {
  return conn.guard('read hashes', () => {
    const rows = conn.stmt('SELECT seq, hash FROM messages WHERE session_id = ? ORDER BY seq').all(sessionId) as Row[]
    return rows.map(row => ({ seq: row['seq'] as number, hash: row['hash'] as string }))
  })
}

/** Hash and marks of these seqs of a session's own rows: one indexed lookup per seq, no text read. */
export function messageHashesFor(conn: SqliteConnection, sessionId: string, seqs: readonly number[]): MessageMark[] {
  if (seqs.length === 0) return []
  return conn.guard('read hashes', () => {
    const find = conn.stmt('SELECT seq, hash, time, elided_by, expired_at FROM messages WHERE session_id = ? AND seq = ?')
    const marks: MessageMark[] = []
    for (const seq of seqs) {
      const row = find.get(sessionId, seq) as Row | undefined
      if (row !== undefined) marks.push({ seq: row['seq'] as number, hash: row['hash'] as string, time: row['time'] as number, elidedBy: row['elided_by'] as string | null, expiredAt: row['expired_at'] as number | null })
    }
    return marks
  })
}

export function getCheckpoint(conn: SqliteConnection, checkpointId: string): ShadowCheckpoint | undefined {
  return conn.guard('read checkpoint', () => {
    const row = conn.stmt('SELECT * FROM checkpoints WHERE checkpoint_id = ?').get(checkpointId) as Row | undefined
    return row === undefined ? undefined : toCheckpoint(row)
  })
}

export function listCheckpoints(conn: SqliteConnection, sessionIds: readonly string[]): ShadowCheckpoint[] {
  if (sessionIds.length === 0) return []
  return conn.guard('list checkpoints', () => {
    // a deep lineage's sessions as one JSON list: one variable each passed SQLite's limit (32,766)
    const rows = (sessionIds.length > 16
      ? conn.stmt('SELECT * FROM checkpoints WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, rowid').all(JSON.stringify(sessionIds))
      : conn.db.prepare(`SELECT * FROM checkpoints WHERE session_id IN (${sessionIds.map(() => '?').join(', ')}) ORDER BY created_at, rowid`).all(...sessionIds)) as Row[]
    return rows.map(toCheckpoint)
  })
}

export function listRecalls(conn: SqliteConnection, sessionId: string): ShadowRecall[] {
  return conn.guard('list recalls', () => (conn.stmt('SELECT * FROM recalls WHERE session_id = ? ORDER BY time, id').all(sessionId) as Row[]).map(toRecall))
}
