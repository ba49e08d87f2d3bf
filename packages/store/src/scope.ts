/**
 * Where a read or search may look: a session's lineage (forks read their parent's rows below the
 * fork point instead of copying them), wider scopes, and the row filter a backend applies.
 */
import { WIDE_LISTED, type MessageFilter, type MessageMark, type ShadowBackend, type WideScope } from './backend.ts'
import { viewElision } from './elision-view.ts'
import { ShadowStoreError, invalid } from './errors.ts'
import { LineageOwners } from './lineage-owners.ts'
import type { LineageSegment, ShadowMessage, ShadowRole } from './types.ts'
import { assertSeq, assertString, assertTime, MAX_WORKSPACE_CHARS, ROLES } from './validate.ts'

/** Where a read or search may look. */
export interface ScopeOptions {
  /** The session asking; its fork ancestors are included up to each fork point. */
  readonly sessionId: string
  /** Widen to every session of this workspace (the caller decides whether that is allowed). */
  readonly workspace?: string
  /** Widen to every session in the store (CLI use). */
  readonly allSessions?: boolean
  /**
   * The asking session's own rows from this seq on are out of scope (the turn that asks: its
   * question cannot be its own answer). Ancestors are bounded by the fork point anyway.
   */
  readonly beforeSeq?: number
}

export interface ReadOptions {
  readonly fromSeq?: number
  readonly toSeq?: number
  readonly timeFrom?: number
  readonly timeTo?: number
  readonly limit?: number
  readonly descending?: boolean
  readonly elidedBy?: string
}

/** The session whose row holds `seq`: the oldest ancestor whose fork bound is above it. */
export function ownerOf(segments: readonly LineageSegment[], seq: number): string | undefined {
  return segments.findLast(segment => seq < segment.belowSeq)?.sessionId
}

/**
 * Sessions the first `ancestry` statement walks; each next one walks four times as many (a chain
 * 20,000 deep is 5 statements). Links that loop cost at most one statement's worth of repeats.
 */
const LINEAGE_BATCH = 256

/** The session and its fork ancestors, each with the seq bound below which its rows are visible. */
export async function lineage(backend: ShadowBackend, sessionId: string): Promise<LineageSegment[]> {
  return (await lineageLinks(backend, sessionId)).map(({ sessionId: id, tag, belowSeq }) => ({ sessionId: id, tag, belowSeq }))
}

type LineageLink = LineageSegment & { readonly workspace: string | null }

/**
 * Lineages read under a backend's change mark (ShadowBackend.changeMark), by session: while the
 * mark stays, nothing was written since, and a session's searches read its lineage once.
 */
const kept = new WeakMap<ShadowBackend, { readonly mark: string; readonly lineages: Map<string, readonly LineageLink[]> }>()
/** Lineages kept per backend; past this many they are read again. */
const KEPT_LINEAGES = 1_024

/** `lineage`, each segment with its session's workspace (whether a wide scope holds it). */
async function lineageLinks(backend: ShadowBackend, sessionId: string): Promise<LineageLink[]> {
  assertString(sessionId, 'sessionId')
  // read before the lineage: a write committed after it changes the next one
  const mark = await backend.changeMark?.()
  if (mark === undefined) return readLineage(backend, sessionId)
  let mine = kept.get(backend)
  const known = mine?.mark === mark ? mine.lineages.get(sessionId) : undefined
  if (known !== undefined) return [...known]
  const segments = await readLineage(backend, sessionId)
  if (mine?.mark !== mark) kept.set(backend, mine = { mark, lineages: new Map() })
  if (mine.lineages.size >= KEPT_LINEAGES) mine.lineages.clear()
  mine.lineages.set(sessionId, [...segments])
  return segments
}

async function readLineage(backend: ShadowBackend, sessionId: string): Promise<LineageLink[]> {
  const segments: LineageLink[] = []
  let below = Number.POSITIVE_INFINITY
  const seen = new Set<string>()
  let next: string | null = sessionId
  for (let limit = LINEAGE_BATCH; next !== null; limit *= 4) {
    const batch = await backend.ancestry(next, limit)
    next = null
    for (const current of batch) {
      // links that loop end the lineage at the first session seen again
      if (seen.has(current.sessionId)) return segments
      seen.add(current.sessionId)
      segments.push({ sessionId: current.sessionId, tag: current.tag, belowSeq: below, workspace: current.workspace ?? null })
      if (current.parentSessionId === null) return segments
      below = Math.min(below, current.forkSeq ?? 0)
      next = current.parentSessionId
    }
    // a shorter batch ended at a parent that is not stored
    if (batch.length < limit) return segments
  }
  return segments
}

/** Which rows a scope covers: named segments, and for a wide scope of many sessions its provenance. */
export type ScopeRows = Pick<MessageFilter, 'segments' | 'wide'>

/** A resolved scope, with the asking session's own lineage it read (a read views elision through it). */
export interface ResolvedScope extends ScopeRows {
  readonly segments: LineageSegment[]
  readonly lineage: LineageSegment[]
}

/**
 * Resolve which session's history the scope covers, as lineage segments: every session of a
 * workspace or allSessions scope listed (what `scopeSegments` promises; a listing of all of them).
 * Reads and searches use `scopeAndLineage`, which does not list a wide scope.
 */
export async function scopeSegments(backend: ShadowBackend, scope: ScopeOptions): Promise<LineageSegment[]> {
  const resolved = await scopeAndLineage(backend, scope)
  if (resolved.wide === undefined) return resolved.segments
  const sessions = await backend.listSessions(resolved.wide.of === 'store' ? undefined : resolved.wide.workspace)
  return bounded(withSessions(resolved.lineage, sessions), scope)
}

/** The lineage, then every other of these sessions whole (a session of the lineage keeps its bound). */
function withSessions(own: readonly LineageSegment[], sessions: ReadonlyArray<Pick<LineageSegment, 'sessionId' | 'tag'>>): LineageSegment[] {
  const segments = new Map(own.map(segment => [segment.sessionId, segment]))
  for (const session of sessions) {
    if (!segments.has(session.sessionId)) segments.set(session.sessionId, { sessionId: session.sessionId, tag: session.tag, belowSeq: Number.POSITIVE_INFINITY })
  }
  return [...segments.values()]
}

/**
 * The scope's rows and the asking session's own lineage. A workspace or allSessions scope of at
 * most WIDE_LISTED sessions names them all as segments; a larger one is the lineage plus its
 * provenance (`wide`), so its cost does not grow with the sessions it holds.
 */
export async function scopeAndLineage(backend: ShadowBackend, scope: ScopeOptions): Promise<ResolvedScope> {
  // a widening the caller did not spell right is refused, not read as "no widening"
  if (scope.allSessions !== undefined && typeof scope.allSessions !== 'boolean') throw invalid('allSessions must be true or false')
  if (scope.workspace !== undefined && (typeof scope.workspace !== 'string' || scope.workspace.length > MAX_WORKSPACE_CHARS)) throw invalid(`workspace must be a string of at most ${MAX_WORKSPACE_CHARS} characters`)
  if (scope.allSessions === true || scope.workspace !== undefined) {
    const wide: WideScope = scope.allSessions === true ? { of: 'store' } : { of: 'workspace', workspace: scope.workspace! }
    // independent reads, asked at once; one more than may be listed tells a large scope
    const [sessions, own] = await Promise.all([backend.someSessions(wide, WIDE_LISTED + 1), lineage(backend, scope.sessionId)])
    if (sessions.length > WIDE_LISTED) return { segments: bounded(own, scope), wide, lineage: own }
    return { segments: bounded(withSessions(own, sessions), scope), lineage: own }
  }
  const segments = await lineage(backend, scope.sessionId)
  if (segments.length === 0) throw new ShadowStoreError('NOT_FOUND', `session ${scope.sessionId} is not in the shadow store`)
  return { segments: bounded(segments, scope), lineage: segments }
}

/**
 * Per session id, the seq below which the scope sees its rows (null: not in scope), and whether
 * the scope holds no session at all: what a caller asked of `scopeSegments` to check a row or a
 * checkpoint against a scope, without listing a wide one (one session read per id outside the lineage).
 */
export async function scopeBounds(backend: ShadowBackend, scope: ScopeOptions, sessionIds: readonly string[]): Promise<{ empty: boolean; bounds: Array<number | null> }> {
  const resolved = await scopeAndLineage(backend, scope)
  const named = new Map<string, number>()
  for (const segment of resolved.segments) named.set(segment.sessionId, Math.max(segment.belowSeq, named.get(segment.sessionId) ?? Number.NEGATIVE_INFINITY))
  const wide = resolved.wide
  const bounds = await Promise.all(sessionIds.map(async id => {
    const bound = named.get(assertString(id, 'sessionId'))
    if (bound !== undefined || wide === undefined) return bound ?? null
    const session = await backend.getSession(id)
    return session !== undefined && (wide.of === 'store' || session.workspace === wide.workspace) ? Number.POSITIVE_INFINITY : null
  }))
  return { empty: resolved.segments.length === 0 && wide === undefined, bounds }
}

/** Apply `beforeSeq` to the asking session's own segment. */
function bounded(segments: LineageSegment[], scope: ScopeOptions): LineageSegment[] {
  if (scope.beforeSeq === undefined) return segments
  const before = assertSeq(scope.beforeSeq, 'beforeSeq')
  return segments.map(segment => (segment.sessionId === scope.sessionId ? { ...segment, belowSeq: Math.min(segment.belowSeq, before) } : segment))
}

/**
 * A row of the session's visible history at `seq` (its own, or an ancestor's below the fork), with
 * `elidedBy` as this reader sees it (marks belong to who compacted: elision-view.ts).
 */
export async function lookupInLineage(backend: ShadowBackend, segments: readonly LineageSegment[], seq: number): Promise<ShadowMessage | undefined> {
  return (await lookupAllInLineage(backend, segments, [seq]))[0]
}

/**
 * `lookupInLineage` for each of `seqs` (in their order; seqs with no row left out), with the
 * elision view worked out once for all of them: once per row re-read each row's checkpoint (its
 * whole seq list), and a checkpoint of 40k messages took 30 s to print.
 */
export async function lookupAllInLineage(backend: ShadowBackend, segments: readonly LineageSegment[], seqs: readonly number[]): Promise<ShadowMessage[]> {
  const rows: ShadowMessage[] = []
  if (await ownersHoldAll(backend, segments)) {
    // each seq asked of its owner only, all at once (PostgreSQL answers them in one statement)
    const owners = new LineageOwners(segments)
    const found = await Promise.all(seqs.map(seq => {
      const owner = owners.ownerAt(seq)
      return owner === undefined ? undefined : backend.getMessage(owner.sessionId, seq)
    }))
    for (const row of found) if (row !== undefined) rows.push(row)
    return viewElision(backend, segments, rows)
  }
  for (const seq of seqs) {
    const row = await rowInLineage(backend, segments, seq)
    if (row !== undefined) rows.push(row)
  }
  return viewElision(backend, segments, rows)
}

/** The stored row at `seq` of a lineage, with its owner's own marks. */
export async function rowInLineage(backend: ShadowBackend, segments: readonly LineageSegment[], seq: number): Promise<ShadowMessage | undefined> {
  for (const segment of segments) {
    if (seq >= segment.belowSeq) continue
    const row = await backend.getMessage(segment.sessionId, seq)
    if (row !== undefined) return row
  }
  return undefined
}

/**
 * Whether every seq's row (the first segment's that has one, youngest first) is its owner's: no
 * segment holds a row where an older one also sees (LineageOwners.overlaps; one count, an index
 * range per segment). Rows a fork holds below its own fork point (the store's API takes them;
 * capture never writes them) are looked for segment by segment, as before.
 */
async function ownersHoldAll(backend: ShadowBackend, segments: readonly LineageSegment[]): Promise<boolean> {
  const overlaps = new LineageOwners(segments).overlaps()
  return overlaps.length === 0 || (await backend.countMessages({ segments: overlaps })) === 0
}

/**
 * Hash and marks of the row each seq resolves to in a lineage (its own, or an ancestor's below
 * the fork), with the tag of the session that holds it: what `rowInLineage` finds, without
 * reading text. Each seq is asked of its owner only (one backend call per owner, at once);
 * segment by segment when a fork holds rows below its fork point (ownersHoldAll).
 */
export async function marksInLineage(backend: ShadowBackend, segments: readonly LineageSegment[], seqs: readonly number[]): Promise<Map<number, MessageMark & { readonly tag: string }>> {
  const found = new Map<number, MessageMark & { readonly tag: string }>()
  let rest = [...new Set(seqs)]
  if (rest.length === 0) return found
  if (await ownersHoldAll(backend, segments)) {
    const owners = new LineageOwners(segments)
    const asked = new Map<LineageSegment, number[]>()
    for (const seq of rest) {
      const owner = owners.ownerAt(seq)
      if (owner === undefined) continue
      const list = asked.get(owner)
      if (list === undefined) asked.set(owner, [seq])
      else list.push(seq)
    }
    const answers = await Promise.all([...asked].map(async ([segment, list]) => ({ segment, marks: await backend.messageHashesFor(segment.sessionId, list) })))
    for (const { segment, marks } of answers) for (const mark of marks) found.set(mark.seq, { ...mark, tag: segment.tag })
    return found
  }
  for (const segment of segments) {
    if (rest.length === 0) break
    const here = rest.filter(seq => seq < segment.belowSeq)
    for (const mark of await backend.messageHashesFor(segment.sessionId, here)) found.set(mark.seq, { ...mark, tag: segment.tag })
    rest = rest.filter(seq => !found.has(seq))
  }
  return found
}

/**
 * A checkpoint's originals are rows of its own session's history (its rows and its ancestors'
 * below the fork): narrow the scope to that, so the seq filter cannot match another session.
 */
export async function checkpointScope(backend: ShadowBackend, scope: ScopeRows, checkpointId: string | undefined): Promise<ScopeRows> {
  // the same lists, not copies: a backend answers per-list questions once per list (PostgreSQL's wholeStore)
  if (checkpointId === undefined) return scope
  const checkpoint = await backend.getCheckpoint(assertString(checkpointId, 'checkpoint id'))
  if (checkpoint === undefined) return { segments: [] }
  const named = new Map(scope.segments.map(segment => [segment.sessionId, segment]))
  const wide = scope.wide
  // the checkpoint's lineage as the scope sees it: a named session within its bound, another one of a wide scope whole
  return {
    segments: (await lineageLinks(backend, checkpoint.sessionId)).flatMap(({ sessionId, tag, belowSeq, workspace }) => {
      const seen = named.get(sessionId)
      if (seen !== undefined) return [{ ...seen, belowSeq: Math.min(belowSeq, seen.belowSeq) }]
      return wide !== undefined && (wide.of === 'store' || workspace === wide.workspace) ? [{ sessionId, tag, belowSeq }] : []
    }),
  }
}

export function messageFilter(scope: ScopeRows, options: ReadOptions & { roles?: readonly ShadowRole[]; toolName?: string }): MessageFilter {
  const fromSeq = options.fromSeq === undefined ? undefined : assertSeq(options.fromSeq, 'fromSeq')
  const toSeq = options.toSeq === undefined ? undefined : assertSeq(options.toSeq, 'toSeq')
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) throw invalid(`seq range is inverted: ${fromSeq} > ${toSeq}`)
  const timeFrom = options.timeFrom === undefined ? undefined : assertTime(options.timeFrom, 'timeFrom')
  const timeTo = options.timeTo === undefined ? undefined : assertTime(options.timeTo, 'timeTo')
  if (timeFrom !== undefined && timeTo !== undefined && timeFrom > timeTo) throw invalid('time range is inverted')
  if (options.roles !== undefined && !Array.isArray(options.roles)) throw invalid('roles must be an array')
  if (options.roles !== undefined) for (const role of options.roles) if (!ROLES.has(role)) throw invalid(`unknown role ${JSON.stringify(role)}`)
  return {
    segments: scope.segments,
    ...(scope.wide === undefined ? {} : { wide: scope.wide }),
    ...(fromSeq === undefined ? {} : { fromSeq }),
    ...(toSeq === undefined ? {} : { toSeq }),
    // rows hold whole milliseconds: the same rows, as bounds PostgreSQL's bigint can compare
    ...(timeFrom === undefined ? {} : { timeFrom: Math.ceil(timeFrom) }),
    ...(timeTo === undefined ? {} : { timeTo: Math.floor(timeTo) }),
    // each role once: a list of 100k copies of 'user' is one condition, not 100k SQL variables
    ...(options.roles === undefined || options.roles.length === 0 ? {} : { roles: [...new Set(options.roles)] }),
    ...(options.toolName === undefined ? {} : { toolName: assertString(options.toolName, 'toolName', 200) }),
    ...(options.elidedBy === undefined ? {} : { elidedBy: assertString(options.elidedBy, 'checkpoint id') }),
  }
}
