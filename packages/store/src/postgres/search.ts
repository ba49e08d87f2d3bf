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
import { CANDIDATE_COLUMNS, filterSql, MESSAGE_COLUMNS, Params, toMessage, type Row, type WholeStore } from './rows.ts'
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
const statsReads = new WeakMap<PgConnection, Promise<WordStats>>()

/**
 * ANALYZE's view of the words column, cached: what makes "is this term common?" free on a large
 * store. Past STATS_TTL_MS the cached view still answers while a fresh one is read beside it:
 * reading it (6,000 lexemes at 10M) took 14-21 ms idle, once a minute inside some search.
 */
async function wordStats(connection: PgConnection): Promise<WordStats> {
  const cached = statsCache.get(connection)
  if (cached !== undefined && Date.now() - cached.read < STATS_TTL_MS) return cached
  let reading = statsReads.get(connection)
  if (reading === undefined) {
    reading = readWordStats(connection).finally(() => statsReads.delete(connection))
    statsReads.set(connection, reading)
  }
  if (cached === undefined) return reading
  // a failed refresh keeps the old view; the next search past the TTL tries again
  reading.catch(() => undefined)
  return cached
}

async function readWordStats(connection: PgConnection): Promise<WordStats> {
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
function scopedMatch(segments: IndexQuery['segments'], whole: WholeStore): boolean {
  return !whole && new Set(segments.map(segment => segment.tag)).size <= SCOPE_LEXEME_LIMIT
}

function matchSql(query: Pick<IndexQuery, 'index' | 'terms' | 'operator' | 'segments' | 'referredDays'>, whole: WholeStore, params: Params): string | undefined {
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
  // scoped: the session filter (filterSql) is the grams index's third key, one GIN scan; adding
  // the scope lexeme would make the planner intersect two indexes and recheck every session row
  return `m.grams LIKE ${query.operator === 'and' ? 'ALL' : 'ANY'}(${params.param(patterns)}::text[])`
}

/** Newest rows of the store examined one by one before the index is asked bucket by bucket. */
const RECENT_WALK = 2_000
/** A probed list first reads up to this many matches straight from the index: fewer are all of them. */
const DIRECT_CAP = 500
/** The head (the buckets just below a point, read to judge a substring's density) covers at least this many rows. */
const HEAD_ROWS = 1 << (BUCKET_BITS - 1)
/** Bucket probes are chosen when the head's density says they end within this share of the buckets (1/n). */
const PROBE_SHARE = 4

/** The lowest bucket of the head below `top` (an id, exclusive): its own bucket, and the one before when that holds too few rows. */
function headLow(top: string): string {
  return `greatest(((${top} - 1) >> ${BUCKET_BITS}) - CASE WHEN ${top} - (((${top} - 1) >> ${BUCKET_BITS}) << ${BUCKET_BITS}) < ${HEAD_ROWS} THEN 1 ELSE 0 END, 0)`
}

/**
 * Whether `found` matches in the head (of `span`: top, low) say the rest of `wanted` turn up
 * within 1/PROBE_SHARE of the store's buckets, probed newest first. Only a choice of plan: both
 * plans give the same rows.
 */
function denseSql(found: string, wanted: string, span: string): string {
  return `((${found})::float8 * ${span}.top >= ${PROBE_SHARE}.0 * ${wanted} * greatest(${span}.top - (${span}.low << ${BUCKET_BITS}), 1))`
}

/**
 * How a store-wide newest-first list starts: `walk` checks the newest RECENT_WALK rows one by one
 * first (right for a term in more than limit/RECENT_WALK of the rows: it ends there), `probe` goes
 * to the index at once (right for anything rarer; reading 2,000 rows' lexemes is most of such a
 * list's cost), `direct` reads all matches from the index first (right for a few hundred: one
 * probe per bucket would cost more than all of them).
 */
type Start = 'walk' | 'probe' | 'direct'

/**
 * SQL for the ids of the newest `limit` rows matching `where` (alias `m`), newest first, with a
 * cost bounded whatever the terms' frequencies, in one statement:
 *
 * - scoped (the session lexemes are in the match): one GIN intersection of term and scope
 *   entries, sorted; its size is bounded by the scope's rows, never by the store's;
 * - store-wide: (`walk`) the newest RECENT_WALK rows checked one by one (a common term is
 *   answered there: never a backwards walk through the whole id index until `limit` matches turn
 *   up); then, or at once (`probe`), the text index asked bucket by bucket from the newest (the
 *   bucket is the index's second key, schema v2), each probe an intersection of the terms with one
 *   bucket's 65k rows, stopping as soon as `limit` are found. A sparse combination costs one cheap
 *   probe per bucket; no plan sorts every match of a common word.
 */
function newestIds(where: string, scoped: boolean, limit: string, params: Params, start: Start = 'walk', walk?: SharedWalk, emptyDirect = false): string {
  // `+ 0`: the planner must not walk the id index backwards through other sessions' rows
  if (scoped) return `SELECT m.id FROM messages m WHERE ${where} ORDER BY m.id + 0 DESC LIMIT ${limit}`
  const probes = (edge: string): string => `
    SELECT x.id FROM ${edge} CROSS JOIN LATERAL generate_series((edge.id - 1) >> ${BUCKET_BITS}, 0, -1) AS b(k)
      CROSS JOIN LATERAL (SELECT m.id FROM messages m WHERE m.bucket = b.k AND m.id < edge.id AND ${where} ORDER BY m.id + 0 DESC LIMIT ${limit}) x`
  const newest = '(SELECT coalesce(max(id), 0) + 1 AS id FROM messages) edge'
  if (start === 'probe') return `${probes(newest)} LIMIT ${limit}`
  if (start === 'direct') {
    // all matches at once, bounded (DIRECT_CAP rows): fewer are all of them; more (the count
    // behind the choice was stale) fall back to the probes
    const cap = params.param(DIRECT_CAP)
    return `
    WITH direct AS MATERIALIZED (SELECT m.id FROM messages m WHERE ${where} LIMIT ${cap}),
    few AS (SELECT count(*) < ${cap} AS whole FROM direct)
    (SELECT id FROM direct WHERE (SELECT whole FROM few) ORDER BY id DESC LIMIT ${limit})
    UNION ALL
    (${probes(newest)} WHERE NOT (SELECT whole FROM few))
    LIMIT ${limit}`
  }
  if (walk !== undefined) {
    // the batch's lists check the same newest rows: one walk for all of them (SharedWalk)
    return `
    (SELECT id FROM ${SharedWalk.RECENT} WHERE ${walk.hit(where)} ORDER BY id DESC)
    UNION ALL
    (${probes(`${SharedWalk.EDGE} edge`)} WHERE edge.n >= ${walk.size})
    LIMIT ${limit}`
  }
  const size = params.param(RECENT_WALK)
  if (emptyDirect) {
    // A substring (no statistics) the newest rows do not hold at all: the bucket(s) just below
    // the walk (the head, HEAD_ROWS at least) tell how dense it is further down. Dense enough to
    // fill the list within 1/PROBE_SHARE of the buckets: probed bucket by bucket; sparser: its
    // matches below the head read at once (DIRECT_CAP, then the probes). Judged on the newest
    // 2,000 rows alone, a substring a burst of other sessions' rows lacks was read at once, and
    // such a read costs every posting of its trigrams (a long identifier: 16,876 buffers, ~380 ms
    // at 10M) where one bucket's probe answered it (~7 ms).
    const cap = params.param(DIRECT_CAP)
    const none = '(SELECT hits = 0 AND n >= ' + size + ' FROM edge)'
    return `
    WITH recent AS MATERIALIZED (
      SELECT m.id, (${where}) AS hit FROM (SELECT * FROM messages ORDER BY id DESC LIMIT ${size}) m
    ), edge AS (SELECT coalesce(min(id), 0) AS id, count(*) AS n, count(*) FILTER (WHERE hit) AS hits FROM recent),
    span AS (SELECT e.id AS top, ${headLow('e.id')} AS low FROM edge e),
    head AS MATERIALIZED (
      SELECT x.id FROM span CROSS JOIN LATERAL generate_series((span.top - 1) >> ${BUCKET_BITS}, span.low, -1) AS b(k)
        CROSS JOIN LATERAL (SELECT m.id FROM messages m WHERE m.bucket = b.k AND m.id < span.top AND ${where} ORDER BY m.id + 0 DESC LIMIT ${limit}) x
      WHERE ${none}),
    sparse AS (SELECT h.n < ${limit} AND ${denseSql('h.n', limit, 'span')} IS NOT TRUE AS yes FROM span, (SELECT count(*) AS n FROM head) h),
    below AS (SELECT CASE WHEN e.hits = 0 THEN span.low << ${BUCKET_BITS} ELSE e.id END AS id, e.n, e.hits FROM edge e, span),
    direct AS MATERIALIZED (SELECT m.id FROM messages m WHERE ${none} AND (SELECT yes FROM sparse) AND m.id < (SELECT id FROM below) AND ${where} LIMIT ${cap}),
    few AS (SELECT count(*) < ${cap} AS whole FROM direct)
    (SELECT id FROM recent WHERE hit ORDER BY id DESC)
    UNION ALL
    (SELECT id FROM head ORDER BY id DESC)
    UNION ALL
    (SELECT id FROM direct WHERE ${none} AND (SELECT yes FROM sparse) AND (SELECT whole FROM few) ORDER BY id DESC)
    UNION ALL
    (${probes('below edge')} WHERE edge.n >= ${size} AND NOT (edge.hits = 0 AND (SELECT yes FROM sparse) AND (SELECT whole FROM few)))
    LIMIT ${limit}`
  }
  return `
    WITH recent AS MATERIALIZED (
      SELECT m.id, (${where}) AS hit FROM (SELECT * FROM messages ORDER BY id DESC LIMIT ${size}) m
    ), edge AS (SELECT coalesce(min(id), 0) AS id, count(*) AS n FROM recent)
    (SELECT id FROM recent WHERE hit ORDER BY id DESC)
    UNION ALL
    (${probes('edge')} WHERE edge.n >= ${size})
    LIMIT ${limit}`
}

/**
 * The recent-row walk of a batch (searchIndexes): the newest RECENT_WALK rows read once, each
 * list's condition a column of it, instead of one walk over the same rows per list.
 */
class SharedWalk {
  static readonly RECENT = 'walk_recent'
  static readonly EDGE = 'walk_edge'
  private readonly params: Params
  private sizeParam: string | undefined
  private readonly conditions: string[] = []

  constructor(params: Params) {
    this.params = params
  }

  /** The walk's length as a parameter (made on first use: an unused parameter has no type). */
  get size(): string {
    return this.sizeParam ??= this.params.param(RECENT_WALK)
  }

  /** The column telling whether a walked row matches `where`. */
  hit(where: string): string {
    this.conditions.push(where)
    return `h${this.conditions.length - 1}`
  }

  /** The walk's CTEs (with a trailing comma), or nothing when no list walks. */
  sql(): string {
    if (this.conditions.length === 0) return ''
    return `${SharedWalk.RECENT} AS MATERIALIZED (
      SELECT m.id, ${this.conditions.map((where, index) => `(${where}) AS h${index}`).join(', ')} FROM (SELECT * FROM messages ORDER BY id DESC LIMIT ${this.size}) m
    ), ${SharedWalk.EDGE} AS (SELECT coalesce(min(id), 0) AS id, count(*) AS n FROM ${SharedWalk.RECENT}),`
  }
}

/**
 * A substring's tokens that are whole tokens wherever it occurs (all but its first and last:
 * "payments/refund.ts" is in no row without the word "refund"), analysed as words.
 */
function innerWords(substring: string): string[] {
  return [...substring.matchAll(/[\p{L}\p{N}]+/gu)].slice(1, -1).map(match => match[0])
}

/**
 * Walk first only when the terms may be common enough to fill the list from the newest rows, by
 * ANALYZE's statistics of the words column (a lexeme it does not list is rarer than every one it
 * lists); read them directly when this search's own term counts (countTerms, moments ago) say
 * they are few. A substring is at most as common as its rarest inner word; one without inner
 * words has no statistics and walks first.
 */
async function startOf(connection: PgConnection, query: IndexQuery, limit: number): Promise<Start> {
  const stats = await wordStats(connection)
  if (stats.rows < STATS_MIN_ROWS) return 'walk'
  const counted = countsOf(connection)
  const wordRows = (word: string): number => {
    const exact = counted.get(lexemeQuery(lexemes(word)))
    if (exact !== undefined && Date.now() - exact.read < COUNT_TTL_MS && !exact.capped) return exact.n
    return Math.min(...lexemes(word).map(lexeme => stats.common.get(lexeme) ?? stats.floor)) * stats.rows
  }
  const rows = (term: string): number => {
    const words = query.index === 'words' ? [term] : innerWords(term)
    const known = words.filter(word => lexemes(word).length > 0)
    if (known.length === 0 && query.index === 'grams') return wholeWordHint(term) ?? stats.rows
    return known.length === 0 ? stats.rows : Math.min(...known.map(wordRows))
  }
  // A substring that is one long word ("glimmerwraith") and that this search just counted as a
  // word, rarely: most of its matches are that word, so it starts as rarely. Only a hint for the
  // start — `direct` falls back to the probes when it finds more than DIRECT_CAP; without it such
  // a term checks the newest rows and then probes every bucket (153 at 10M), each GIN scan also
  // reading the pending list a busy writer keeps filling.
  const wholeWordHint = (term: string): number | undefined => {
    if (!WHOLE_WORD.test(term) || [...term].length < WHOLE_WORD_CHARS) return undefined
    const found = lexemes(term)
    if (found.length !== 1) return undefined
    const exact = counted.get(lexemeQuery(found))
    return exact !== undefined && Date.now() - exact.read < COUNT_TTL_MS && !exact.capped && exact.n * WHOLE_WORD_SLACK < DIRECT_CAP ? exact.n * WHOLE_WORD_SLACK : undefined
  }
  const estimates = query.terms.filter(term => term.length > 0).map(rows)
  if (estimates.length === 0) return 'walk'
  const matching = query.operator === 'and' ? Math.min(...estimates) : estimates.reduce((sum, value) => sum + value, 0)
  if (matching / Math.max(1, stats.rows) * RECENT_WALK >= limit) return 'walk'
  return matching < DIRECT_CAP ? 'direct' : 'probe'
}

/** A substring of one word token (letters and digits only)... */
const WHOLE_WORD = /^[\p{L}\p{N}]+$/u
/** ...this long at least (a short one is a piece of many longer words)... */
const WHOLE_WORD_CHARS = 8
/** ...is taken for this many times its count as a word (other words holding it). */
const WHOLE_WORD_SLACK = 4

/** How long a term count taken for a search steers the plans of that search's lists. */
const COUNT_TTL_MS = 10_000
/** Counts kept per connection at most (a bound, not a tuning: the next search counts again). */
const COUNT_ENTRIES = 2_000
const countCache = new WeakMap<PgConnection, Map<string, { n: number; capped: boolean; read: number }>>()

function countsOf(connection: PgConnection): Map<string, { n: number; capped: boolean; read: number }> {
  let counts = countCache.get(connection)
  if (counts === undefined) countCache.set(connection, counts = new Map())
  return counts
}

/** A list answered newest first (no relevance pass): what searchIndexes can batch. */
function newestFirst(query: IndexQuery): boolean {
  return query.order === 'newest' || query.index === 'grams'
}

/** The match and filter of a list (alias `m`), or undefined when it cannot match anything. */
function whereOf(query: IndexQuery, whole: WholeStore, params: Params): string | undefined {
  if (query.terms.length === 0 || query.segments.length === 0) return undefined
  const match = matchSql(query, whole, params)
  if (match === undefined) return undefined
  // referring to a day of the window stands in for the time bounds
  // a scoped words match holds the scope lexemes: its sessions are checked on the row (filterSql)
  const sessions = query.index === 'words' && scopedMatch(query.segments, whole) ? 'row' : 'index'
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
const TRIGRAM_RUN = /[\p{L}\p{N}]{3}/u

/** The ids of the newest `limit` rows matching `where` among the store's newest UNSELECTIVE_ROWS. */
function newestRowsSql(where: string, limit: number, params: Params): string {
  return `SELECT m.id FROM (SELECT * FROM messages ORDER BY id DESC LIMIT ${params.param(UNSELECTIVE_ROWS)}) m WHERE ${where} ORDER BY m.id DESC LIMIT ${params.param(limit)}`
}

/**
 * Run a statement of candidate lists under the list guard (listTimeoutMs); when it trips, the
 * same lists with every store-wide one bounded to the newest UNSELECTIVE_ROWS rows, under the
 * search guard. A plan the store did not expect (or a server too loaded for the full one) costs
 * the guard and a bounded read, never the search.
 */
async function guardedLists<R extends Record<string, unknown>>(connection: PgConnection, build: (bounded: boolean) => Promise<{ sql: string; params: Params } | undefined>): Promise<R[]> {
  const full = await build(false)
  if (full === undefined) return []
  const rows = await connection.searchList<R>('search', full.sql, full.params.values)
  if (rows !== undefined) return rows
  const bounded = await build(true)
  return bounded === undefined ? [] : connection.search<R>('search', bounded.sql, bounded.params.values)
}

/** SQL of a newest-first list's ids (newest first), or undefined when it is empty whatever the rows; `bounded`: store-wide lists look at the newest rows only (guardedLists). */
async function newestListSql(connection: PgConnection, query: IndexQuery, whole: WholeStore, params: Params, walk?: SharedWalk, bounded = false): Promise<string | undefined> {
  const limit = Math.max(1, Math.floor(query.limit))
  const scoped = scopedMatch(query.segments, whole)
  if (bounded && !scoped) {
    // the list guard tripped on the full plan (listed): the newest rows only
    const where = whereOf(query, whole, params)
    return where === undefined ? undefined : newestRowsSql(where, limit, params)
  }
  if (query.index === 'grams' && !scoped && query.segments.length > 0) {
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
      return ids === undefined ? undefined : { sql: `WITH picked AS (${ids}) SELECT ${columns} FROM picked p JOIN messages m ON m.id = p.id ORDER BY m.id DESC`, params }
    })
    return { hits: rows.map((row, index) => ({ message: toMessage(row), score: -index })), windowed: false }
  }
  const params = new Params()
  const where = whereOf(query, whole, params)
  if (where === undefined) return { hits: [], windowed: false }
  const limit = Math.max(1, Math.floor(query.limit))
  const scoped = scopedMatch(query.segments, whole)
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
      }
    })
    if (lists.length === 0) return new Map()
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
  const found = new Map(rows.map(row => [row['wanted_at'] as number, toMessage(row)]))
  return ids.map((_, index) => found.get(index + 1))
}

/**
 * The CTEs of a batch of newest-first lists (`l0`, `l1`, … in the order of `lists`, and their
 * shared walk), for the queries `take` accepts; a list that cannot match anything is left out.
 */
async function listsSql(connection: PgConnection, queries: readonly IndexQuery[], take: (query: IndexQuery) => boolean, whole: (query: IndexQuery) => Promise<WholeStore>, bounded = false): Promise<{ lists: Array<{ at: number; sql: string }>; ctes: string; params: Params }> {
  const params = new Params()
  const walk = new SharedWalk(params)
  // every list's plan (its start needs the statistics, cached) at once; SQL text in list order
  const plans = await Promise.all(queries.map(async query => (take(query) ? newestListSql(connection, query, await whole(query), params, walk, bounded) : undefined)))
  const lists = plans.flatMap((sql, at) => (sql === undefined ? [] : [{ at, sql }]))
  return { lists, ctes: `${walk.sql()} ${lists.map((list, index) => `l${index} AS MATERIALIZED (${list.sql})`).join(',\n')}`, params }
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
function gramCountsSql(patterns: string, cap: string): string {
  // matches in buckets `from` down to `to`, newest first (each probe one GIN scan of one bucket)
  const probes = (from: string, to: string): string => `SELECT 1 FROM generate_series(${from}, ${to}, -1) AS b(k) CROSS JOIN LATERAL (SELECT 1 FROM messages m WHERE m.bucket = b.k AND m.grams LIKE t.p LIMIT ${cap}) y`
  return `
    WITH span AS (SELECT s.top, ${headLow('s.top')} AS low FROM (SELECT coalesce(max(id), 0) + 1 AS top FROM messages) s)
    SELECT t.i::int AS i, c.n FROM unnest(${patterns}::text[]) WITH ORDINALITY AS t(p, i) CROSS JOIN span
    CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM (${probes(`(span.top - 1) >> ${BUCKET_BITS}`, 'span.low')} LIMIT ${cap}) z) head
    CROSS JOIN LATERAL (SELECT CASE
      WHEN head.n >= ${cap} THEN ${cap}::int
      WHEN ${denseSql('head.n', cap, 'span')} THEN head.n + (SELECT count(*)::int FROM (${probes('span.low - 1', '0')} LIMIT ${cap} - head.n) z)
      ELSE (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.grams LIKE t.p LIMIT ${cap}) z) END AS n) c`
}

export async function documentFrequencies(connection: PgConnection, query: FrequencyQuery, whole: boolean): Promise<number[]> {
  if (query.segments.length === 0) return query.terms.map(() => 0)
  const tags = [...new Set(query.segments.map(segment => segment.tag))]
  const scope = whole || query.global === true || tags.length > SCOPE_LEXEME_LIMIT ? undefined : scopeQuery(tags)
  if (query.index === 'grams') {
    // every term in one round trip, each counted up to the cap
    const params = new Params()
    const patterns = params.param(query.terms.map(likePattern))
    const cap = params.param(Math.max(1, Math.floor(query.cap)))
    const rows = await connection.search<{ i: number; n: number }>('count terms', scope === undefined ? gramCountsSql(patterns, cap) : `
      SELECT t.i::int AS i, (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.grams LIKE t.p AND m.words @@ ${params.param(scope)}::tsquery LIMIT ${cap}) x) AS n
      FROM unnest(${patterns}::text[]) WITH ORDINALITY AS t(p, i)`, params.values)
    const counts = query.terms.map(() => 0)
    for (const row of rows) counts[row.i - 1] = row.n
    return counts
  }
  const sets = query.terms.map(lexemes)
  const found = await countTerms(connection, sets.filter(set => set.length > 0), query.cap, scope)
  let next = 0
  return sets.map(set => set.length === 0 ? 0 : found[next++] ?? 0)
}

