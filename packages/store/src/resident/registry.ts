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
 * A session is read a page at a time (bounded in rows and in text, each page its own snapshot: the
 * index takes the first page's revision, and the next delta read since it sorts out what changed
 * under the later pages). A small index is built when a search first needs it (at most
 * INLINE_MESSAGES messages and INLINE_BYTES of text analysed, no cut row's tail past
 * INLINE_TAIL_CHARS); a larger one is built in the background, in slices of rows and of text
 * (inside a long row's tail too) that let other calls run (the lists answer meanwhile),
 * or ahead of time by `warm`. Indexes past the budget leave least recently used first (the next
 * search of theirs builds again); a scope larger than `maxMessages` is not made resident, nor one
 * whose indexes alone pass the budget: a build stops there, and the scope is searched through the
 * lists until it holds fewer messages than it did then.
 */
import { CANDIDATE_TEXT_CHARS, type SessionChanges, type ShadowBackend } from '../backend.ts'
import type { LineageSegment, ShadowMessage } from '../types.ts'
import { ROW_BYTES } from './memory.ts'
import { SessionIndex, type StoredEvent } from './session-index.ts'
import { textTail } from './tail.ts'

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
  /** The backend's change mark read before they were found current (ShadowBackend.changeMark), if it has one. */
  readonly mark?: string
}

export const RESIDENT_MAX_BYTES = 256 * 1024 * 1024
export const RESIDENT_MAX_MESSAGES = 200_000
/**
 * Messages, and bytes of their text, a search builds indexes for itself (about a quarter second of
 * analysis on one core); more are built in the background while the index lists answer. Both: 200
 * messages of 256 KB took a first search 10 s when only messages were counted.
 */
export const INLINE_MESSAGES = 4_000
export const INLINE_BYTES = 1_000_000
/**
 * Characters of cut rows' tails a search lists itself (a delta's, or a build's row): past them the
 * rows are taken in by a build in the background, sliced inside a row's tail, while the lists answer.
 * A 2M-character message of distinct words took the first search after it 2.4 s (its tail listed
 * inline); a 300 KB file read (a tail of ~45k characters) is still taken in at once.
 */
export const INLINE_TAIL_CHARS = 128_000
/**
 * Rows and text bytes of one read of a build (a page): one synchronous read of a 200k-message
 * session held the store's thread for 4 s.
 */
export const PAGE_ROWS = 1_000
export const PAGE_BYTES = 1_000_000
/** Rows, and characters of their text, analysed between two yields of a background build. */
const SLICE = 256
export const SLICE_CHARS = 64_000
/**
 * A session's index is built again (a row rewritten, removed, expired or filled in below the last under
 * it, a delta too large to apply in a search, or it was evicted) no sooner than REBUILD_SPACING times its
 * last build's wall time (from its first page) after that build ended, and not within
 * REBUILD_PAUSE_MS: a session rewritten every few hundred milliseconds was rebuilt without pause (1.6 s of
 * a core each time, never resident). The lists answer meanwhile. A build's share of a core stays under
 * 1 / (1 + REBUILD_SPACING).
 */
const REBUILD_SPACING = 4
const REBUILD_PAUSE_MS = 1_000
/** Longest a background build's slice waits for the searches under way (searchesDone). */
export const BUILD_WAIT_MS = 250
/** A revision no row is stamped with: a delta read since it returns none (a probe of the counters). */
const PROBE = Number.MAX_SAFE_INTEGER


/** Bytes an index is taken to hold (session-index.ts `bytes`: rows, text, tokens, lists, keys, anchors, values, pieces). */
function bytesOf(index: SessionIndex): number {
  return index.bytes
}

/** A scope's key among the ones found too large. */
function scopeKey(ids: readonly string[]): string {
  return JSON.stringify(ids)
}

export class SessionIndexRegistry {
  readonly maxBytes: number
  readonly maxMessages: number
  /** Most recently used last (Map keeps insertion order). */
  private readonly indexes = new Map<string, SessionIndex>()
  /** Searches under way (`foreground`): no slice of a background build runs while one is. */
  private searching = 0
  /** Background builds waiting for the searches under way to end. */
  private readonly resuming: Array<() => void> = []
  /** Syncs under way, per session: a second search waits for the first's instead of applying the same rows twice. */
  private readonly syncing = new Map<string, Promise<unknown>>()
  /** Background builds under way, per session. */
  private readonly building = new Map<string, Promise<void>>()
  /**
   * Scopes (and single sessions) whose indexes passed the budget, with the messages they held then:
   * not built again while they hold as many (a search would otherwise build one and drop it, every time).
   */
  private readonly oversized = new Map<string, number>()
  /** Per session: when its last build ended and how long it took (ms, performance.now()): REBUILD_SPACING. */
  private readonly lastBuild = new Map<string, { end: number; took: number }>()
  /**
   * Per session: the index a sync found current, and the backend's change mark read before that
   * sync. While the mark stays and that index is still the one held, nothing was written to the
   * store since and a search skips the sync's read (an index a background build held instead may be
   * older than the mark: its next search syncs it).
   */
  private readonly found = new Map<string, { readonly mark: string; readonly index: SessionIndex }>()

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
   * Run a search with the background builds paused: their slices shared the thread with it, so a
   * search waited behind them at every await (PostgreSQL, a session of 100 messages of 2M
   * characters building: 0.9-1.1 s a store-wide search instead of 0.36 s). A build goes on when no
   * search is under way; one that searches keep waiting leaves its session to the index lists,
   * which answer meanwhile. A search never waits for a background build (acquire), so this cannot
   * deadlock.
   */
  async foreground<T>(search: () => Promise<T>): Promise<T> {
    this.searching += 1
    try {
      return await search()
    } finally {
      this.searching -= 1
      if (this.searching === 0) for (const resume of this.resuming.splice(0)) resume()
    }
  }

  /** Between two slices of a background build: other calls run first, and no slice runs during a search. */
  private async pause(): Promise<void> {
    await new Promise(resolve => setImmediate(resolve))
    await this.searchesDone()
  }

  /**
   * Resolves when no search is under way, or after BUILD_WAIT_MS: searches that overlap without a
   * gap (two callers on PostgreSQL) held a build off for as long as they ran, and `warm` with it
   * (review, 2026-12-06); now it takes a slice at least every BUILD_WAIT_MS.
   */
  private async searchesDone(): Promise<void> {
    const started = performance.now()
    for (;;) {
      const left = BUILD_WAIT_MS - (performance.now() - started)
      if (this.searching === 0 || left <= 0) return
      await new Promise<void>(resolve => {
        const resume = (): void => {
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          const at = this.resuming.indexOf(resume)
          if (at >= 0) this.resuming.splice(at, 1)
          resolve()
        }, left)
        this.resuming.push(resume)
      })
    }
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
    // read before anything else: a write committed after it changes the next one
    const mark = await backend.changeMark?.()
    if (mark !== undefined && ids.every(id => !this.syncing.has(id) && this.currentUnder(id, mark))) {
      for (const id of ids) this.hold(id, this.indexes.get(id)!)
      const indexes = segments.map(segment => this.indexes.get(segment.sessionId)!)
      return { indexes, revisions: indexes.map(index => index.revision), mark }
    }
    // one sync at a time per session (one in flight is waited for); the scope's sessions at once
    await Promise.all(ids.map(id => this.syncing.get(id)))
    const sync = this.sync(backend, ids, segments, mark)
    for (const id of ids) this.syncing.set(id, sync.catch(() => undefined))
    try {
      if (!(await sync)) return undefined
      // (an index dropped between the sync and here, by a forget or an eviction, is not searched)
      const indexes = segments.map(segment => this.indexes.get(segment.sessionId))
      if (indexes.some(index => index === undefined)) return undefined
      // the closing check may compare marks only when the sync found every one of these current
      const current = mark !== undefined && ids.every(id => this.currentUnder(id, mark))
      return { indexes: indexes as SessionIndex[], revisions: indexes.map(index => index!.revision), ...(current ? { mark } : {}) }
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
    const counts = probe.map(change => change?.messageCount ?? 0)
    if (counts.reduce((sum, count) => sum + count, 0) > this.maxMessages || this.tooLarge(ids, counts)) return
    const cold = ids.filter((id, at) => probe[at] !== undefined && this.indexes.get(id)?.revision !== probe[at]!.revision)
    await this.buildInBackground(backend, cold.map(id => new Build(id, tagOf(segments, id))))
  }

  /** Whether a sync found the index held for this session current under this mark (currentUnder). */
  private currentUnder(id: string, mark: string): boolean {
    const entry = this.found.get(id)
    return entry !== undefined && entry.mark === mark && this.indexes.get(id) === entry.index
  }

  /**
   * Bring these sessions' indexes up to date; false when the lists must answer. With the change
   * mark read before it (`mark`), the indexes it found current are recorded under it (currentUnder).
   */
  private async sync(backend: ShadowBackend, ids: readonly string[], segments: readonly LineageSegment[], mark?: string): Promise<boolean> {
    // the index objects the delta read is asked for: a delta applies to the one it was read against
    const asked = ids.map(id => this.indexes.get(id))
    // the indexes this sync itself made current (a background build may hold another meanwhile)
    const made = new Map<string, SessionIndex>()
    // a delta is read up to what a search applies itself: past that (another process wrote a
    // session's history meanwhile: 50,000 rows took a search 2 s) the index is built again, in the background
    const changes = await backend.sessionChanges(ids.map(sessionId => {
      const held = this.indexes.get(sessionId)
      return held === undefined ? { sessionId, since: PROBE } : { sessionId, since: held.revision, bound: { rows: INLINE_MESSAGES + 1, bytes: INLINE_BYTES } }
    }))
    // the tails of rows a delta appends (rows it marks need none; a rebuild reads its own)
    const tails = await Promise.all(ids.map((id, at) => {
      const change = changes[at]
      const held = this.indexes.get(id)
      return change === undefined || held === undefined || !whole(change) ? new Map<number, string>() : tailsOf(backend, id, change.rows.filter(row => row.seq > held.lastSeq))
    }))
    let total = 0
    const rebuild: string[] = []
    let cost = 0
    // a delta whose cut rows' tails pass INLINE_TAIL_CHARS: built again in the background, sliced (lists answer meanwhile)
    let heavy = false
    ids.forEach((id, at) => {
      const change = changes[at]
      const index = this.indexes.get(id)
      if (change === undefined) {
        // forgotten meanwhile: nothing of it is held (the search finds no rows of it)
        const empty = new SessionIndex(id, tagOf(segments, id), -1)
        this.indexes.delete(id)
        this.indexes.set(id, empty)
        made.set(id, empty)
        return
      }
      total += change.messageCount
      const longTails = [...tails[at]!.values()].reduce((sum, tail) => sum + tail.length, 0) > INLINE_TAIL_CHARS
      heavy ||= longTails
      if (index === undefined || !whole(change) || longTails || !apply(index, change, tails[at]!)) {
        rebuild.push(id)
        cost += change.messageCount
      } else if (index === asked[at]) made.set(id, index)
    })
    if (total > this.maxMessages || this.tooLarge(ids, changes.map(change => change?.messageCount ?? 0))) {
      for (const id of rebuild) this.indexes.delete(id)
      return false
    }
    if (rebuild.some(id => this.resting(id))) {
      // built again too soon after the last build: the lists answer (the stale index goes)
      for (const id of rebuild) this.indexes.delete(id)
      return false
    }
    if (cost > INLINE_MESSAGES || heavy) {
      // a large build would hold this search (and the process) for seconds: it runs in the background
      // (the stale indexes go now: the budget holds the new ones)
      for (const id of rebuild) this.indexes.delete(id)
      void this.buildInBackground(backend, rebuild.map(id => new Build(id, tagOf(segments, id)))).catch(() => undefined)
      return false
    }
    // built here up to INLINE_BYTES of text (their messages are few, their texts may not be); the rest in the background
    const inline = { bytes: INLINE_BYTES }
    const builds = rebuild.map(id => new Build(id, tagOf(segments, id)))
    for (const build of builds) {
      if (inline.bytes <= 0 || !(await this.advance(backend, build, inline))) continue
      this.built(build)
      if (build.outcome === 'oversized') return false
      // forgotten meanwhile: nothing of it is held (as above)
      if (build.outcome === 'read') {
        // a search's own build (up to INLINE_MESSAGES): its lists copied at their size at once
        build.index.built()
        for (const step of build.index.fitLists()) void step
      }
      const held = build.outcome === 'gone' ? new SessionIndex(build.index.sessionId, build.index.tag, -1) : build.index
      this.hold(held.sessionId, held)
      made.set(held.sessionId, held)
    }
    const unfinished = builds.filter(build => build.outcome === 'reading')
    if (unfinished.length > 0) {
      for (const build of unfinished) this.indexes.delete(build.index.sessionId)
      void this.buildInBackground(backend, unfinished).catch(() => undefined)
      return false
    }
    for (const id of ids) {
      // dropped (forgotten) while the rebuild's read was under way: the lists answer
      const index = this.indexes.get(id)
      if (index === undefined) return false
      this.hold(id, index)
      if (mark !== undefined && made.get(id) === index) this.found.set(id, { mark, index })
      else this.found.delete(id)
    }
    // grown past the budget by what was appended, or a fork's sessions together: the lists answer (evict
    // drops them); what earlier searches counted of long CJK words goes first (counted again when asked)
    const scope = [...new Set(ids.map(id => this.indexes.get(id)!))]
    const bytes = (): number => scope.reduce((sum, index) => sum + bytesOf(index), 0)
    if (bytes() > this.maxBytes) for (const index of scope) index.dropMemos()
    if (bytes() > this.maxBytes) {
      this.oversized.set(scopeKey(ids), total)
      return false
    }
    return true
  }

  /**
   * Whether a scope of these sessions (with these messages) is past the budget: at ROW_BYTES a
   * message, or found so before (the scope, or one of its sessions alone) with no fewer messages.
   */
  private tooLarge(ids: readonly string[], counts: readonly number[]): boolean {
    const total = counts.reduce((sum, count) => sum + count, 0)
    if (total * ROW_BYTES > this.maxBytes) return true
    const scopes = [{ key: scopeKey(ids), messages: total }]
    if (ids.length > 1) ids.forEach((id, at) => scopes.push({ key: scopeKey([id]), messages: counts[at]! }))
    for (const { key, messages } of scopes) {
      const found = this.oversized.get(key)
      if (found === undefined) continue
      if (messages >= found) return true
      // rows were removed since: worth a try again
      this.oversized.delete(key)
    }
    return false
  }

  /** These builds carried on a page at a time, analysed a slice at a time; each index is held when done. */
  private async buildInBackground(backend: ShadowBackend, builds: readonly Build[]): Promise<void> {
    const ids = builds.map(build => build.index.sessionId)
    const started = builds.filter(build => !this.building.has(build.index.sessionId))
    if (started.length === 0) {
      await Promise.all(ids.map(id => this.building.get(id)))
      return
    }
    const run = (async () => {
      // not in the caller's turn (a search that built what it could inline, a write that warms its session)
      await this.pause()
      for (const build of started) {
        await this.advance(backend, build)
        // a sync that came in meanwhile brings it up to date at the next search (a session gone meanwhile is not held)
        if (build.outcome === 'read') {
          // its last read (the empty page) may have let a search begin
          await this.searchesDone()
          build.index.built()
          for (const step of build.index.fitLists()) {
            void step
            await this.pause()
          }
          this.hold(build.index.sessionId, build.index)
        }
        this.built(build)
      }
    })()
    for (const build of started) this.building.set(build.index.sessionId, run)
    try {
      await run
    } finally {
      for (const build of started) this.building.delete(build.index.sessionId)
      this.evict(new Set(ids))
    }
  }

  /**
   * Read and analyse a build's next pages until it is over (true: the session is read, gone, or its
   * index passed the budget), or, given an inline budget, until that is spent (false: the build
   * carries on from there). Without one it yields after every slice of rows or text, so other
   * calls run between two.
   */
  private async advance(backend: ShadowBackend, build: Build, inline?: { bytes: number }): Promise<boolean> {
    let rows = 0
    let chars = 0
    if (build.started < 0) build.started = performance.now()
    for (;;) {
      if (inline !== undefined && inline.bytes <= 0) return false
      const bytes = inline === undefined ? PAGE_BYTES : Math.min(PAGE_BYTES, inline.bytes)
      const [page] = await backend.sessionChanges([{ sessionId: build.index.sessionId, since: -1, page: { afterSeq: build.afterSeq, rows: PAGE_ROWS, bytes } }])
      if (page === undefined || page.rows.length === 0) {
        build.outcome = page === undefined ? 'gone' : 'read'
        return true
      }
      // the first page's revision: the next delta read since it takes in what changed under the later pages
      if (build.afterSeq < 0) build.index.revision = page.revision
      const tails = await tailsOf(backend, build.index.sessionId, page.rows)
      // a search may have begun while these were read: it goes first
      if (inline === undefined) await this.searchesDone()
      for (const [at, row] of page.rows.entries()) {
        const tail = tails.get(row.seq)
        if (inline !== undefined) {
          // a long tail is listed in the background, a slice at a time, not in the caller's search
          if ((tail?.length ?? 0) > INLINE_TAIL_CHARS) return false
          build.index.append(row, page.events[at]!, tail)
          inline.bytes -= Buffer.byteLength(row.text) + (tail?.length ?? 0)
        } else {
          for (const listed of build.index.appending(row, page.events[at]!, tail)) {
            // inside a long row's tail too: a slice's worth of it, then other calls
            if ((chars += listed) < SLICE_CHARS) continue
            await this.pause()
            rows = 0
            chars = 0
          }
        }
        build.afterSeq = row.seq
        rows += 1
        chars += row.text.length
        if (inline === undefined && (rows >= SLICE || chars >= SLICE_CHARS)) {
          await this.pause()
          rows = 0
          chars = 0
        }
      }
      // what the index will hold once built: its build's own tables go then (SessionIndex.built)
      if (bytesOf(build.index) - build.index.buildingBytes > this.maxBytes) {
        build.outcome = 'oversized'
        this.oversized.set(scopeKey([build.index.sessionId]), page.messageCount)
        return true
      }
    }
  }

  /** A build is over: when, and how long it took (REBUILD_SPACING). */
  private built(build: Build): void {
    const end = performance.now()
    this.lastBuild.set(build.index.sessionId, { end, took: end - build.started })
  }

  /** Whether a session's last build ended too recently for another (REBUILD_SPACING). */
  private resting(id: string): boolean {
    const last = this.lastBuild.get(id)
    if (last === undefined) return false
    if (performance.now() - last.end < Math.max(REBUILD_PAUSE_MS, REBUILD_SPACING * last.took)) return true
    this.lastBuild.delete(id)
    return false
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
    // nothing committed since the mark the indexes were current under: they still are
    if (scope.mark !== undefined && (await backend.changeMark?.()) === scope.mark) {
      this.evict(new Set(held.map(([index]) => index.sessionId)))
      return true
    }
    // the revisions only (a write meanwhile may be large: its rows are not read here)
    const now = await backend.sessionChanges(held.map(([index]) => ({ sessionId: index.sessionId, since: PROBE })))
    // the search may have grown them (long CJK words it counted): the budget holds after it too
    this.evict(new Set(held.map(([index]) => index.sessionId)))
    return held.every(([, revision], at) => now[at] !== undefined && now[at].revision === revision)
  }

  /**
   * Least recently used out until the budget holds, the scope just synced last: it first forgets
   * the long CJK words its searches counted, and goes only when it alone is still past the budget
   * (its search answered from the lists).
   */
  private evict(keep: ReadonlySet<string>): void {
    let { bytes } = this.usage()
    for (const last of [false, true]) {
      for (const [id, index] of this.indexes) {
        if (bytes <= this.maxBytes) return
        if (keep.has(id) !== last) continue
        if (last) {
          bytes -= bytesOf(index)
          index.dropMemos()
          bytes += bytesOf(index)
          if (bytes <= this.maxBytes) return
        }
        this.indexes.delete(id)
        bytes -= bytesOf(index)
      }
    }
  }

  /** Drop a session's index (forgotten). */
  drop(sessionId: string): void {
    this.indexes.delete(sessionId)
    this.lastBuild.delete(sessionId)
    this.found.delete(sessionId)
  }
}

function tagOf(segments: readonly LineageSegment[], id: string): string {
  return segments.find(segment => segment.sessionId === id)!.tag
}

/** A session's index as it is read in, page by page (`afterSeq`: the last seq read, -1 before the first page). */
class Build {
  readonly index: SessionIndex
  afterSeq = -1
  /** 'gone': the session was not stored (forgotten meanwhile); 'oversized': its index passed the budget. */
  outcome: 'reading' | 'read' | 'gone' | 'oversized' = 'reading'
  /** When its first page was read (performance.now()): a build waits its turn behind others first. */
  started = -1

  constructor(sessionId: string, tag: string) {
    this.index = new SessionIndex(sessionId, tag, -1)
  }
}

/**
 * The tails of the rows a light read cut (tail.ts textTail), by seq: each read in full. A
 * row rewritten or gone since its light read is left out (the next delta read finds the change).
 */
async function tailsOf(backend: ShadowBackend, sessionId: string, rows: readonly ShadowMessage[]): Promise<Map<number, string>> {
  const tails = new Map<number, string>()
  for (const row of rows) {
    if (row.text.length < CANDIDATE_TEXT_CHARS || row.expiredAt !== null) continue
    const full = await backend.getMessage(sessionId, row.seq)
    if (full === undefined || full.hash !== row.hash) continue
    const tail = textTail(full.text, row.text.length)
    if (tail !== undefined) tails.set(row.seq, tail)
  }
  return tails
}

/** Whether a delta read with sync's bound is the whole delta (under both bounds). */
function whole(change: SessionChanges): boolean {
  // the byte bound's own answer: the light rows' text is cut shorter than the read it counted
  if (change.rows.length > INLINE_MESSAGES || !change.complete) return false
  let bytes = 0
  for (const row of change.rows) bytes += Buffer.byteLength(row.text)
  return bytes < INLINE_BYTES
}

/** Apply a delta in place; false when only a rebuild can (rows removed, rewritten, or filled in below the last). */
function apply(index: SessionIndex, change: SessionChanges, tails: ReadonlyMap<number, string>): boolean {
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
  for (const { row, event } of appended) index.append(row, event, tails.get(row.seq))
  // the pieces of a delta's rows are not kept for the next one (a live session's few rows a turn)
  if (appended.length > 0) index.built()
  index.revision = change.revision
  return true
}
