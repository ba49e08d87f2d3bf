/**
 * The two index lists on PostgreSQL. Words: a GIN index over each row's tsvector of analyzer
 * lexemes, which also holds the row's session scope lexeme, so a session-scoped query is one
 * index intersection (as the scope token is on SQLite). Grams: pg_trgm over the lowercased
 * anchors, LIKE '%substring%'.
 *
 * Relevance for `order: 'rank'`: among the newest `rankWindow` matches, how many distinct query
 * terms a row holds, weighted by each term's rarity in the store (an idf counted up to a cap, as
 * bm25 would weigh it), then recency. The store re-ranks candidates by coverage either way; this
 * only chooses which candidates the ranked list brings.
 */
import type { FrequencyQuery, IndexQuery, IndexResult } from '../backend.ts'
import type { PgConnection } from './connection.ts'
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, Params, toMessage, type Row } from './rows.ts'
import { withoutTime } from '../days.ts'
import { daysQuery, lexemeQuery, lexemes, likePattern, scopeQuery, termsQuery } from './tokens.ts'

/** Above this many sessions a scope is filtered on the row only, not with scope lexemes in the index query. */
const SCOPE_LEXEME_LIMIT = 8
/** Rarity is counted up to this many rows per term. */
const IDF_CAP = 2_000
/** Planner statistics are re-read at most this often. */
const STATS_TTL_MS = 60_000
/** Below this many rows every frequency is counted (cheap, and statistics of a small table are coarse). */
const STATS_MIN_ROWS = 50_000

interface WordStats {
  readonly read: number
  readonly rows: number
  /** Lexeme -> share of rows holding it (ANALYZE's most common elements). */
  readonly common: ReadonlyMap<string, number>
  /** Share of rows of the least common of them: a lexeme not listed is at most this frequent. */
  readonly floor: number
}

const statsCache = new WeakMap<PgConnection, WordStats>()

/** ANALYZE's view of the words column, cached: what makes "is this term common?" free on a large store. */
async function wordStats(connection: PgConnection): Promise<WordStats> {
  const cached = statsCache.get(connection)
  if (cached !== undefined && Date.now() - cached.read < STATS_TTL_MS) return cached
  const [row] = await connection.query<{ rows: number; elems: string[] | null; freqs: number[] | null }>('read statistics', `
    SELECT greatest(c.reltuples, 0)::bigint AS rows, s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'words'
    WHERE n.nspname = $1 AND c.relname = 'messages'`, [connection.location.schema])
  const elems = row?.elems ?? []
  const freqs = row?.freqs ?? []
  const common = new Map<string, number>()
  elems.forEach((elem, index) => common.set(elem, freqs[index] ?? 0))
  // pg_stats appends min, max and null share after the per-element frequencies
  const stats = { read: Date.now(), rows: row?.rows ?? 0, common, floor: elems.length > 0 ? freqs[elems.length] ?? 1 : 1 }
  statsCache.set(connection, stats)
  return stats
}

/** The index condition of a query (alias `m`), or undefined when no term can match anything. */
function scopedMatch(segments: IndexQuery['segments'], whole: boolean): boolean {
  return !whole && new Set(segments.map(segment => segment.tag)).size <= SCOPE_LEXEME_LIMIT
}

function matchSql(query: Pick<IndexQuery, 'index' | 'terms' | 'operator' | 'segments' | 'referredDays'>, whole: boolean, params: Params): string | undefined {
  const tags = [...new Set(query.segments.map(segment => segment.tag))]
  const scoped = scopedMatch(query.segments, whole)
  if (query.index === 'words') {
    const matched = termsQuery(query.terms, query.operator)
    if (matched === undefined) return undefined
    // rows referring to a day of the window (days.ts): one more GIN intersection
    const terms = query.referredDays === undefined || query.referredDays.length === 0 ? matched : `(${matched}) & ${daysQuery(query.referredDays)}`
    return `m.words @@ ${params.param(scoped ? `(${terms}) & ${scopeQuery(tags)}` : terms)}::tsquery`
  }
  const patterns = query.terms.filter(term => term.length > 0).map(likePattern)
  if (patterns.length === 0) return undefined
  const grams = `m.grams LIKE ${query.operator === 'and' ? 'ALL' : 'ANY'}(${params.param(patterns)}::text[])`
  return scoped ? `${grams} AND m.words @@ ${params.param(scopeQuery(tags))}::tsquery` : grams
}

export async function searchIndex(connection: PgConnection, query: IndexQuery, whole: boolean, total: () => Promise<number>): Promise<IndexResult> {
  if (query.terms.length === 0 || query.segments.length === 0) return { hits: [], windowed: false }
  const params = new Params()
  const match = matchSql(query, whole, params)
  if (match === undefined) return { hits: [], windowed: false }
  // referring to a day of the window stands in for the time bounds
  const where = `${match} AND ${filterSql(query.referredDays === undefined ? query : withoutTime(query), params, whole)}`
  const columns = query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS
  const limit = Math.max(1, Math.floor(query.limit))
  // A scoped match is one GIN intersection (term and session lexemes): newest first from that, never
  // by walking the id index backwards through other sessions' rows (`+ 0` keeps the planner off it).
  const newest = scopedMatch(query.segments, whole) ? 'm.id + 0 DESC' : 'm.id DESC'
  if (query.order === 'newest' || query.index === 'grams') {
    const rows = await connection.query('search', `SELECT ${columns} FROM messages m WHERE ${where} ORDER BY ${newest} LIMIT ${params.param(limit)}`, params.values)
    return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
  }
  // weights: rarer terms count for more (ln of inverse frequency, as bm25's idf)
  const lexemeSets = query.terms.map(lexemes).filter(found => found.length > 0)
  const terms = lexemeSets.map(lexemeQuery)
  const frequencies = await countTerms(connection, lexemeSets, IDF_CAP)
  const n = Math.max(1, await total())
  const weights = frequencies.map(df => Math.log(1 + (n - Math.min(df, n) + 0.5) / (Math.min(df, n) + 0.5)))
  const window = Number.isFinite(query.rankWindow) ? Math.max(1, Math.floor(query.rankWindow)) : null
  const windowSql = window === null ? '' : `LIMIT ${params.param(window)}`
  const termList = params.param(terms)
  const weightList = params.param(weights)
  const rows = await connection.query(`search`, `
    WITH hits AS (SELECT m.id, m.words FROM messages m WHERE ${where} ORDER BY ${newest} ${windowSql}),
    scored AS (
      SELECT h.id, (SELECT coalesce(sum(t.weight), 0) FROM unnest(${termList}::tsquery[], ${weightList}::float8[]) AS t(term, weight) WHERE h.words @@ t.term) AS score,
        count(*) OVER () AS matched
      FROM hits h ORDER BY score DESC, h.id DESC LIMIT ${params.param(limit)}
    )
    SELECT ${columns}, s.score, s.matched FROM scored s JOIN messages m ON m.id = s.id ORDER BY s.score DESC, s.id DESC`, params.values)
  const matched = Number((rows[0] as Row | undefined)?.['matched'] ?? 0)
  return { hits: rows.map(row => ({ message: toMessage(row), score: Number(row['score']) })), windowed: window !== null && matched >= window }
}

/**
 * Rows matching each term (its lexemes), each counted up to `cap`, in one round trip. Store-wide on
 * a large store, a term ANALYZE lists as common past the cap is not counted at all: counting a
 * common term means visiting `cap` rows, for an answer ("common") the statistics already give.
 */
async function countTerms(connection: PgConnection, terms: ReadonlyArray<readonly string[]>, cap: number, scope?: string): Promise<number[]> {
  if (terms.length === 0) return []
  const limit = Math.max(1, Math.floor(cap))
  const counts = terms.map(() => limit)
  const stats = scope === undefined ? await wordStats(connection) : undefined
  const known = (set: readonly string[]): boolean => stats !== undefined && stats.rows >= STATS_MIN_ROWS
    && set.every(lexeme => (stats.common.get(lexeme) ?? 0) * stats.rows >= limit * 1.5)
  const wanted = terms.map((set, index) => ({ lexemes: set, index })).filter(entry => !known(entry.lexemes))
  if (wanted.length === 0) return counts
  const rows = await connection.query<{ i: number; n: number }>('count terms', `
    SELECT t.i::int AS i, (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.words @@ (CASE WHEN $3::text IS NULL THEN t.q ELSE t.q && $3::tsquery END) LIMIT $2) x) AS n
    FROM unnest($1::tsquery[]) WITH ORDINALITY AS t(q, i)`, [wanted.map(entry => lexemeQuery(entry.lexemes)), limit, scope ?? null])
  for (const row of rows) counts[wanted[row.i - 1]!.index] = row.n
  return counts
}

export async function documentFrequencies(connection: PgConnection, query: FrequencyQuery, whole: boolean): Promise<number[]> {
  if (query.segments.length === 0) return query.terms.map(() => 0)
  const tags = [...new Set(query.segments.map(segment => segment.tag))]
  const scope = whole || query.global === true || tags.length > SCOPE_LEXEME_LIMIT ? undefined : scopeQuery(tags)
  if (query.index === 'grams') {
    const counts: number[] = []
    for (const term of query.terms) {
      const params = new Params()
      const scoped = scope === undefined ? '' : ` AND m.words @@ ${params.param(scope)}::tsquery`
      const rows = await connection.query<{ n: number }>('count terms', `SELECT count(*)::int AS n FROM (SELECT 1 FROM messages m WHERE m.grams LIKE ${params.param(likePattern(term))}${scoped} LIMIT ${params.param(Math.max(1, Math.floor(query.cap)))}) x`, params.values)
      counts.push(rows[0]?.n ?? 0)
    }
    return counts
  }
  const sets = query.terms.map(lexemes)
  const found = await countTerms(connection, sets.filter(set => set.length > 0), query.cap, scope)
  let next = 0
  return sets.map(set => set.length === 0 ? 0 : found[next++] ?? 0)
}

