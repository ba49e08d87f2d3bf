/**
 * SessionIndexRegistry: the resident indexes of one store object, by session id, kept in step
 * with the store and within a memory budget.
 *
 * Before every search of a lineage scope it asks the backend, in one call, what changed in each
 * of the scope's sessions since the revision its index reflects (`sessionChanges`: the session's
 * revision, and the rows written since, light). Rows appended after the last one are added;
 * a row whose marks changed (an elision) is updated in place; anything else (rows removed, a row
 * rewritten or dropped by retention, a row filled in below the last) rebuilds the index from a
 * full read. So what another process or host wrote is seen as soon as it committed, and what this
 * process wrote costs a delta read of its own rows, not a rebuild.
 *
 * A small index is built when a search first needs it; a larger one (past INLINE_MESSAGES) is built
 * in the background, in slices that let other calls run (the lists answer meanwhile), or ahead of
 * time by `warm`. Indexes past the budget leave least recently used first (the next search of
 * theirs builds again); a scope larger than `maxMessages` is not made resident.
 */
import type { SessionChanges, ShadowBackend } from '../backend.ts'
import type { LineageSegment, ShadowMessage } from '../types.ts'
import { SessionIndex, type StoredEvent } from './session-index.ts'

export interface ResidentOptions {
  /** Bytes of resident indexes kept (an estimate); 0 turns resident search off. Default 256 MiB. */
  readonly maxBytes?: number
  /** A lineage scope of more messages is searched through the index lists. Default 200,000. */
  readonly maxMessages?: number
}

/** The indexes a search reads (one per segment) and the revision each reflected when acquired. */
export interface ResidentScope {
  readonly indexes: readonly SessionIndex[]
  readonly revisions: readonly number[]
}

export const RESIDENT_MAX_BYTES = 256 * 1024 * 1024
export const RESIDENT_MAX_MESSAGES = 200_000
/**
 * Messages a search builds indexes for itself (about a quarter second of analysis on one core);
 * more are built in the background while the index lists answer.
 */
export const INLINE_MESSAGES = 4_000
/** Rows analysed between two yields of a background build. */
const SLICE = 256
/** A revision no row is stamped with: a delta read since it returns none (a probe of the counters). */
const PROBE = Number.MAX_SAFE_INTEGER

/** Bytes an index is taken to hold: its characters (UTF-16), its list entries and columns, its rows. */
function bytesOf(index: SessionIndex): number {
  return index.chars * 2 + index.entries * 8 + index.size * 160
}

export class SessionIndexRegistry {
  readonly maxBytes: number
  readonly maxMessages: number
  /** Most recently used last (Map keeps insertion order). */
  private readonly indexes = new Map<string, SessionIndex>()
  /** Syncs under way, per session: a second search waits for the first's instead of applying the same rows twice. */
  private readonly syncing = new Map<string, Promise<unknown>>()
  /** Background builds under way, per session. */
  private readonly building = new Map<string, Promise<void>>()

  constructor(options: ResidentOptions = {}) {
    this.maxBytes = options.maxBytes ?? RESIDENT_MAX_BYTES
    this.maxMessages = options.maxMessages ?? RESIDENT_MAX_MESSAGES
  }

  get enabled(): boolean {
    return this.maxBytes > 0
  }

  /** Sessions held and the bytes they are taken to hold. */
  usage(): { sessions: number; bytes: number } {
    let bytes = 0
    for (const index of this.indexes.values()) bytes += bytesOf(index)
    return { sessions: this.indexes.size, bytes }
  }

  /**
   * The current resident index of each segment's session (same order) and the revision each was
   * current at, or undefined when the lists answer this search: the scope is too large, resident
   * search is off, an index it needs is still being built, or one went (forgotten) meanwhile.
   */
  async acquire(backend: ShadowBackend, segments: readonly LineageSegment[]): Promise<ResidentScope | undefined> {
    if (!this.enabled || segments.length === 0) return undefined
    const ids = [...new Set(segments.map(segment => segment.sessionId))]
    if (ids.some(id => this.building.has(id))) return undefined
    // one sync at a time per session (one in flight is waited for); the scope's sessions at once
    await Promise.all(ids.map(id => this.syncing.get(id)))
    const sync = this.sync(backend, ids, segments)
    for (const id of ids) this.syncing.set(id, sync.catch(() => undefined))
    try {
      if (!(await sync)) return undefined
      // (an index dropped between the sync and here, by a forget or an eviction, is not searched)
      const indexes = segments.map(segment => this.indexes.get(segment.sessionId))
      if (indexes.some(index => index === undefined)) return undefined
      return { indexes: indexes as SessionIndex[], revisions: indexes.map(index => index!.revision) }
    } finally {
      for (const id of ids) this.syncing.delete(id)
      this.evict(new Set(ids))
    }
  }

  /**
   * Build (or bring up to date) these sessions' indexes ahead of their first search, in slices
   * that let other calls run. Resolves when they are held (or left out: too large, or off).
   */
  async warm(backend: ShadowBackend, segments: readonly LineageSegment[]): Promise<void> {
    if (!this.enabled || segments.length === 0) return
    const ids = [...new Set(segments.map(segment => segment.sessionId))]
    await Promise.all(ids.map(id => this.building.get(id)))
    const probe = await backend.sessionChanges(ids.map(sessionId => ({ sessionId, since: PROBE })))
    if (probe.reduce((sum, change) => sum + (change?.messageCount ?? 0), 0) > this.maxMessages) return
    const cold = ids.filter((id, at) => probe[at] !== undefined && this.indexes.get(id)?.revision !== probe[at]!.revision)
    await this.buildInBackground(backend, cold, segments)
  }

  /** Bring these sessions' indexes up to date; false when the lists must answer. */
  private async sync(backend: ShadowBackend, ids: readonly string[], segments: readonly LineageSegment[]): Promise<boolean> {
    const changes = await backend.sessionChanges(ids.map(sessionId => ({ sessionId, since: this.indexes.get(sessionId)?.revision ?? PROBE })))
    let total = 0
    const rebuild: string[] = []
    let cost = 0
    ids.forEach((id, at) => {
      const change = changes[at]
      const index = this.indexes.get(id)
      if (change === undefined) {
        // forgotten meanwhile: nothing of it is held (the search finds no rows of it)
        this.indexes.delete(id)
        this.indexes.set(id, new SessionIndex(id, tagOf(segments, id), -1))
        return
      }
      total += change.messageCount
      if (index === undefined || !apply(index, change)) {
        rebuild.push(id)
        cost += change.messageCount
      }
    })
    if (total > this.maxMessages) {
      for (const id of rebuild) this.indexes.delete(id)
      return false
    }
    if (cost > INLINE_MESSAGES) {
      // a large build would hold this search (and the process) for seconds: it runs in the background
      void this.buildInBackground(backend, rebuild, segments).catch(() => undefined)
      return false
    }
    if (rebuild.length > 0) {
      const fresh = await backend.sessionChanges(rebuild.map(sessionId => ({ sessionId, since: -1 })))
      rebuild.forEach((id, at) => {
        const index = new SessionIndex(id, tagOf(segments, id), -1)
        fill(index, fresh[at])
        this.hold(id, index)
      })
    }
    for (const id of ids) {
      // dropped (forgotten) while the rebuild's read was under way: the lists answer
      const index = this.indexes.get(id)
      if (index === undefined) return false
      this.hold(id, index)
    }
    return true
  }

  /** Full reads of these sessions, analysed a slice at a time; each index is held when done. */
  private async buildInBackground(backend: ShadowBackend, ids: readonly string[], segments: readonly LineageSegment[]): Promise<void> {
    const started = ids.filter(id => !this.building.has(id))
    if (started.length === 0) {
      await Promise.all(ids.map(id => this.building.get(id)))
      return
    }
    const build = (async () => {
      const fresh = await backend.sessionChanges(started.map(sessionId => ({ sessionId, since: -1 })))
      for (const [at, id] of started.entries()) {
        const index = new SessionIndex(id, tagOf(segments, id), -1)
        const change = fresh[at]
        if (change !== undefined) {
          for (let from = 0; from < change.rows.length; from += SLICE) {
            for (let row = from; row < Math.min(change.rows.length, from + SLICE); row += 1) index.append(change.rows[row]!, change.events[row]!)
            await new Promise(resolve => setImmediate(resolve))
          }
          index.revision = change.revision
        }
        // a sync that came in meanwhile brings it up to date at the next search
        this.hold(id, index)
      }
    })()
    for (const id of started) this.building.set(id, build)
    try {
      await build
    } finally {
      for (const id of started) this.building.delete(id)
      this.evict(new Set(ids))
    }
  }

  /** Hold an index as the most recently used. */
  private hold(id: string, index: SessionIndex): void {
    this.indexes.delete(id)
    this.indexes.set(id, index)
  }

  /**
   * Whether the store still holds what these indexes held when acquired: no write committed to their
   * sessions since (a search answers from a snapshot that was current when it ended, as the index
   * lists' search reads its winners again at its end). Compared with the revisions acquired, not the
   * indexes' own: another search of this store object may have brought them up to date meanwhile.
   */
  async unchanged(backend: ShadowBackend, scope: ResidentScope): Promise<boolean> {
    const held = [...new Map(scope.indexes.map((index, at) => [index, scope.revisions[at]!])).entries()]
    const now = await backend.sessionChanges(held.map(([index, revision]) => ({ sessionId: index.sessionId, since: revision })))
    return held.every(([, revision], at) => now[at] !== undefined && now[at].revision === revision)
  }

  /** Least recently used out until the budget holds (never one of the scope just synced). */
  private evict(keep: ReadonlySet<string>): void {
    let { bytes } = this.usage()
    for (const [id, index] of this.indexes) {
      if (bytes <= this.maxBytes) break
      if (keep.has(id)) continue
      this.indexes.delete(id)
      bytes -= bytesOf(index)
    }
  }

  /** Drop a session's index (forgotten). */
  drop(sessionId: string): void {
    this.indexes.delete(sessionId)
  }
}

function tagOf(segments: readonly LineageSegment[], id: string): string {
  return segments.find(segment => segment.sessionId === id)!.tag
}

/** Every row of a full read into a new index. */
function fill(index: SessionIndex, change: SessionChanges | undefined): void {
  if (change === undefined) return
  change.rows.forEach((row, at) => index.append(row, change.events[at]!))
  index.revision = change.revision
}

/** Apply a delta in place; false when only a rebuild can (rows removed, rewritten, or filled in below the last). */
function apply(index: SessionIndex, change: SessionChanges): boolean {
  if (change.revision === index.revision) return true
  // below it: forgotten and registered again; rows removed since: only a full read says which
  if (change.revision < index.revision || change.removedRev > index.revision) return false
  const appended: Array<{ row: ShadowMessage; event: StoredEvent }> = []
  for (const [at, row] of change.rows.entries()) {
    const doc = index.docOf(row.seq)
    if (doc < 0) {
      if (row.seq <= index.lastSeq || (appended.length > 0 && row.seq <= appended.at(-1)!.row.seq)) return false
      appended.push({ row, event: change.events[at]! })
      continue
    }
    const held = index.rows[doc]!
    if (held.hash !== row.hash || held.expiredAt !== row.expiredAt) return false
  }
  // checked first, changed after: a delta that needs a rebuild leaves the index as it was
  for (const row of change.rows) {
    const doc = index.docOf(row.seq)
    if (doc >= 0) index.mark(doc, row)
  }
  for (const { row, event } of appended) index.append(row, event)
  index.revision = change.revision
  return true
}
