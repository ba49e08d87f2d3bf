/** FTS5 queries: candidate lists (bm25 or newest first) and document frequencies. */
import { ftsString } from '../analyzer.ts'
import type { FrequencyQuery, IndexQuery, IndexResult, MessageFilter } from '../backend.ts'
import { unboundedSessions } from '../filter.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, toMessage, type Row } from './rows.ts'

/** Above this many sessions a scope is filtered on the joined row, not with scope tokens in the MATCH. */
const SCOPE_TOKEN_LIMIT = 8

export function searchIndex(conn: SqliteConnection, query: IndexQuery): IndexResult {
  if (query.terms.length === 0 || query.segments.length === 0) return { hits: [], windowed: false }
  return conn.guard('search', () => {
    const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
    const whole = wholeStore(conn, query.segments)
    const match = matchOf(query, whole)
    const params: unknown[] = [match]
    const where = filterSql(query, params, whole)
    const limit = Math.max(1, Math.floor(query.limit))
    if (query.order === 'newest') {
      // FTS5 yields rowids newest first; the join stops after `limit` rows pass the filter. No bm25.
      params.push(limit)
      const rows = conn.stmt(`
        SELECT ${query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS} FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid
        WHERE ${table} MATCH ? AND ${where} ORDER BY f.rowid DESC LIMIT ?
      `).all(...params as never[]) as Row[]
      return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
    }
    // FTS5 computes bm25 for every match before sorting; bound that work to the newest matches.
    let floor = 0
    // The window is counted on the MATCH alone: only sound when the MATCH itself is scoped (or the
    // scope is the whole store). Wide scopes rank every match; their rank lists hold rare words only.
    const scopedMatch = whole || new Set(query.segments.map(segment => segment.tag)).size <= SCOPE_TOKEN_LIMIT
    if (Number.isFinite(query.rankWindow) && scopedMatch) {
      const nth = conn.stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`)
        .get(match, Math.max(0, Math.floor(query.rankWindow) - 1)) as Row | undefined
      if (nth !== undefined) floor = nth['rowid'] as number
    }
    params.splice(1, 0, floor)
    params.push(limit)
    // Rank ids first (no wide columns through the sorter), then read the winners. The join is only
    // there for the filter; CROSS JOIN keeps the full-text index the outer loop.
    const inner = where === '1'
      ? `SELECT f.rowid AS id, bm25(${table}, 1.0, 0.0) AS score FROM ${table} f WHERE ${table} MATCH ? AND f.rowid >= ? ORDER BY score LIMIT ?`
      : `SELECT f.rowid AS id, bm25(${table}, 1.0, 0.0) AS score FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid WHERE ${table} MATCH ? AND f.rowid >= ? AND ${where} ORDER BY score LIMIT ?`
    const rows = conn.stmt(`SELECT ${query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS}, r.score AS score FROM (${inner}) r CROSS JOIN messages m ON m.id = r.id ORDER BY r.score`).all(...params as never[]) as Row[]
    return { hits: rows.map(row => ({ message: toMessage(row), score: -(row['score'] as number) })), windowed: floor > 0 }
  })
}

export function documentFrequencies(conn: SqliteConnection, query: FrequencyQuery): number[] {
  if (query.segments.length === 0) return query.terms.map(() => 0)
  return conn.guard('count terms', () => {
    const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
    const whole = query.global === true || wholeStore(conn, query.segments)
    const count = conn.stmt(`SELECT count(*) AS n FROM (SELECT rowid FROM ${table} WHERE ${table} MATCH ? LIMIT ?)`)
    return query.terms.map(term => (count.get(matchOf({ terms: [term], operator: 'or', segments: query.segments }, whole), Math.max(1, Math.floor(query.cap))) as Row)['n'] as number)
  })
}

/** The segments are every session of the store, none bounded by a fork: no session filter is needed. */
export function wholeStore(conn: SqliteConnection, segments: MessageFilter['segments']): boolean {
  const distinct = unboundedSessions(segments)
  if (distinct === undefined) return false
  const sessions = (conn.stmt('SELECT count(*) AS n FROM sessions').get() as Row)['n'] as number
  return distinct >= sessions
}

/** The MATCH expression: scope tokens only for a small scope (bm25 walks every phrase's whole doclist). */
function matchOf(query: { terms: readonly string[]; operator: 'and' | 'or'; segments: MessageFilter['segments'] }, whole: boolean): string {
  const terms = query.terms.map(ftsString).join(query.operator === 'and' ? ' AND ' : ' OR ')
  const tags = [...new Set(query.segments.map(segment => segment.tag))]
  if (whole || tags.length > SCOPE_TOKEN_LIMIT) return `body : (${terms})`
  return `body : (${terms}) AND scope : (${tags.map(tag => ftsString(`s${tag}`)).join(' OR ')})`
}
