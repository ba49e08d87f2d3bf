/**
 * SessionLogIndex: what a compaction pass needs to know about a session's log, kept up to date
 * event by event so a pass costs O(region + surface), never O(log).
 *
 * Why not `session.events`: dsh returns a fresh frozen copy of the whole log after every append,
 * so each access in a pass (which appends four events itself) is a full copy. The index mirrors the
 * log once per session (the first time it is used) and then only appends the events it is told
 * about; anything it was not told about (a missed event) is caught by the length check and
 * re-mirrored.
 *
 * The same copy made dsh rc.8's helpers O(log) per call: once a session has been measured, the
 * token meter's `session/event` listener re-reads `session.events` on every append (a
 * 100k-message session copies ~500k events per event), and the tool-pairing balance cache copies
 * the log whenever the surface changed. The engine therefore hands dsh's meter and pairing
 * helpers `view()`, the session with `events` served from this mirror: they fold the same events,
 * and the real session is never registered with the meter.
 */
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { advance, newCursor, type CaptureCursor } from '../capture/cursor.ts'

/** Work counters, for tests and benchmarks that check a pass does not grow with the log. */
export interface LogIndexWork {
  /** Events folded into the index (each once, unless re-mirrored). */
  indexed: number
  /** Events a pass read or folded to answer a question (cursor folds, lookups). */
  visited: number
  /** Full re-mirrors of a log (first use, or a missed event). */
  mirrors: number
}

/** Largest index `i` with `values[i] < bound` (values ascending), or -1. */
function lastBelow(values: readonly number[], bound: number): number {
  let low = 0
  let high = values.length - 1
  let found = -1
  while (low <= high) {
    const middle = (low + high) >> 1
    if (values[middle]! < bound) { found = middle; low = middle + 1 } else high = middle - 1
  }
  return found
}

export class SessionLogIndex {
  private readonly events: SessionEvent[] = []
  /** Seqs of `turn/start` events, ascending. */
  private readonly turnStarts: number[] = []
  /** Seqs of events that set the cursor's position (turn/start, turn/end, step/start), ascending. */
  private readonly positions: number[] = []
  private compactionStarts = 0
  private lastTurnStart = -1
  private lastTurnEnd = -1
  private lastCompactionStart = -1
  private lastCompactionEnd = -1
  private lastEndSeed = -1
  private proxy: Session | undefined

  private readonly session: Session
  private readonly work: LogIndexWork

  constructor(session: Session, work: LogIndexWork) {
    this.session = session
    this.work = work
  }

  /** Catch up with the log: O(new events); a full re-mirror only if an event was missed. */
  sync(): void {
    const length = this.session.seq
    if (this.events.length === length) return
    if (this.events.length > length) throw new Error(`session ${this.session.id}: the log shrank under the compaction index`)
    const all = this.session.events
    this.work.mirrors += 1
    for (let index = this.events.length; index < all.length; index += 1) this.add(all[index]!)
  }

  /** Append one event as it is published (the engine's `session/event` listener). */
  observe(event: SessionEvent): void {
    if (event.seq === this.events.length) this.add(event)
    // an event from before the mirror (or a gap) is picked up by the next sync()
  }

  private add(event: SessionEvent): void {
    this.work.indexed += 1
    this.events.push(event)
    switch (event.type) {
      case 'turn/start':
        this.turnStarts.push(event.seq)
        this.positions.push(event.seq)
        this.lastTurnStart = event.seq
        break
      case 'turn/end':
        this.positions.push(event.seq)
        this.lastTurnEnd = event.seq
        break
      case 'step/start':
        this.positions.push(event.seq)
        break
      case 'compaction/start':
        this.compactionStarts += 1
        this.lastCompactionStart = event.seq
        break
      case 'compaction/end':
        this.lastCompactionEnd = event.seq
        break
      case 'session/end-seed':
        this.lastEndSeed = event.seq
        break
      default:
        break
    }
  }

  /** The session as dsh's token meter and pairing helpers should see it: `events` is the mirror. */
  view(): Session {
    this.proxy ??= new Proxy(this.session, {
      get: (target, property) => {
        if (property === 'events') {
          this.sync()
          return this.events
        }
        const value: unknown = Reflect.get(target, property, target)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    return this.proxy
  }

  event(seq: number): SessionEvent {
    this.sync()
    const event = this.events[seq]
    if (event === undefined || event.seq !== seq) throw new Error(`session ${this.session.id} has no event at seq ${seq}`)
    this.work.visited += 1
    return event
  }

  /** The open turn, and whether a compaction bracket of this lifetime is open (the lock). */
  entryState(): { openTurn: number | null; locked: boolean } {
    this.sync()
    const start = this.lastTurnStart === -1 ? undefined : this.events[this.lastTurnStart]
    const openTurn = start !== undefined && start.type === 'turn/start' && this.lastTurnStart > this.lastTurnEnd ? start.data.turn : null
    // an unmatched start from before the latest seed boundary belongs to a dead lifetime
    const locked = this.lastCompactionStart > this.lastCompactionEnd && this.lastCompactionStart > this.lastEndSeed
    return { openTurn, locked }
  }

  /** How many compaction brackets the log has opened (the next checkpoint's ordinal is one more). */
  compactionCount(): number {
    this.sync()
    return this.compactionStarts
  }

  /** Whether a `turn/start` lies strictly between seq `after` and seq `before`. */
  turnStartBetween(after: number, before: number): boolean {
    this.sync()
    const index = lastBelow(this.turnStarts, before)
    return index !== -1 && this.turnStarts[index]! > after
  }

  /**
   * Turn and tool name of each of these seqs, folding only from the last position event at or
   * before the first of them (calls are answered within their step, so the step start knows
   * every call a result in the range answers).
   */
  positionsOf(seqs: readonly number[]): Map<number, { event: SessionEvent; turn: number | null; toolName: string | null }> {
    this.sync()
    const found = new Map<number, { event: SessionEvent; turn: number | null; toolName: string | null }>()
    if (seqs.length === 0) return found
    let first = seqs[0]!
    let last = first
    for (const seq of seqs) {
      if (seq < first) first = seq
      if (seq > last) last = seq
    }
    const from = this.positions[lastBelow(this.positions, first + 1)] ?? 0
    const wanted = new Set(seqs)
    const cursor: CaptureCursor = newCursor()
    for (let index = from; index <= last; index += 1) {
      const event = this.events[index]!
      this.work.visited += 1
      const toolName = advance(cursor, event)
      if (wanted.has(index)) found.set(index, { event, turn: cursor.turn, toolName })
    }
    return found
  }
}

/** One index per live session, fed by the engine's event listener. */
export class LogIndexRegistry {
  readonly work: LogIndexWork = { indexed: 0, visited: 0, mirrors: 0 }
  private readonly indexes = new WeakMap<Session, SessionLogIndex>()

  for(session: Session): SessionLogIndex {
    let index = this.indexes.get(session)
    if (index === undefined) {
      index = new SessionLogIndex(session, this.work)
      this.indexes.set(session, index)
    }
    index.sync()
    return index
  }

  /** Feed a published event to its session's index, if the engine has used that session yet. */
  observe(session: Session, event: SessionEvent): void {
    this.indexes.get(session)?.observe(event)
  }
}
