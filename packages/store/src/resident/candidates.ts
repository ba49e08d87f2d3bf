/**
 * The docs a resident search ranks (resident/engine.ts), gathered newest first from ascending
 * doc lists, each slotted once; and the docs holding a substring term in an anchor, found once a
 * search. The work is the matches' (the lists walked from their newest end, the marked docs
 * listed as they are marked), not the scope's: a search's first calls run before V8 optimises
 * them, and a loop over every doc of a 10k-message scope took a quarter millisecond there.
 */
import type { ShadowMessage } from '../types.ts'
import type { ScopeView } from './view.ts'

/** Ascending gids, the first `length` entries (view.ts Holders, a substring's docs). */
export interface DocList {
  readonly gids: ArrayLike<number>
  readonly length: number
}

export type RowTest = ((row: ShadowMessage) => boolean) | undefined

export class CandidateSet {
  /** Per gid: its place in `docs`, -1 while not a candidate. */
  readonly slot: Int32Array
  /** Gids in the order they were added. */
  readonly docs: number[] = []
  private readonly view: ScopeView

  constructor(view: ScopeView) {
    this.view = view
    this.slot = new Int32Array(view.total).fill(-1)
  }

  add(gid: number): void {
    if (this.slot[gid]! < 0) {
      this.slot[gid] = this.docs.length
      this.docs.push(gid)
    }
  }

  /** The newest `window` docs of a list that pass `test` (all its docs pass without one). */
  takeNewest(list: DocList, window: number, test: RowTest): void {
    const { gids } = list
    let taken = 0
    for (let at = list.length - 1; at >= 0 && taken < window; at -= 1) {
      const gid = gids[at]!
      if (test !== undefined && !test(this.view.row(gid))) continue
      taken += 1
      this.add(gid)
    }
  }
}

/** A substring term's docs: marked (1) per gid, and listed ascending. */
export interface MarkedDocs extends DocList {
  readonly marks: Uint8Array
  readonly gids: Int32Array
}

/** The docs of each substring term a search asks about, worked out once (an exact literal is one too). */
export class SubstringDocs {
  private readonly held = new Map<string, MarkedDocs>()
  private readonly view: ScopeView

  constructor(view: ScopeView) {
    this.view = view
  }

  of(term: string): MarkedDocs {
    let docs = this.held.get(term)
    if (docs === undefined) {
      // no anchor holds a term that holds one no anchor holds: a query of nested terms (48 runs of
      // 'q1' of growing length) walked every anchor holding their trigrams once per term, ~1 s a search
      for (const [known, held] of this.held) {
        if (held.length === 0 && term.includes(known)) {
          this.held.set(term, held)
          return held
        }
      }
      const marks = new Uint8Array(this.view.total)
      const found: number[] = []
      this.view.markSubstrings([term], marks, found)
      const gids = Int32Array.from(found).toSorted()
      this.held.set(term, docs = { marks, gids, length: gids.length })
    }
    return docs
  }
}

/** The gids of any of these lists, ascending, each once. */
export function unionOf(lists: readonly DocList[]): DocList {
  if (lists.length === 1) return lists[0]!
  let size = 0
  for (const list of lists) size += list.length
  const all = new Int32Array(size)
  let at = 0
  for (const list of lists) for (let index = 0; index < list.length; index += 1) all[at++] = list.gids[index]!
  all.sort()
  let kept = 0
  for (let index = 0; index < size; index += 1) if (index === 0 || all[index] !== all[index - 1]) all[kept++] = all[index]!
  return { gids: all, length: kept }
}
