/**
 * SQL of PostgreSQL's bounded newest-first candidate lists: a scoped list is one GIN intersection;
 * a store-wide one walks the newest rows, then probes the index bucket by bucket (the id bucket is
 * both GIN indexes' second key), or reads a rare list from the index at once; a substring the
 * newest rows lack is judged by the head (the bucket or two below them). Every plan gives the same
 * rows; which one runs is chosen by statistics.ts.
 */
import { BUCKET_BITS } from './schema.ts'
import type { Params } from './rows.ts'

/** Newest rows of the store examined one by one before the index is asked bucket by bucket. */
export const RECENT_WALK = 2_000
/** A probed list first reads up to this many matches straight from the index: fewer are all of them. */
export const DIRECT_CAP = 500
/** The head (the buckets just below a point, read to judge a substring's density) covers at least this many rows. */
const HEAD_ROWS = 1 << (BUCKET_BITS - 1)
/** Bucket probes are chosen when the head's density says they end within this share of the buckets (1/n). */
const PROBE_SHARE = 4

/** The lowest bucket of the head below `top` (an id, exclusive): its own bucket, and the one before when that holds too few rows. */
export function headLow(top: string): string {
  return `greatest(((${top} - 1) >> ${BUCKET_BITS}) - CASE WHEN ${top} - (((${top} - 1) >> ${BUCKET_BITS}) << ${BUCKET_BITS}) < ${HEAD_ROWS} THEN 1 ELSE 0 END, 0)`
}

/**
 * Whether `found` matches in the head (of `span`: top, low) say the rest of `wanted` turn up
 * within 1/PROBE_SHARE of the store's buckets, probed newest first. Only a choice of plan: both
 * plans give the same rows.
 */
export function denseSql(found: string, wanted: string, span: string): string {
  return `((${found})::float8 * ${span}.top >= ${PROBE_SHARE}.0 * ${wanted} * greatest(${span}.top - (${span}.low << ${BUCKET_BITS}), 1))`
}

/**
 * How a store-wide newest-first list starts: `walk` checks the newest RECENT_WALK rows one by one
 * first (right for a term in more than limit/RECENT_WALK of the rows: it ends there), `probe` goes
 * to the index at once (right for anything rarer; reading 2,000 rows' lexemes is most of such a
 * list's cost), `direct` reads all matches from the index first (right for a few hundred: one
 * probe per bucket would cost more than all of them).
 */
export type Start = 'walk' | 'probe' | 'direct'

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
export function newestIds(where: string, scoped: boolean, limit: string, params: Params, start: Start = 'walk', walk?: SharedWalk, emptyDirect = false): string {
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
export class SharedWalk {
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
