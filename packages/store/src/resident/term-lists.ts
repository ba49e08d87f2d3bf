/**
 * TermLists: a session index's keys and their postings (doc numbers ascending, with how often the
 * scan counts the key there). A doc's keys are counted while it is added and filed together once
 * it is (`file`); the one-pass build files them in batches, settled before a list is read.
 * Each key also has a query slot: `scans` (resident/doc-scans.ts) sets the slots of a search's terms.
 */
import { Column, int32 } from './columns.ts'
import { EXACT_ENTRIES, sortedBy } from './lists.ts'
import { ENTRY_BYTES, KEY_BYTES, stringBytes } from './memory.ts'
import { IntScratch } from './text-scan.ts'

export interface Postings {
  /** Doc numbers, ascending (a short list is replaced by a copy at its size as it grows: read it from here). */
  docs: number[]
  /** How many times the scan counts the key in each doc (same order). */
  counts: number[]
}

/** Pending postings (entries × 3) past which `settle` sorts them by key first. */
const SETTLE_SORTED = 3 * 1024

/** List entries copied between two yields of `fit` (~10 ms). */
export const FIT_SLICE = 256 * 1024

export class TermLists {
  /** Bytes held (an estimate, resident/memory.ts): keys and entries, what waits to be filed aside (`pendingBytes`). */
  bytes = 0
  /** Key id → term index for the terms of the scan being made (-1 elsewhere). */
  readonly slots = new Column(int32)
  private readonly ids = new Map<string, number>()
  private readonly lists: Postings[] = []
  /** Per key id: its count in the doc being added (-1: listed at 0 by `listOnce`). */
  private readonly scratch = new Column(int32)
  private readonly touched: number[] = []
  /** Keys listed at a count of 0 for the doc being added (`listOnce`). */
  private readonly folded: number[] = []
  /** Postings not yet in their lists, as (key id, doc, count) in doc order: `settle` moves them. */
  private readonly pending = new IntScratch(64)
  /** Filed straight into their lists (the reference build) instead of in batches. */
  private readonly direct: boolean

  constructor(direct: boolean) {
    this.direct = direct
  }

  /** Bytes of the postings waiting to be filed. */
  get pendingBytes(): number {
    return this.pending.bytes
  }

  /** A key's id, made when new. */
  idOf(key: string): number {
    let id = this.ids.get(key)
    if (id === undefined) {
      id = this.lists.length
      this.ids.set(key, id)
      this.lists.push({ docs: [], counts: [] })
      this.scratch.push(0)
      this.slots.push(-1)
      this.bytes += KEY_BYTES + stringBytes(key)
    }
    return id
  }

  /** A key's id if it has one. */
  idIfAny(key: string): number | undefined {
    return this.ids.get(key)
  }

  /** One more of a key in the doc being added. */
  count(id: number): void {
    const now = this.scratch.get(id)
    if (now === 0) this.touched.push(id)
    this.scratch.set(id, now + 1)
  }

  /** A key listed at a count of 0 for the doc being added, unless the scan counts it there. */
  listOnce(id: number): void {
    if (this.scratch.get(id) !== 0) return
    // marked (a count is never negative) until `file` files it
    this.scratch.set(id, -1)
    this.folded.push(id)
  }

  /** The doc being added is whole: its keys listed at 0, then its counted keys, filed. */
  file(doc: number): void {
    for (const id of this.folded) {
      this.post(id, doc, 0)
      this.scratch.set(id, 0)
    }
    this.folded.length = 0
    for (const id of this.touched) {
      this.post(id, doc, this.scratch.get(id))
      this.scratch.set(id, 0)
    }
    this.touched.length = 0
  }

  /** A key's postings, what waits filed first. */
  postings(key: string): Postings | undefined {
    this.settle()
    const id = this.ids.get(key)
    return id === undefined ? undefined : this.lists[id]
  }

  /**
   * Move the pending postings into their lists, grouped by key: a list is touched once per
   * settle, not once per doc it gains (appended as each doc came, between the rest of a build,
   * nearly every append was a cache miss). Before any list is read. A few postings (a delta's
   * rows) leave each short list they touch at its size; a build's pages do not (copying them at
   * every page took 12% of a cold build): its lists are copied at their size when it is over (`fit`).
   */
  settle(): void {
    const pending = this.pending
    if (pending.length === 0) return
    const data = pending.data
    const lists = this.lists
    if (pending.length < SETTLE_SORTED) {
      for (let at = 0; at < pending.length; at += 3) {
        const list = lists[data[at]!]!
        list.docs.push(data[at + 1]!)
        list.counts.push(data[at + 2]!)
        fitShort(list)
      }
    } else {
      const order = sortedBy(data, pending.length, 3, lists.length)
      for (let index = 0; index < order.length;) {
        const id = data[order[index]!]!
        const list = lists[id]!
        do {
          const at = order[index]!
          list.docs.push(data[at + 1]!)
          list.counts.push(data[at + 2]!)
          index += 1
        } while (index < order.length && data[order[index]!] === id)
      }
    }
    pending.clear()
  }

  /** Settled, and the pending buffer back to its first size (a build is over). */
  release(): void {
    this.settle()
    this.pending.release()
  }

  /**
   * Every list copied at its size, once (V8 gives a pushed list room for 17 values or half again
   * its size: a third of the lists' heap). A generator: it yields after about `slice` entries.
   */
  *fit(slice = FIT_SLICE): Generator<void> {
    let copied = 0
    for (const list of this.lists) {
      list.docs = list.docs.slice()
      list.counts = list.counts.slice()
      copied += list.docs.length + 1
      if (copied >= slice) {
        copied = 0
        yield
      }
    }
  }

  private post(id: number, doc: number, count: number): void {
    if (this.direct) {
      const list = this.lists[id]!
      list.docs.push(doc)
      list.counts.push(count)
    } else this.pending.push3(id, doc, count)
    this.bytes += ENTRY_BYTES
  }
}

/** A short list of postings at its exact size (lists.ts EXACT_ENTRIES): most keys stand in a doc or two. */
function fitShort(list: Postings): void {
  if (list.docs.length > EXACT_ENTRIES) return
  list.docs = list.docs.slice()
  list.counts = list.counts.slice()
}
