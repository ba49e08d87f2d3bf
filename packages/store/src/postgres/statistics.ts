/**
 * What steers PostgreSQL's list plans: ANALYZE's view of the words column (cached, refreshed beside
 * the searches), and the term counts a search just took; `startOf` picks how a store-wide
 * newest-first list starts (newest.ts). Only a choice of plan: every start gives the same rows.
 */
import type { IndexQuery } from '../backend.ts'
import type { PgConnection } from './connection.ts'
import { DIRECT_CAP, RECENT_WALK, type Start } from './newest.ts'
import { lexemeQuery, lexemes } from './tokens.ts'

/** Planner statistics are re-read at most this often. */
const STATS_TTL_MS = 60_000
/** Below this many rows every frequency is counted (cheap, and statistics of a small table are coarse). */
export const STATS_MIN_ROWS = 50_000

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
export async function wordStats(connection: PgConnection): Promise<WordStats> {
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
export async function startOf(connection: PgConnection, query: IndexQuery, limit: number): Promise<Start> {
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
export const COUNT_ENTRIES = 2_000
const countCache = new WeakMap<PgConnection, Map<string, { n: number; capped: boolean; read: number }>>()

export function countsOf(connection: PgConnection): Map<string, { n: number; capped: boolean; read: number }> {
  let counts = countCache.get(connection)
  if (counts === undefined) countCache.set(connection, counts = new Map())
  return counts
}
