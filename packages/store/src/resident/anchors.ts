/**
 * AnchorIndex: a session's substring anchors (analyzer.ts anchorView) for a resident index
 * (session-index.ts): its distinct lowercased anchors, the docs of each, and a trigram index over
 * them, so a substring term finds its messages (markSubstring).
 *
 * The one-pass build takes a text's anchors from the pass's runs and candidates (text-scan.ts),
 * finds a known one in a table of their code units without making a string, and files docs and
 * new anchors' trigrams in batches, before they are read (`settle`). The reference build adds
 * anchorView's strings as they come; tests/resident-build.test.ts holds the two equal.
 */
import { anchorView, MAX_ANCHOR_CHARS } from '../analyzer.ts'
import { Column, int32, uint8 } from './columns.ts'
import { firstAtOrAbove } from '../sorted.ts'
import { EXACT_ENTRIES, listAdd, sortedBy } from './lists.ts'
import { ANCHOR_BYTES, ENTRY_BYTES, GRAM_BYTES, KEY_BYTES, SLOT_BYTES, stringBytes } from './memory.ts'
import { ANCHOR_CJK, ANCHOR_NON_ASCII, IntScratch, SpanTable, type TextScan } from './text-scan.ts'

/**
 * Texts up to this long take their anchors from the one-pass build: their anchors and CJK runs
 * (disjoint but for CJK runs inside a candidate) cannot reach MAX_ANCHOR_CHARS, so none is
 * dropped for the cap. Longer ones go through analyzer.ts anchorView.
 */
const FAST_ANCHOR_CHARS = Math.floor(MAX_ANCHOR_CHARS / 2) - 2

/** A log of at most this many values (pairs) is a delta's, not a build page's (settleDocs). */
const SMALL_LOG = 2 * 1024

/** The anchor being looked up by its string, as code units (one lookup at a time: shared). */
let keyUnits = new Uint16Array(256)

export class AnchorIndex {
  /** Distinct lowercased anchors; per anchor its docs, ascending; anchor ids by trigram. */
  private readonly anchors: string[] = []
  private readonly docs: number[][] = []
  private readonly grams = new Map<string, number[]>()
  /** Bytes held (resident/memory.ts), the one-pass build's tables aside: `bytes`. */
  private held = 0
  /** The straightforward build (anchor ids by a map of the strings, everything filed as it comes). */
  private readonly reference: boolean
  private readonly ids = new Map<string, number>()
  /**
   * Anchor ids by anchor (the one-pass build's `ids`): a span of a text finds its anchor with
   * ASCII capitals folded, no substring made. A key is a lowercase string: no lowercasing yields
   * a character lowercasing changes, so a span holding one never folds to a key.
   */
  private readonly table = new SpanTable(true)
  /** Per anchor: 1 when its trigrams are taken from the table's copy of it (ASCII), the last doc logged for it. */
  private readonly ascii = new Column(uint8)
  private readonly last = new Column(int32)
  /** (anchor id, doc) pairs not yet in `docs` (settleDocs). */
  private readonly log = new IntScratch(64)
  /** Anchors whose trigrams are in `grams` (settleGrams). */
  private gramsUpTo = 0
  /** `grams`' lists by gram (the gram table's entry), found from a span of an anchor. */
  private gramTable = new SpanTable(false)
  private gramLists: number[][] = []
  /** Lists being copied at their size (fitLists): the gram table is not used. */
  private fitting = false

  constructor(reference: boolean) {
    this.reference = reference
  }

  /** Bytes held: the anchors, their docs and trigrams, and the one-pass build's tables (what waits filed first). */
  get bytes(): number {
    this.settle()
    const tables = this.table.bytes + this.gramTable.bytes + this.gramLists.length * SLOT_BYTES
    return this.held + tables + this.ascii.bytes + this.last.bytes + this.log.bytes
  }

  /** A doc's anchors by analyzer.ts anchorView; whether they are complete. */
  addView(doc: number, text: string): boolean {
    const anchored = anchorView(text)
    for (const anchor of anchored.anchors) this.add(anchor, doc)
    return anchored.complete
  }

  /**
   * A doc's anchors (analyzer.ts anchorView) from the pass's runs and candidates over its scan
   * sample; whether they are complete. anchorView itself where the pass cannot stand for it: NFKC
   * would change the text (`nfkcChanges`), or it is long enough for the anchors' size cap to drop one.
   */
  addScanned(doc: number, text: string, sample: string, scan: TextScan, nfkcChanges: boolean): boolean {
    if (text.length > FAST_ANCHOR_CHARS || nfkcChanges) return this.addView(doc, text)
    // the sample is the text with the tool-call rendering blanked: anchors of a blanked one are partial
    let complete = sample === text
    const units = scan.units
    const runs = scan.cjkRuns
    for (let at = 0; at < runs.length; at += 2) {
      const from = runs.data[at]!
      const to = runs.data[at + 1]!
      const known = this.table.find(units, from, to)
      if (known >= 0) this.addDoc(known, doc)
      else this.add(sample.slice(from, to).toLowerCase(), doc)
    }
    const candidates = scan.anchors
    const data = candidates.data
    for (let at = 0; at < candidates.length; at += 4) {
      const from = data[at]!
      const to = data[at + 1]!
      const flags = data[at + 3]!
      // a candidate holding a CJK letter is left out (analyzer.ts anchors)
      if ((flags & ANCHOR_CJK) !== 0) {
        complete = false
        continue
      }
      const known = this.table.findHashed(units, from, to, data[at + 2]!)
      if (known >= 0) this.addDoc(known, doc)
      // an ASCII span's lowercase is its folded units: a new anchor is made from the table's copy
      else if ((flags & ANCHOR_NON_ASCII) === 0) this.addAsciiSpan(units, from, to, doc)
      // the table folds ASCII capitals only: a span whose lowercase changes more is looked up by its lowercase
      else this.add(sample.slice(from, to).toLowerCase(), doc)
    }
    return complete
  }

  /** Add a doc to an anchor (lowercased), the anchor first if new. */
  private add(anchor: string, doc: number): void {
    if (this.reference) {
      let id = this.ids.get(anchor)
      if (id === undefined) {
        id = this.anchors.length
        this.ids.set(anchor, id)
        this.addNew(anchor, doc, false)
        this.gramsOf(anchor, id)
      } else this.addDoc(id, doc)
      return
    }
    // a key's units copied once (the tables read typed arrays only)
    if (keyUnits.length < anchor.length) keyUnits = new Uint16Array(anchor.length * 2)
    const units = keyUnits
    let ascii = true
    for (let at = 0; at < anchor.length; at += 1) {
      const code = anchor.charCodeAt(at)
      units[at] = code
      if (code >= 128) ascii = false
    }
    const id = this.table.find(units, 0, anchor.length)
    if (id >= 0) {
      this.addDoc(id, doc)
      return
    }
    this.table.add(units, 0, anchor.length)
    this.addNew(anchor, doc, ascii)
  }

  /** A new anchor of an ASCII span (not in the table): its string and trigrams from the table's lowercased copy. */
  private addAsciiSpan(units: Uint16Array, from: number, to: number, doc: number): void {
    const start = this.table.start(this.table.add(units, from, to))
    // a flat string of its own (a slice of the text would keep the text and be another string representation)
    this.addNew(String.fromCharCode.apply(null, this.table.units.subarray(start, start + to - from) as unknown as number[]), doc, true)
  }

  /**
   * A new anchor, its id the next (in the one-pass build, the table's entry just added). `ascii`:
   * its trigrams are taken from the table's copy of it (settleGrams).
   */
  private addNew(anchor: string, doc: number, ascii: boolean): void {
    const id = this.anchors.length
    this.anchors.push(anchor)
    this.held += ANCHOR_BYTES + stringBytes(anchor) + ENTRY_BYTES
    if (this.reference) {
      // most anchors stand in one doc (a number, a file:line): no room kept for more
      this.docs.push([doc])
      return
    }
    this.ascii.push(ascii ? 1 : 0)
    this.last.push(doc)
    this.log.push2(id, doc)
  }

  private addDoc(id: number, doc: number): void {
    if (this.reference ? this.docs[id]!.at(-1) === doc : this.last.get(id) === doc) return
    this.held += ENTRY_BYTES
    if (this.reference) this.docs[id]!.push(doc)
    else {
      this.last.set(id, doc)
      this.log.push2(id, doc)
    }
  }

  /** Bytes of `bytes` that are the build's log of docs waiting to be filed (`release` gives them back). */
  get buildingBytes(): number {
    return this.log.bytes
  }

  /** What waits filed, and the build's buffer back to its first size (a built index keeps no page's worth). */
  release(): void {
    this.settle()
    this.log.release()
  }

  /**
   * After a whole build: the trigram lists and anchors' docs copied at their size, about `slice`
   * entries between two yields. The gram table, which finds trigram lists from a span and holds
   * them as well, starts over first and holds none until the copy is over (a list it held would
   * no longer be the map's once copied).
   */
  *fitLists(slice: number): Generator<void> {
    if (this.reference) return
    this.gramTable = new SpanTable(false)
    this.gramLists = []
    this.fitting = true
    let copied = 0
    for (const [gram, list] of this.grams) {
      this.grams.set(gram, list.slice())
      copied += list.length + 1
      if (copied >= slice) {
        copied = 0
        yield
      }
    }
    for (let id = 0; id < this.docs.length; id += 1) {
      const list = this.docs[id]!
      if (list.length <= 1) continue
      this.docs[id] = list.slice()
      copied += list.length
      if (copied >= slice) {
        copied = 0
        yield
      }
    }
    this.fitting = false
  }

  /** What the one-pass build keeps waiting (docs, new anchors' trigrams), filed. */
  settle(): void {
    if (this.reference) return
    this.settleDocs()
    this.settleGrams()
  }

  /**
   * The docs of each anchor logged since the last call, into `docs`, grouped by anchor (each list
   * touched once): appended as each doc came, between the rest of a build, nearly every append
   * was a cache miss.
   */
  private settleDocs(): void {
    const log = this.log
    if (log.length === 0) return
    const data = log.data
    const docs = this.docs
    const order = sortedBy(data, log.length, 2, this.anchors.length)
    const small = log.length <= SMALL_LOG
    for (let index = 0; index < order.length;) {
      const id = data[order[index]!]!
      // a new anchor (ids ascend here, each new one with its first doc logged) starts with that doc
      // alone: most anchors stand in one doc (an empty list takes room for 17 at its first push)
      if (id === docs.length) {
        docs.push([data[order[index]! + 1]!])
        index += 1
      }
      const list = docs[id]!
      for (; index < order.length && data[order[index]!] === id; index += 1) list.push(data[order[index]! + 1]!)
      // a delta's few docs: a short list at its size (lists.ts EXACT_ENTRIES); a build's, when it is over (`fitLists`)
      if (small && list.length <= EXACT_ENTRIES && list.length > 1) docs[id] = list.slice()
    }
    log.clear()
  }

  /**
   * The trigrams of the anchors made since the last call, into `grams`: made in one go, the gram
   * table and lists stay in cache (added as each anchor came, nearly every gram was a cache miss).
   */
  private settleGrams(): void {
    const table = this.table
    for (let id = this.gramsUpTo; id < this.anchors.length; id += 1) {
      if (this.ascii.get(id) === 1) this.addGrams(table.units, table.start(id), table.start(id + 1) - table.start(id), id)
      else this.gramsOf(this.anchors[id]!, id)
    }
    this.gramsUpTo = this.anchors.length
  }

  /** An ASCII anchor's trigrams (its 3-unit spans, in a table's copy) from the gram table: no gram string made for one seen before. */
  private addGrams(units: Uint16Array, start: number, length: number, id: number): void {
    for (let at = start; at + 3 <= start + length; at += 1) {
      // while the lists are being copied (fitLists) the table holds none: it would keep one the map replaced
      const entry = this.fitting ? -1 : this.gramTable.find(units, at, at + 3)
      let list: number[]
      if (entry >= 0) list = this.gramLists[entry]!
      else {
        const gram = String.fromCharCode(units[at]!, units[at + 1]!, units[at + 2]!)
        list = this.grams.get(gram) ?? []
        if (list.length === 0) {
          this.grams.set(gram, list)
          this.held += KEY_BYTES
        }
        if (!this.fitting) {
          this.gramTable.add(units, at, at + 3)
          this.gramLists.push(list)
        }
      }
      // a gram repeated in the anchor is listed once (the id is already last); no list[-1] read (it makes the load megamorphic)
      if (list.length === 0 || list[list.length - 1] !== id) {
        list.push(id)
        this.held += GRAM_BYTES
      }
    }
  }

  /** An anchor's trigrams from its string (the reference build's, and a non-ASCII anchor's). */
  private gramsOf(anchor: string, id: number): void {
    // listAdd counts a list entry of two values; a trigram's entry is one (GRAM_BYTES)
    for (const gram of new Set(trigramsOf(anchor))) this.held += listAdd(this.grams, gram, id) - ENTRY_BYTES + GRAM_BYTES
  }

  /**
   * Mark (1) at `offset + doc` each doc below `below` with an anchor holding `term` (lowercased, at
   * least 3 characters). The anchors holding all the term's trigrams are found smallest list first,
   * a long list probed by binary search rather than walked. `listed` takes each gid it marks (one
   * not marked before), so a search walks its matches rather than every mark.
   */
  markSubstring(term: string, marks: Uint8Array, offset: number, below: number, listed?: number[]): void {
    this.settle()
    const lists: number[][] = []
    for (const gram of new Set(trigramsOf(term))) {
      const list = this.grams.get(gram)
      if (list === undefined) return
      lists.push(list)
    }
    if (lists.length === 0) return
    lists.sort((a, b) => a.length - b.length)
    const anchors = this.anchors
    const anchorDocs = this.docs
    next: for (const id of lists[0]!) {
      for (let at = 1; at < lists.length; at += 1) {
        const list = lists[at]!
        const found = firstAtOrAbove(list, id)
        if (found === list.length || list[found] !== id) continue next
      }
      if (!anchors[id]!.includes(term)) continue
      const docs = anchorDocs[id]!
      for (let at = 0; at < docs.length; at += 1) {
        const doc = docs[at]!
        if (doc >= below) break
        if (listed !== undefined && marks[offset + doc] !== 1) listed.push(offset + doc)
        marks[offset + doc] = 1
      }
    }
  }
}

function trigramsOf(text: string): string[] {
  const chars = [...text]
  const grams: string[] = []
  for (let index = 0; index + 3 <= chars.length; index += 1) grams.push(chars[index]! + chars[index + 1]! + chars[index + 2]!)
  return grams
}
