/**
 * FTS5 queries: candidate lists (bm25 or newest first) and document frequencies.
 *
 * A scope of a few sessions (the default: one session and its fork ancestors) is one MATCH:
 * the query terms AND the scope tokens of its sessions, an intersection FTS5 computes inside the
 * index by seeking each list to the other's next rowid, so the work follows the matches in scope,
 * not the matches in the store. Every row is still filtered on its session (lineage bounds, and
 * a token collision of two tags) by the join.
 */
import { ftsString } from '../analyzer.ts'
import { type FrequencyQuery, type IndexHit, type IndexQuery, type IndexResult, type MessageFilter } from '../backend.ts'
import { noSessions, scopeTags, unboundedSessions, wideWholeStore } from '../filter.ts'
import type { ShadowMessage } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { searchReferring } from './days.ts'
import { scopeToken } from './index-rows.ts'
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, toMessage, type Row } from './rows.ts'
import { BYTE_CHECK_BYTES, gramsMatch, trigrams, usableTerms, wordsMatch } from './terms.ts'

/**
 * A newest-first list with a row filter (another session's rows under a token collision, a
 * fork's bound, roles, a tool, a window, exclusions) checks at most this many of the newest
 * matches: a filter that few of them pass walked every match of the terms (a store-wide role
 * filter over a common word: 0.5 s at 1M, every search). A session's own matches are fewer.
 */
const FILTERED_MATCHES = 20_000
/** Above this many sessions a scope is filtered on the joined row only, not with scope tokens in the MATCH. */
const SCOPE_TOKEN_LIMIT = 8
/** A term SQLite's lower() and instr() read as JavaScript does: printable ASCII. */
const PLAIN_ASCII = /^[\x20-\x7e]+$/

export function searchIndex(conn: SqliteConnection, query: IndexQuery): IndexResult {
  if (query.terms.length === 0 || noSessions(query)) return { hits: [], windowed: false }
  // rows referring to a day of the window (days.ts): a lookup of its own
  if (query.referredDays !== undefined) return conn.read('search', () => withTokenFallback(query.index, split => searchReferring(conn, query, split)))
  return conn.read('search', () => withTokenFallback(query.index, split => {
    const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
    const whole = wholeStore(conn, query)
    const terms = query.index === 'words' ? wordsMatch(query.terms, query.operator, split) : gramsMatch(query.terms, query.operator)
    if (terms === undefined) return { hits: [], windowed: false }
    const match = scoped(terms, query, whole)
    const filterParams: unknown[] = []
    let where = filterSql(query, filterParams, whole)
    if (query.index === 'grams') {
      // The AND of a term's trigrams also matches texts holding them apart: the text decides, in
      // the statement (its whole text: a term past a light read's cut is still a match).
      const check = substringCheck(query.terms, query.operator)
      if (check === undefined) return { hits: [], windowed: false }
      where = where === '1' ? check.sql : `${where} AND ${check.sql}`
      filterParams.push(...check.params)
    }
    const limit = Math.max(1, Math.floor(query.limit))
    const light = query.light === true
    const columns = light ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS
    if (query.order === 'newest') {
      // FTS5 yields rowids newest first; the join stops after `limit` rows pass the filter (among
      // the newest FILTERED_MATCHES matches: a filter few of them pass walked every match). No bm25.
      const sql = where === '1'
        ? `SELECT f.rowid AS rid, ${columns} FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid
        WHERE ${table} MATCH ? ORDER BY f.rowid DESC LIMIT ?`
        : `SELECT f.rid, ${columns} FROM (SELECT rowid AS rid FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid DESC LIMIT ${FILTERED_MATCHES}) f
        CROSS JOIN messages m ON m.id = f.rid WHERE ${where} ORDER BY f.rid DESC LIMIT ?`
      const rows = conn.stmt(sql).all(match, ...filterParams as never[], limit) as Row[]
      return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
    }
    // FTS5 computes bm25 for every match before sorting; bound that work to the newest matches.
    let floor = 0
    // The window is counted on the MATCH alone: only sound when the MATCH itself is scoped (or the
    // scope is the whole store). Wide scopes rank every match; their rank lists hold rare words only.
    if (Number.isFinite(query.rankWindow) && (whole || scopeTags(query, SCOPE_TOKEN_LIMIT) !== undefined)) {
      const nth = conn.stmt(`SELECT rowid FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`)
        .get(match, Math.max(0, Math.floor(query.rankWindow) - 1)) as Row | undefined
      if (nth !== undefined) floor = nth['rowid'] as number
    }
    // Rank ids first (no wide columns through the sorter), then read the winners. The join is only
    // there for the filter; CROSS JOIN keeps the full-text index the outer loop.
    const inner = where === '1'
      ? `SELECT f.rowid AS id, bm25(${table}) AS score FROM ${table} f WHERE ${table} MATCH ? AND f.rowid >= ? ORDER BY score LIMIT ?`
      : `SELECT f.rowid AS id, bm25(${table}) AS score FROM ${table} f CROSS JOIN messages m ON m.id = f.rowid WHERE ${table} MATCH ? AND f.rowid >= ? AND ${where} ORDER BY score LIMIT ?`
    const rows = conn.stmt(`SELECT ${columns}, r.score AS score FROM (${inner}) r CROSS JOIN messages m ON m.id = r.id ORDER BY r.score`)
      .all(match, floor, ...filterParams as never[], limit) as Row[]
    return { hits: rows.map(row => ({ message: toMessage(row), score: -(row['score'] as number) })), windowed: floor > 0 }
  }))
}

/** Whether a list is read as ids first (searchIndexes): a words list, newest first, of light rows. */
function idsFirst(query: IndexQuery): boolean {
  return query.index === 'words' && query.order === 'newest' && query.light === true && query.referredDays === undefined
    && query.terms.length > 0 && !noSessions(query)
}

/**
 * Several candidate lists at once. Words lists (newest first, light) are answered as ids by the
 * same MATCH and filter as searchIndex, then the rows of all of them are read once: a row several
 * lists hold is decoded once. The other lists go through searchIndex.
 */
export function searchIndexes(conn: SqliteConnection, queries: readonly IndexQuery[]): IndexResult[] {
  if (!queries.some(idsFirst)) return queries.map(query => searchIndex(conn, query))
  return conn.read('search', () => {
    const ids = new Map<number, number[]>()
    const whole = wholeOnce(conn)
    queries.forEach((query, at) => {
      if (idsFirst(query)) ids.set(at, withTokenFallback('words', split => newestIds(conn, query, split, whole(query))))
    })
    const byId = rowsById(conn, [...new Set([...ids.values()].flat())])
    return queries.map((query, at) => {
      const list = ids.get(at)
      if (list === undefined) return searchIndex(conn, query)
      // a row another process deleted since its list was read is left out, as a later list would
      const hits: IndexHit[] = []
      for (const id of list) {
        const message = byId.get(id)
        if (message !== undefined) hits.push({ message, score: -hits.length })
      }
      return { hits, windowed: false }
    })
  })
}

/** Light rows by id (a row no longer stored is absent). */
function rowsById(conn: SqliteConnection, ids: readonly number[]): Map<number, ShadowMessage> {
  const rows = ids.length === 0 ? [] : conn.stmt(`SELECT ${CANDIDATE_COLUMNS}, m.id AS mid FROM messages m WHERE m.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as Row[]
  return new Map(rows.map(row => [row['mid'] as number, toMessage(row)]))
}

/** The ids of newest-first light words lists (ShadowBackend.listIds); another list is refused. */
export function listIds(conn: SqliteConnection, queries: readonly IndexQuery[]): number[][] {
  const whole = wholeOnce(conn)
  return conn.read('search', () => queries.map(query => {
    if (query.terms.length === 0 || noSessions(query)) return []
    if (!idsFirst(query)) throw new Error('listIds answers newest-first light words lists only')
    return withTokenFallback('words', split => newestIds(conn, query, split, whole(query)))
  }))
}

/** Light rows of these ids, one per id (ShadowBackend.candidateRows). */
export function candidateRows(conn: SqliteConnection, ids: readonly number[]): Array<ShadowMessage | undefined> {
  return conn.read('search', () => {
    const byId = rowsById(conn, [...new Set(ids)])
    return ids.map(id => byId.get(id))
  })
}

/** The ids searchIndex's newest-first words list returns, newest first. */
function newestIds(conn: SqliteConnection, query: IndexQuery, split: 'tokens' | 'chars', whole: boolean): number[] {
  const terms = wordsMatch(query.terms, query.operator, split)
  if (terms === undefined) return []
  const params: unknown[] = []
  const where = filterSql(query, params, whole)
  // no row filter (the whole store, no other condition): the index alone answers, no row is looked up
  // a row filter looks at the newest FILTERED_MATCHES matches at most (examined)
  const sql = (order: 'ASC' | 'DESC'): string => (where === '1'
    ? `SELECT f.rowid AS rid FROM messages_words f WHERE messages_words MATCH ? ORDER BY f.rowid ${order} LIMIT ?`
    : `SELECT f.rid FROM (SELECT rowid AS rid FROM messages_words WHERE messages_words MATCH ? ORDER BY rowid DESC LIMIT ${FILTERED_MATCHES}) f
    CROSS JOIN messages m ON m.id = f.rid WHERE ${where} ORDER BY f.rid ${order} LIMIT ?`)
  const match = scoped(terms, query, whole)
  const limit = Math.max(1, Math.floor(query.limit))
  // A list the caller's counts say will not fill: its matches in index order, turned around. FTS5
  // walks a doclist backwards at about twice the cost (0.2 vs 0.1 ms for 40 matches in a 1M store);
  // one more match than fits means it fills after all, and it is read newest first.
  if (query.expected !== undefined && query.expected < limit) {
    const ascending = conn.stmt(sql('ASC')).all(match, ...params as never[], limit + 1) as Row[]
    if (ascending.length <= limit) return ascending.map(row => row['rid'] as number).toReversed()
  }
  const rows = conn.stmt(sql('DESC')).all(match, ...params as never[], limit) as Row[]
  return rows.map(row => row['rid'] as number)
}

export function documentFrequencies(conn: SqliteConnection, query: FrequencyQuery): number[] {
  if (noSessions(query)) return query.terms.map(() => 0)
  return conn.read('count terms', () => withTokenFallback(query.index, split => {
    const table = query.index === 'words' ? 'messages_words' : 'messages_grams'
    const whole = query.global === true || wholeStore(conn, query)
    const cap = Math.max(1, Math.floor(query.cap))
    const count = conn.stmt(`SELECT count(*) AS n FROM (SELECT rowid FROM ${table} WHERE ${table} MATCH ? LIMIT ?)`)
    return query.terms.map(term => {
      const terms = query.index === 'words' ? wordsMatch([term], 'or', split) : gramsMatch([term], 'or')
      if (terms === undefined) return 0
      const match = scoped(terms, query, whole)
      // one trigram is the term itself; the AND of several also counts texts holding them apart
      if (query.index === 'words' || trigrams(term).length <= 1) return (count.get(match, cap) as Row)['n'] as number
      return substringFrequency(conn, match, term, cap)
    })
  }))
}

/**
 * Messages holding a substring term among the candidates of its trigram AND, counted up to
 * `cap` candidates (a capped count stays `cap`: a common term is not made rare by the check).
 */
function substringFrequency(conn: SqliteConnection, match: string, term: string, cap: number): number {
  const check = substringCheck([term], 'or')
  if (check === undefined) return 0
  // a term SQLite cannot fold (not ASCII): when the candidates reach the cap, the count is the
  // cap whatever their texts say, so count them in the index alone (every entry is a stored
  // row's) before reading any text
  if (!PLAIN_ASCII.test(term)) {
    const candidates = (conn.stmt('SELECT count(*) AS n FROM (SELECT rowid FROM messages_grams WHERE messages_grams MATCH ? LIMIT ?)').get(match, cap) as Row)['n'] as number
    if (candidates >= cap) return cap
  }
  return (conn.stmt(`SELECT count(*) AS n FROM (SELECT 1 FROM messages_grams f CROSS JOIN messages m ON m.id = f.rowid
    WHERE messages_grams MATCH ? AND ${check.sql} LIMIT ?)`).get(match, ...check.params, cap) as Row)['n'] as number
}

/**
 * Characters of text times terms a row's check leaves to SQLite's instr(): it compares at every
 * position, fast on a short text (no call out of SQLite), but 12 ms a term over a 2M-character
 * text of a repeated letter (48 such terms, five such rows: 1.9 s a search). Longer rows, and rows
 * SQLite cannot fold (not ASCII, a NUL byte), are checked by shadow_holds (terms.ts): the text
 * lowercased once, each term found by V8's string search (0.8-1.4 ms a term there).
 */
const INSTR_CHECK_CHARS = 4_096

/**
 * The substring check of a grams list: the row's whole text holds the terms (terms.ts holdsTerms:
 * case-insensitive, NFKC as the analyzer indexes); undefined when no term is long enough to be
 * looked for (no text holds one).
 */
function substringCheck(terms: readonly string[], operator: 'and' | 'or'): { sql: string; params: Array<string | number> } | undefined {
  const usable = usableTerms(terms, operator)
  if (usable.length === 0) return undefined
  // a long row's verdict is kept (terms.ts shadow_held): a search's lists and counts check it once
  const holds = `(CASE WHEN length(m.text) >= ${BYTE_CHECK_BYTES} THEN coalesce(shadow_held(m.id, m.rev, m.hash, ?, ?), shadow_holds_kept(m.text, m.id, m.rev, m.hash, ?, ?)) ELSE shadow_holds(m.text, ?, ?) END) = 1`
  const list = JSON.stringify(usable)
  const held: Array<string | number> = [operator, list, operator, list, operator, list]
  if (usable.some(term => !PLAIN_ASCII.test(term))) return { sql: holds, params: held }
  const instr = usable.map(() => 'instr(lower(CAST(m.text AS TEXT)), ?) > 0').join(operator === 'and' ? ' AND ' : ' OR ')
  // a BLOB's length counts bytes, its text's characters: equal when it is ASCII
  const plain = "length(m.text) <= ? AND length(CAST(m.text AS TEXT)) = length(m.text) AND instr(m.text, X'00') = 0"
  return {
    sql: `(CASE WHEN ${plain} THEN (${instr}) ELSE ${holds} END)`,
    params: [Math.floor(INSTR_CHECK_CHARS / usable.length), ...usable, ...held],
  }
}

/** wholeStore for the lists of one batch: asked once per segments list (a search's lists share one). */
function wholeOnce(conn: SqliteConnection): (filter: Pick<MessageFilter, 'segments' | 'wide'>) => boolean {
  const known = new Map<MessageFilter['segments'], boolean>()
  return filter => {
    if (filter.wide !== undefined) return wholeStore(conn, filter)
    let whole = known.get(filter.segments)
    if (whole === undefined) known.set(filter.segments, whole = wholeStore(conn, filter))
    return whole
  }
}

/**
 * The scope is every session of the store, none bounded by a fork: no session filter is needed.
 * A wide scope says so itself (no statement); named segments are checked against the store.
 */
export function wholeStore(conn: SqliteConnection, filter: Pick<MessageFilter, 'segments' | 'wide'>): boolean {
  if (filter.wide !== undefined) return wideWholeStore(filter.wide, filter.segments)
  const segments = filter.segments
  if (unboundedSessions(segments) === undefined) return false
  // no stored session outside the named ones (not a count of them: a session of the scope
  // forgotten since it was read leaves room for one outside it, and counting the store's sessions
  // walked all of them, 5 ms of a session search at 200k); a session scope stops at its first other session
  const named = JSON.stringify([...new Set(segments.map(segment => segment.sessionId))])
  return ((conn.stmt('SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id NOT IN (SELECT value FROM json_each(?))) AS n').get(named) as Row)['n'] as number) === 0
}

/** The MATCH expression: scope tokens only for a small scope (a wide one is filtered on the row). */
function scoped(terms: string, filter: Pick<MessageFilter, 'segments' | 'wide'>, whole: boolean): string {
  const tags = whole ? undefined : scopeTags(filter, SCOPE_TOKEN_LIMIT)
  if (tags === undefined) return terms
  return `(${terms}) AND (${tags.map(tag => ftsString(scopeToken(tag))).join(' OR ')})`
}

/**
 * Run with each words term split into unicode61 tokens; when SQLite's older Unicode tables see a
 * separator inside one of them (FTS5 then reads a phrase, which `detail=none` refuses), split
 * into single characters instead.
 */
function withTokenFallback<T>(index: 'words' | 'grams', run: (split: 'tokens' | 'chars') => T): T {
  try {
    return run('tokens')
  } catch (error) {
    if (index !== 'words' || !(error instanceof Error) || !error.message.includes('phrase queries are not supported')) throw error
    return run('chars')
  }
}
