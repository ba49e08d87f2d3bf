/**
 * Backend-neutral reading of a `MessageFilter`: every backend needs the same answers, only the
 * query language differs, so they live here instead of in each backend.
 */
import type { MessageFilter, WideScope } from './backend.ts'
import type { LineageSegment } from './types.ts'

/** The filter can match no row whatever the store holds: no session named, none wide. */
export function noSessions(filter: Pick<MessageFilter, 'segments' | 'wide'>): boolean {
  return filter.segments.length === 0 && filter.wide === undefined
}

/**
 * The tags of the sessions in scope, when few enough to scope an index query by (at most `limit`);
 * undefined for more, and for a wide scope (more than WIDE_LISTED sessions, never listed).
 */
export function scopeTags(filter: Pick<MessageFilter, 'segments' | 'wide'>, limit: number): string[] | undefined {
  if (filter.wide !== undefined) return undefined
  const tags = [...new Set(filter.segments.map(segment => segment.tag))]
  return tags.length > limit ? undefined : tags
}

/**
 * A wide scope that is the whole store: every session, none bounded (no fork ancestor, no
 * `beforeSeq`): rows need no session filter. Answered from the filter alone, no statement.
 */
export function wideWholeStore(wide: WideScope, segments: readonly LineageSegment[]): boolean {
  return wide.of === 'store' && segments.every(segment => !Number.isFinite(segment.belowSeq))
}

/** Only the lineage part is set: nothing but sessions restricts the rows. */
export function onlySegments(filter: MessageFilter): boolean {
  return filter.fromSeq === undefined && filter.toSeq === undefined && filter.timeFrom === undefined && filter.timeTo === undefined
    && (filter.roles === undefined || filter.roles.length === 0) && filter.toolName === undefined && filter.elidedBy === undefined
    && (filter.excludeSourceKinds === undefined || filter.excludeSourceKinds.length === 0)
    && (filter.excludeToolNames === undefined || filter.excludeToolNames.length === 0)
}

/**
 * Lineage as row conditions: sessions whose rows are all visible, and fork ancestors visible
 * only below a seq bound (in segment order).
 */
export function splitLineage(segments: readonly LineageSegment[]): { open: string[]; bounded: LineageSegment[] } {
  return {
    open: segments.filter(segment => !Number.isFinite(segment.belowSeq)).map(segment => segment.sessionId),
    bounded: segments.filter(segment => Number.isFinite(segment.belowSeq)),
  }
}

/**
 * Distinct sessions of segments none of which is bounded by a fork, or undefined when one is.
 * When it reaches the store's session count the scope is the whole store and needs no session filter.
 */
export function unboundedSessions(segments: readonly LineageSegment[]): number | undefined {
  if (segments.some(segment => Number.isFinite(segment.belowSeq))) return undefined
  return new Set(segments.map(segment => segment.sessionId)).size
}

/**
 * Fork-bounded segments above which a backend checks the lineage against a bound table (one
 * lookup per row) instead of one condition per segment: a chain 5,000 forks deep checked 5,000
 * conditions on every candidate row, 4-8 s a search.
 */
export const DEEP_LINEAGE = 16

/** Above every seq (seqs are safe integers): the bound of a session whose rows are all visible. */
export const OPEN_BOUND = 2 ** 53

/** The filter's lineage is checked through a bound table (`lineageBounds`). */
export function deepLineage(segments: readonly LineageSegment[]): boolean {
  let bounded = 0
  for (const segment of segments) if (Number.isFinite(segment.belowSeq) && (bounded += 1) > DEEP_LINEAGE) return true
  return false
}

/**
 * One (session, bound) per session: a row is in the lineage when its seq is below its session's
 * bound (the largest of the session's segments, as the OR of their conditions reads; OPEN_BOUND
 * for a session seen whole). Rows are joined against this list, so each session is in it once.
 */
export function lineageBounds(segments: readonly LineageSegment[]): ReadonlyArray<{ readonly sessionId: string; readonly below: number }> {
  // one search passes the same list to every statement it runs: worked out once per list
  return oncePerList(boundLists, segments, list => {
    const bounds = new Map<string, number>()
    for (const segment of list) {
      const below = Number.isFinite(segment.belowSeq) ? Math.max(0, segment.belowSeq) : OPEN_BOUND
      bounds.set(segment.sessionId, Math.max(below, bounds.get(segment.sessionId) ?? 0))
    }
    return [...bounds].map(([sessionId, below]) => ({ sessionId, below }))
  })
}

const boundLists = new WeakMap<readonly LineageSegment[], ReadonlyArray<{ readonly sessionId: string; readonly below: number }>>()

/** `make(segments)` worked out once per segments list (a deep lineage's bound parameter is 20k entries). */
export function oncePerList<T>(cache: WeakMap<readonly LineageSegment[], T>, segments: readonly LineageSegment[], make: (segments: readonly LineageSegment[]) => T): T {
  const known = cache.get(segments)
  if (known !== undefined) return known
  const made = make(segments)
  cache.set(segments, made)
  return made
}
