/**
 * Backend-neutral reading of a `MessageFilter`: every backend needs the same answers, only the
 * query language differs, so they live here instead of in each backend.
 */
import type { MessageFilter } from './backend.ts'
import type { LineageSegment } from './types.ts'

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
