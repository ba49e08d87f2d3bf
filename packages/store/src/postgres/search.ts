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
import { likePattern, scopeQuery, termQuery, termsQuery } from './tokens.ts'

/** Above this many sessions a scope is filtered on the row only, not with scope lexemes in the index query. */
const SCOPE_LEXEME_LIMIT = 8
/** Rarity is counted up to this many rows per term. */
const IDF_CAP = 2_000

/** The index condition of a query (alias `m`), or undefined when no term can match anything. */
function matchSql(query: Pick<IndexQuery, 'index' | 'terms' | 'operator' | 'segments'>, whole: boolean, params: Params): string | undefined {
  const tags = [...new Set(query.segments.map(segment => segment.tag))]
  const scoped = !whole && tags.length <= SCOPE_LEXEME_LIMIT
  if (query.index === 'words') {
    const terms = termsQuery(query.terms, query.operator)
    if (terms === undefined) return undefined
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
  const where = `${match} AND ${filterSql(query, params, whole)}`
  const columns = query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS
  const limit = Math.max(1, Math.floor(query.limit))
  if (query.order === 'newest' || query.index === 'grams') {
    const rows = await connection.query('search', `SELECT ${columns} FROM messages m WHERE ${where} ORDER BY m.id DESC LIMIT ${params.param(limit)}`, params.values)
    return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
  }
  // weights: rarer terms count for more (ln of inverse frequency, as bm25's idf)
  const terms = query.terms.map(termQuery).filter((term): term is string => term !== undefined)
  const frequencies = await countTerms(connection, terms, IDF_CAP)
  const n = Math.max(1, await total())
  const weights = frequencies.map(df => Math.log(1 + (n - Math.min(df, n) + 0.5) / (Math.min(df, n) + 0.5)))
  const window = Number.isFinite(query.rankWindow) ? Math.max(1, Math.floor(query.rankWindow)) : null
  const windowSql = window === null ? '' : `LIMIT ${params.param(window)}`
  const termList = params.param(terms)
  const weightList = params.param(weights)
  const rows = await connection.query(`search`, `
    WITH hits AS (SELECT m.id, m.words FROM messages m WHERE ${where} ORDER BY m.id DESC ${windowSql}),
    scored AS (
      SELECT h.id, (SELECT coalesce(sum(t.weight), 0) FROM unnest(${termList}::tsquery[], ${weightList}::float8[]) AS t(term, weight) WHERE h.words @@ t.term) AS score,
        count(*) OVER () AS matched
      FROM hits h ORDER BY score DESC, h.id DESC LIMIT ${params.param(limit)}
    )
    SELECT ${columns}, s.score, s.matched FROM scored s JOIN messages m ON m.id = s.id ORDER BY s.score DESC, s.id DESC`, params.values)
  const matched = Number((rows[0] as Row | undefined)?.['matched'] ?? 0)
  return { hits: rows.map(row => ({ message: toMessage(row), score: Number(row['score']) })), windowed: window !== null && matched >= window }
}

/** Rows matching each tsquery, each counted up to `cap`, in one round trip. */
async function countTerms(connection: PgConnection, terms: readonly string[], cap: number, scope?: string): Promise<number[]> {
  if (terms.length === 0) return []
  const rows = await connection.query<{ i: number; n: number }>('count terms', `
    SELECT t.i::int AS i, (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.words @@ (CASE WHEN $3::text IS NULL THEN t.q ELSE t.q && $3::tsquery END) LIMIT $2) x) AS n
    FROM unnest($1::tsquery[]) WITH ORDINALITY AS t(q, i)`, [terms, Math.max(1, Math.floor(cap)), scope ?? null])
  const counts = terms.map(() => 0)
  for (const row of rows) counts[row.i - 1] = row.n
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
  const queries = query.terms.map(termQuery)
  const present = queries.filter((term): term is string => term !== undefined)
  const found = await countTerms(connection, present, query.cap, scope)
  let next = 0
  return queries.map(term => term === undefined ? 0 : found[next++] ?? 0)
}

