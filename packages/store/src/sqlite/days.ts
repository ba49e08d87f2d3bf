/**
 * The days a message refers to (days.ts), on SQLite: a plain table of (day, message id) rows, only
 * for messages whose time words point at another day than their own, so most messages cost
 * nothing. A search for rows referring to the days of a window starts from those rows (few) and
 * checks each against the words index by rowid, so its work follows the referring messages, not
 * the matches of common query words.
 */
import type { IndexQuery, IndexResult } from '../backend.ts'
import { withoutTime } from '../days.ts'
import type { SqliteConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, toMessage, type Row } from './rows.ts'
import { wordsMatch } from './terms.ts'

export function storeDays(conn: SqliteConnection, id: number, days: readonly number[]): void {
  for (const day of days) conn.stmt('INSERT OR IGNORE INTO message_days(day, id) VALUES (?, ?)').run(day, id)
}

export function dropDays(conn: SqliteConnection, id: number): void {
  conn.stmt('DELETE FROM message_days WHERE id = ?').run(id)
}

/** Rows in the filter's scope (time bounds aside) that refer to one of `query.referredDays` and match the terms, newest first. */
export function searchReferring(conn: SqliteConnection, query: IndexQuery, split: 'tokens' | 'chars'): IndexResult {
  const days = query.referredDays ?? []
  const match = wordsMatch(query.terms, query.operator, split)
  if (days.length === 0 || match === undefined || query.index !== 'words') return { hits: [], windowed: false }
  const params: unknown[] = [...days]
  const where = filterSql(withoutTime(query), params, false)
  const columns = query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS
  const rows = conn.stmt(`SELECT ${columns} FROM messages m
    WHERE m.id IN (SELECT id FROM message_days WHERE day IN (${days.map(() => '?').join(', ')})) AND ${where}
      AND EXISTS (SELECT 1 FROM messages_words f WHERE messages_words MATCH ? AND f.rowid = m.id)
    ORDER BY m.id DESC LIMIT ?`).all(...params as never[], match, Math.max(1, Math.floor(query.limit))) as Row[]
  return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
}
