/**
 * A deep lineage (filter.ts `deepLineage`) as SQLite conditions. Searches check it on each
 * candidate row through `shadow_below(scope, session)`: the session's bound, looked up in a map
 * built once per segments list (a row's cost no longer grows with the chain). Reads and counts join
 * the rows against the bound list instead, so the (session_id, seq) index finds exactly the rows in
 * scope.
 */
import type { DatabaseSync } from 'node:sqlite'
import { lineageBounds, oncePerList } from '../filter.ts'
import type { LineageSegment } from '../types.ts'

/**
 * Bound maps kept for statements about to run (most recently used). A statement runs as soon as
 * its SQL is built (SQLite answers synchronously), so only the last few are ever asked for.
 */
const KEPT_SCOPES = 64
const scopes = new Map<number, ReadonlyMap<string, number>>()
const handles = new WeakMap<readonly LineageSegment[], number>()
let nextHandle = 0

/** The handle `shadow_below` knows these segments by (the same list, the same handle while kept). */
export function scopeHandle(segments: readonly LineageSegment[]): number {
  const known = handles.get(segments)
  const bounds = known === undefined ? undefined : scopes.get(known)
  if (known !== undefined && bounds !== undefined) {
    scopes.delete(known)
    scopes.set(known, bounds)
    return known
  }
  const handle = (nextHandle += 1)
  scopes.set(handle, new Map(lineageBounds(segments).map(bound => [bound.sessionId, bound.below])))
  handles.set(segments, handle)
  while (scopes.size > KEPT_SCOPES) scopes.delete(scopes.keys().next().value!)
  return handle
}

/** Register `shadow_below` on a connection. */
export function registerLineageFunction(db: DatabaseSync): void {
  db.function('shadow_below', (handle, sessionId) => {
    const bounds = scopes.get(Number(handle))
    // a scope no longer kept fails the statement: never an empty answer that looks like no rows
    if (bounds === undefined) throw new Error(`lineage scope ${String(handle)} is no longer kept`)
    return typeof sessionId === 'string' ? bounds.get(sessionId) ?? null : null
  })
}

/** The bound list as one JSON parameter: `[[session, bound], ...]`. */
export function boundsJson(segments: readonly LineageSegment[]): string {
  return oncePerList(jsonLists, segments, list => JSON.stringify(lineageBounds(list).map(bound => [bound.sessionId, bound.below])))
}

const jsonLists = new WeakMap<readonly LineageSegment[], string>()

/** FROM clause of rows in a deep lineage (alias `m`), its parameter pushed: one index range per session. */
export function lineageFrom(segments: readonly LineageSegment[], params: unknown[]): string {
  params.push(boundsJson(segments))
  return 'json_each(?) j CROSS JOIN messages m ON m.session_id = j.value ->> 0 AND m.seq < j.value ->> 1'
}
