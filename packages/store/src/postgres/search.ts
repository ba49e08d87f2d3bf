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
import type { FrequencyQuery, IndexHit, IndexQuery, IndexResult } from '../backend.ts'
import type { ShadowMessage } from '../types.ts'
import type { PgConnection } from './connection.ts'
import { BUCKET_BITS } from './schema.ts'
import { CANDIDATE_COLUMNS, completeLight, filterSql, MESSAGE_COLUMNS, Params, toMessage, type Row, type WholeStore } from './rows.ts'
import { withoutTime } from '../days.ts'
import { noSessions, scopeTags } from '../filter.ts'
import { daysQuery, lexemeQuery, lexemes, likePattern, regexPattern, scopeQuery, termsQuery } from './tokens.ts'
import { essentialTerms } from '../substring-terms.ts'
import { denseSql, headLow, newestIds, SharedWalk } from './newest.ts'
import { COUNT_ENTRIES, countsOf, startOf, STATS_MIN_ROWS, wordStats } from './statistics.ts'

/** What completeLight reads again with: the search connections. */
function lightReader(connection: PgConnection): (sql: string, params: unknown[]) => Promise<Row[]> {
  return (sql, params) => connection.search('search', sql, params)
}

/** Above this many sessions a scope is filtered on the row only, not with scope lexemes in the index query. */
const SCOPE_LEXEME_LIMIT = 8
/** Rarity is counted up to this many rows per term. */
const IDF_CAP = 2_000
/** The index condition of a query (alias `m`), or undefined when no term can match anything. */
function scopedMatch(query: Pick<IndexQuery, 'segments' | 'wide'>, whole: WholeStore): boolean {
  return !whole && scopeTags(query, SCOPE_LEXEME_LIMIT) !== undefined
}

function matchSql(query: Pick<IndexQuery, 'index' | 'terms' | 'operator' | 'segments' | 'wide' | 'referredDays'>, whole: WholeStore, params: Params): string | undefined {
  const tags = scopeTags(query, SCOPE_LEXEME_LIMIT) ?? []
  const scoped = scopedMatch(query, whole)
  if (query.index === 'words') {
    const matched = termsQuery(query.terms, query.operator)
    if (matched === undefined) return undefined
    // rows referring to a day of the window (days.ts): one more GIN intersection
    const terms = query.referredDays === undefined || query.referredDays.length === 0 ? matched : `(${matched}) & ${daysQuery(query.referredDays)}`
    return `m.words @@ ${params.param(scoped ? `(${terms}) & ${scopeQuery(tags)}` : terms)}::tsquery`
  }
  const terms = essentialTerms(query.terms.filter(term => term.length > 0).map(term => term.toLowerCase()), query.operator)
  if (terms.length === 0) return undefined
  // scoped: the session filter (filterSql) is the grams index's third key, one GIN scan; adding
  // the scope lexeme would make the planner intersect two indexes and recheck every session row
  const { operator, patterns } = gramsOperator(terms)
  return `m.grams ${operator} ${query.operator === 'and' ? 'ALL' : 'ANY'}(${params.param(patterns)}::text[])`
}

/**
 * Characters of substring terms a row's LIKE check is left at. LIKE '%term%' compares the term at
 * every position of a row's anchors, so crafted terms cost anchors × their characters a row: one
 * term of 3,990 `a`s against 20 rows of 63k `a`s ran past the 3 s search guard (the search failed),
 * 48 terms of `q1` runs against 120 anchor-heavy rows 1.6-3.5 s. Past this many characters the
 * terms are regular expressions (PostgreSQL's automaton reads a row once a term, whatever the
 * term: that first query 4.1 s → 0.5 s for the list, and 10 ms with a term of 300), which cost
 * 1.1-1.7× LIKE on common queries (a list of five path and word terms over 20k messages: 30 → 51 ms).
 */
const LIKE_TERM_CHARS = 32

/** The operator and patterns substring terms are matched with (both indexed by pg_trgm). */
function gramsOperator(terms: readonly string[]): { operator: 'LIKE' | '~'; patterns: string[] } {
  const chars = terms.reduce((sum, term) => sum + term.length, 0)
  return chars <= LIKE_TERM_CHARS ? { operator: 'LIKE', patterns: terms.map(likePattern) } : { operator: '~', patterns: terms.map(regexPattern) }
}

/** A list answered newest first (no relevance pass): what searchIndexes can batch. */
function newestFirst(query: IndexQuery): boolean {
  return query.order === 'newest' || query.index === 'grams'
}

/** The match and filter of a list (alias `m`), or undefined when it cannot match anything. */
function whereOf(query: IndexQuery, whole: WholeStore, params: Params): string | undefined {
  if (query.terms.length === 0 || noSessions(query)) return undefined
  const match = matchSql(query, whole, params)
  if (match === undefined) return undefined
  // referring to a day of the window stands in for the time bounds
  // a scoped words match holds the scope lexemes: its sessions are checked on the row (filterSql)
  const sessions = query.index === 'words' && scopedMatch(query, whole) ? 'row' : 'index'
  return `${match} AND ${filterSql(query.referredDays === undefined ? query : withoutTime(query), params, whole, sessions)}`
}

/**
 * pg_trgm takes a LIKE pattern's trigrams from its runs of letters and digits: a substring with no
 * run of three ("a/b", "i/o", "x.y", "ab.c") gives the trigram index little or nothing to narrow
 * with, and a store-wide list of one that few rows hold probed every bucket whole (each probe a
 * scan of 65k rows: past the 3 s guard at 10M, the search failed). Such a term is looked for in
 * the store's newest UNSELECTIVE_ROWS rows only (about 12 ms at 10M); the other terms of its list
 * wherever they are, and the words lists still find older rows by the substring's words. A scoped
 * list reads its sessions' rows and is not bounded.
 */
const UNSELECTIVE_ROWS = 10_000
/**
 * And only as far as their anchors come to this many bytes (octet_length reads the size without the
 * value): 10,000 rows of 40 KB of paths each were 400 MB of anchors matched by every such list,
 * 1.4-2.4 s a store-wide search of `i/o` (adversarial hunt, 2026-12-06).
 */
export const UNSELECTIVE_BYTES = 8_000_000
const TRIGRAM_RUN = /[\p{L}\p{N}]{3}/u

/**
 * The ids of the newest `limit` rows matching `where` among the store's newest UNSELECTIVE_ROWS, up
 * to UNSELECTIVE_BYTES of anchors: the lowest id within both is found from ids and sizes alone (the
 * rows themselves through a window were 80-170 ms at 8 MB), then the rows above it are matched.
 */
function newestRowsSql(where: string, limit: number, params: Params): string {
  return `SELECT m.id FROM messages m WHERE m.id >= (SELECT coalesce(min(b.id), 0) FROM (
      SELECT id, sum(octet_length(grams)) OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) - octet_length(grams) AS grams_before
      FROM messages ORDER BY id DESC LIMIT ${params.param(UNSELECTIVE_ROWS)}) b WHERE b.grams_before < ${params.param(UNSELECTIVE_BYTES)})
    AND ${where} ORDER BY m.id DESC LIMIT ${params.param(limit)}`
}

/**
 * Run a statement of candidate lists under the list guard (listTimeoutMs); when it trips, the
 * same lists with every store-wide one bounded to the newest UNSELECTIVE_ROWS rows, under the
 * search guard. A plan the store did not expect (or a server too loaded for the full one) costs
 * the guard and a bounded read, never the search.
 */
async function guardedLists<R extends Record<string, unknown>>(connection: PgConnection, build: (bounded: boolean) => Promise<{ sql: string; params: Params; storeWide: boolean } | undefined>): Promise<R[]> {
  const full = await build(false)
  if (full === undefined) return []
  connection.listGuard.statements += 1
  // scoped lists only have no bounded form: cutting them would only run them twice (a session of
  // 100k rows: 0.3 s lost per statement)
  if (!full.storeWide) return connection.search<R>('search', full.sql, full.params.values)
  const rows = await connection.searchList<R>('search', full.sql, full.params.values)
  if (rows !== undefined) return rows
  connection.listGuard.bounded += 1
  const bounded = await build(true)
  return bounded === undefined ? [] : connection.search<R>('search', bounded.sql, bounded.params.values)
}

/** SQL of a newest-first list's ids (newest first), or undefined when it is empty whatever the rows; `bounded`: store-wide lists look at the newest rows only (guardedLists). */
async function newestListSql(connection: PgConnection, query: IndexQuery, whole: WholeStore, params: Params, walk?: SharedWalk, bounded = false): Promise<string | undefined> {
  const limit = Math.max(1, Math.floor(query.limit))
  const scoped = scopedMatch(query, whole)
  if (bounded && !scoped) {
    // the list guard tripped on the full plan (listed): the newest rows only
    const where = whereOf(query, whole, params)
    return where === undefined ? undefined : newestRowsSql(where, limit, params)
  }
  if (query.index === 'grams' && !scoped && !noSessions(query)) {
    const terms = query.terms.filter(term => term.length > 0)
    const narrow = terms.filter(term => TRIGRAM_RUN.test(term))
    const unselective = terms.filter(term => !TRIGRAM_RUN.test(term))
    // an AND is narrowed by any one of its terms; an OR by none of its unselective ones
    if (unselective.length > 0 && (query.operator === 'or' || narrow.length === 0)) {
      const recent = newestRowsSql(whereOf({ ...query, terms: unselective }, whole, params)!, limit, params)
      const rest = narrow.length === 0 ? undefined : await newestListSql(connection, { ...query, terms: narrow }, whole, params, walk)
      return rest === undefined ? recent : `SELECT id FROM ((${rest}) UNION (${recent})) u ORDER BY id DESC LIMIT ${params.param(limit)}`
    }
  }
  const where = whereOf(query, whole, params)
  if (where === undefined) return undefined
  return newestIds(where, scoped, params.param(limit), params, scoped ? 'walk' : await startOf(connection, query, limit), walk, query.index === 'grams')
}

export async function searchIndex(connection: PgConnection, query: IndexQuery, whole: WholeStore, total: () => Promise<number>): Promise<IndexResult> {
  const columns = query.light === true ? CANDIDATE_COLUMNS : MESSAGE_COLUMNS
  if (newestFirst(query)) {
    const rows = await guardedLists(connection, async bounded => {
      const params = new Params()
      const ids = await newestListSql(connection, query, whole, params, undefined, bounded)
      return ids === undefined ? undefined : { sql: `WITH picked AS (${ids}) SELECT ${columns} FROM picked p JOIN messages m ON m.id = p.id ORDER BY m.id DESC`, params, storeWide: !scopedMatch(query, whole) }
    })
    await completeLight(lightReader(connection), rows)
    return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
  }
  const params = new Params()
  const where = whereOf(query, whole, params)
  if (where === undefined) return { hits: [], windowed: false }
  const limit = Math.max(1, Math.floor(query.limit))
  const scoped = scopedMatch(query, whole)
  // weights: rarer terms count for more (ln of inverse frequency, as bm25's idf)
  const lexemeSets = query.terms.map(lexemes).filter(found => found.length > 0)
  const terms = lexemeSets.map(lexemeQuery)
  const frequencies = await countTerms(connection, lexemeSets, IDF_CAP)
  const n = Math.max(1, await total())
  const weights = frequencies.map(df => Math.log(1 + (n - Math.min(df, n) + 0.5) / (Math.min(df, n) + 0.5)))
  const window = Number.isFinite(query.rankWindow) ? Math.max(1, Math.floor(query.rankWindow)) : null
  const newestSql = window === null ? `SELECT m.id FROM messages m WHERE ${where}` : newestIds(where, scoped, params.param(window), params, scoped ? 'walk' : await startOf(connection, query, window))
  const termList = params.param(terms)
  const weightList = params.param(weights)
  const rows = await connection.search('search', `
    WITH picked AS (${newestSql}), hits AS (SELECT m.id, m.words FROM picked p JOIN messages m ON m.id = p.id),
    scored AS (
      SELECT h.id, (SELECT coalesce(sum(t.weight), 0) FROM unnest(${termList}::tsquery[], ${weightList}::float8[]) AS t(term, weight) WHERE h.words @@ t.term) AS score,
        count(*) OVER () AS matched
      FROM hits h ORDER BY score DESC, h.id DESC LIMIT ${params.param(limit)}
    )
    SELECT ${columns}, s.score, s.matched FROM scored s JOIN messages m ON m.id = s.id ORDER BY s.score DESC, s.id DESC`, params.values)
  const matched = Number((rows[0] as Row | undefined)?.['matched'] ?? 0)
  await completeLight(lightReader(connection), rows)
  return { hits: rows.map(row => ({ message: toMessage(row), score: Number(row['score']) })), windowed: window !== null && matched >= window }
}

/**
 * Several lists in one statement: every light newest-first list's ids (each the SQL searchIndex
 * runs for it, as its own CTE), then the rows of all of them read once — a row several lists hold
 * is sent once. One snapshot, one round trip and one planning instead of one per list; on a
 * loaded server the lists no longer wait for a connection each. Any other list goes through
 * searchIndex (at the same time).
 */
export async function searchIndexes(connection: PgConnection, queries: readonly IndexQuery[], whole: (query: IndexQuery) => Promise<WholeStore>, total: () => Promise<number>): Promise<IndexResult[]> {
  const batched = (query: IndexQuery): boolean => newestFirst(query) && query.light === true
  const batch = async (): Promise<Map<number, IndexResult>> => {
    let lists: Array<{ at: number; sql: string }> = []
    const rows = await guardedLists(connection, async bounded => {
      const made = await listsSql(connection, queries, batched, whole, bounded)
      lists = made.lists
      return lists.length === 0 ? undefined : {
        sql: `
      WITH ${made.ctes},
      picked AS (${lists.map((_, index) => `SELECT ${index} AS list, id FROM l${index}`).join(' UNION ALL ')}),
      wanted AS (SELECT id, array_agg(list) AS lists FROM picked GROUP BY id)
      SELECT ${CANDIDATE_COLUMNS}, w.lists FROM wanted w JOIN messages m ON m.id = w.id ORDER BY m.id DESC`,
        params: made.params,
        storeWide: made.storeWide,
      }
    })
    if (lists.length === 0) return new Map()
    await completeLight(lightReader(connection), rows)
    const answers = new Map(lists.map(list => [list.at, { hits: [] as IndexHit[], windowed: false }]))
    // rows come newest first: each list's hits in its own order (newest first), scored as searchIndex scores them
    for (const row of rows) {
      const message = toMessage(row)
      for (const index of row['lists'] as number[]) {
        const answer = answers.get(lists[index]!.at)!
        answer.hits.push({ message, score: -answer.hits.length })
      }
    }
    return answers
  }
  const [answers, others] = await Promise.all([
    batch(),
    Promise.all(queries.map(async query => (batched(query) ? undefined : searchIndex(connection, query, await whole(query), total)))),
  ])
  return queries.map((_, at) => others[at] ?? answers.get(at) ?? { hits: [], windowed: false })
}

/**
 * The ids of newest-first lists (ShadowBackend.listIds), newest first, in one statement: the
 * same lists searchIndexes runs, without reading their rows (the search reads the few it chooses
 * with candidateRows). Another kind of list is refused.
 */
export async function listIds(connection: PgConnection, queries: readonly IndexQuery[], whole: (query: IndexQuery) => Promise<WholeStore>): Promise<number[][]> {
  if (queries.some(query => !newestFirst(query))) throw new Error('listIds answers newest-first lists only')
  const ids: number[][] = queries.map(() => [])
  let lists: Array<{ at: number; sql: string }> = []
  const rows = await guardedLists<{ list: number; ids: string[] | null }>(connection, async bounded => {
    const made = await listsSql(connection, queries, () => true, whole, bounded)
    lists = made.lists
    return lists.length === 0 ? undefined : {
      sql: `
    WITH ${made.ctes}
    ${lists.map((_, index) => `SELECT ${index} AS list, (SELECT array_agg(id ORDER BY id DESC) FROM l${index}) AS ids`).join(' UNION ALL ')}`,
      params: made.params,
      storeWide: made.storeWide,
    }
  })
  for (const row of rows) ids[lists[row.list]!.at] = (row.ids ?? []).map(Number)
  return ids
}

/** Light rows of these ids, one per id (ShadowBackend.candidateRows); `undefined` for one no longer stored. */
export async function candidateRows(connection: PgConnection, ids: readonly number[]): Promise<Array<ShadowMessage | undefined>> {
  if (ids.length === 0) return []
  const rows = await connection.search('search', `
    SELECT w.i::int AS wanted_at, ${CANDIDATE_COLUMNS} FROM unnest($1::bigint[]) WITH ORDINALITY AS w(id, i) JOIN messages m ON m.id = w.id`, [[...ids]])
  await completeLight(lightReader(connection), rows)
  const found = new Map(rows.map(row => [row['wanted_at'] as number, toMessage(row)]))
  return ids.map((_, index) => found.get(index + 1))
}

/**
 * The CTEs of a batch of newest-first lists (`l0`, `l1`, … in the order of `lists`, and their
 * shared walk), for the queries `take` accepts; a list that cannot match anything is left out.
 */
async function listsSql(connection: PgConnection, queries: readonly IndexQuery[], take: (query: IndexQuery) => boolean, whole: (query: IndexQuery) => Promise<WholeStore>, bounded = false): Promise<{ lists: Array<{ at: number; sql: string }>; ctes: string; params: Params; storeWide: boolean }> {
  const params = new Params()
  const walk = new SharedWalk(params)
  // every list's plan (its start needs the statistics, cached) at once; SQL text in list order
  const plans = await Promise.all(queries.map(async query => {
    if (!take(query)) return undefined
    const scope = await whole(query)
    const sql = await newestListSql(connection, query, scope, params, walk, bounded)
    return sql === undefined ? undefined : { sql, storeWide: !scopedMatch(query, scope) }
  }))
  const lists = plans.flatMap((plan, at) => (plan === undefined ? [] : [{ at, sql: plan.sql }]))
  return { lists, ctes: `${walk.sql()} ${lists.map((list, index) => `l${index} AS MATERIALIZED (${list.sql})`).join(',\n')}`, params, storeWide: plans.some(plan => plan?.storeWide === true) }
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
  const rows = await connection.search<{ i: number; n: number }>('count terms', `
    SELECT t.i::int AS i, (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.words @@ (CASE WHEN $3::text IS NULL THEN t.q ELSE t.q && $3::tsquery END) LIMIT $2) x) AS n
    FROM unnest($1::tsquery[]) WITH ORDINALITY AS t(q, i)`, [wanted.map(entry => lexemeQuery(entry.lexemes)), limit, scope ?? null])
  for (const row of rows) counts[wanted[row.i - 1]!.index] = row.n
  if (scope === undefined) {
    // store-wide counts steer this search's lists (startOf): exact below the cap
    const cache = countsOf(connection)
    if (cache.size > COUNT_ENTRIES) cache.clear()
    const read = Date.now()
    for (const entry of wanted) cache.set(lexemeQuery(entry.lexemes), { n: counts[entry.index]!, capped: counts[entry.index]! >= limit, read })
  }
  return counts
}

/**
 * Store-wide substring counts, each up to `cap`: the head (the newest bucket or two) counted
 * first; a substring dense there (cap reached within 1/PROBE_SHARE of the buckets, by the head's
 * density) is counted on bucket by bucket, newest first, until the cap; a sparser one is counted
 * in one read of the index. The same numbers either way. One read of the whole index costs every
 * posting of the substring's trigrams whatever the cap (a CJK word in ~130 rows per bucket whose
 * trigrams are in many more: a lossy 190k-entry bitmap, 40-50 ms at 10M, against 15 bucket
 * probes, ~9 ms); a bucket probe costs 1/buckets of that and stops at the cap.
 */
function gramCountsSql(patterns: string, operator: 'LIKE' | '~', cap: string): string {
  // matches in buckets `from` down to `to`, newest first (each probe one GIN scan of one bucket)
  const probes = (from: string, to: string): string => `SELECT 1 FROM generate_series(${from}, ${to}, -1) AS b(k) CROSS JOIN LATERAL (SELECT 1 FROM messages m WHERE m.bucket = b.k AND m.grams ${operator} t.p LIMIT ${cap}) y`
  return `
    WITH span AS (SELECT s.top, ${headLow('s.top')} AS low FROM (SELECT coalesce(max(id), 0) + 1 AS top FROM messages) s)
    SELECT t.i::int AS i, c.n FROM unnest(${patterns}::text[]) WITH ORDINALITY AS t(p, i) CROSS JOIN span
    CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM (${probes(`(span.top - 1) >> ${BUCKET_BITS}`, 'span.low')} LIMIT ${cap}) z) head
    CROSS JOIN LATERAL (SELECT CASE
      WHEN head.n >= ${cap} THEN ${cap}::int
      WHEN ${denseSql('head.n', cap, 'span')} THEN head.n + (SELECT count(*)::int FROM (${probes('span.low - 1', '0')} LIMIT ${cap} - head.n) z)
      ELSE (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.grams ${operator} t.p LIMIT ${cap}) z) END AS n) c`
}

export async function documentFrequencies(connection: PgConnection, query: FrequencyQuery, whole: boolean): Promise<number[]> {
  if (noSessions(query)) return query.terms.map(() => 0)
  const tags = scopeTags(query, SCOPE_LEXEME_LIMIT)
  const scope = whole || query.global === true || tags === undefined ? undefined : scopeQuery(tags)
  if (query.index === 'grams') {
    // every term in one round trip, each counted up to the cap; a long term as a regular expression (gramsOperator)
    const params = new Params()
    const cap = params.param(Math.max(1, Math.floor(query.cap)))
    const matched = query.terms.map(term => gramsOperator([term]))
    const groups = (['LIKE', '~'] as const).map(operator => {
      const at = matched.flatMap((match, index) => (match.operator === operator ? [index] : []))
      return { operator, at, patterns: at.map(index => matched[index]!.patterns[0]!) }
    }).filter(group => group.at.length > 0)
    const scoped = scope === undefined ? undefined : params.param(scope)
    const sql = groups.map((group, g) => {
      const patterns = params.param(group.patterns)
      const counted = scoped === undefined ? gramCountsSql(patterns, group.operator, cap) : `
        SELECT t.i::int AS i, (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.grams ${group.operator} t.p AND m.words @@ ${scoped}::tsquery LIMIT ${cap}) x) AS n
        FROM unnest(${patterns}::text[]) WITH ORDINALITY AS t(p, i)`
      return `SELECT ${g} AS g, q.i, q.n FROM (${counted}) q`
    })
    const counts = query.terms.map(() => 0)
    if (sql.length === 0) return counts
    const rows = await connection.search<{ g: number; i: number; n: number }>('count terms', sql.join(' UNION ALL '), params.values)
    for (const row of rows) counts[groups[row.g]!.at[row.i - 1]!] = row.n
    return counts
  }
  const sets = query.terms.map(lexemes)
  const found = await countTerms(connection, sets.filter(set => set.length > 0), query.cap, scope)
  let next = 0
  return sets.map(set => set.length === 0 ? 0 : found[next++] ?? 0)
}

