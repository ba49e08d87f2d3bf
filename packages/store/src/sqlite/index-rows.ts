/**
 * Index entries of one message: the only place that writes or deletes rows of the two FTS5
 * tables. Each entry carries its session's scope token, so a session-scoped MATCH is one
 * intersection inside the index (FTS5 seeks each list to the other's next rowid) instead of a
 * walk of every match joined to its row.
 */
import { createHash } from 'node:crypto'
import type { IndexViews } from '../backend.ts'
import type { SqliteConnection } from './connection.ts'
import { dropDays, storeDays } from './days.ts'

const tokens = new Map<string, string>()

/**
 * The scope token of a session tag: three private-use characters (30 bits of the tag's hash).
 * One token for unicode61 and exactly one trigram for the trigram index, and never part of an
 * anchor (anchors are letters, digits and `_$./\:-`). A collision of two tags only widens the
 * MATCH: searches still filter every row on its session.
 */
export function scopeToken(tag: string): string {
  let token = tokens.get(tag)
  if (token === undefined) {
    const bits = createHash('sha256').update(tag).digest().readUInt32BE(0) >>> 2
    token = String.fromCharCode(0xe000 + (bits >>> 20), 0xe000 + ((bits >>> 10) & 0x3ff), 0xe000 + (bits & 0x3ff))
    if (tokens.size > 10_000) tokens.clear()
    tokens.set(tag, token)
  }
  return token
}

/** The two index tables written: the live ones, or the ones a reindex builds beside them. */
export interface IndexTables {
  readonly words: string
  readonly grams: string
}

export const LIVE_INDEX: IndexTables = { words: 'messages_words', grams: 'messages_grams' }

/**
 * A message's index entries. The days it refers to (sqlite/days.ts) belong to the live index only:
 * a reindex rebuilds the two FTS tables beside them and leaves the days as they are.
 */
export function indexMessage(conn: SqliteConnection, id: number, views: IndexViews, tag: string, tables: IndexTables = LIVE_INDEX): void {
  const scope = scopeToken(tag)
  conn.stmt(`INSERT INTO ${tables.words}(rowid, body) VALUES (?, ?)`).run(id, `${views.words}\n${scope}`)
  if (views.grams.length > 0) conn.stmt(`INSERT INTO ${tables.grams}(rowid, body) VALUES (?, ?)`).run(id, `${scope}\n${views.grams}`)
  if (tables === LIVE_INDEX && views.days !== undefined) storeDays(conn, id, views.days)
}

export function unindexMessage(conn: SqliteConnection, id: number, tables: IndexTables = LIVE_INDEX): void {
  conn.stmt(`DELETE FROM ${tables.words} WHERE rowid = ?`).run(id)
  conn.stmt(`DELETE FROM ${tables.grams} WHERE rowid = ?`).run(id)
  if (tables === LIVE_INDEX) dropDays(conn, id)
}
