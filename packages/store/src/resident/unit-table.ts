/**
 * The units a resident search ranks (resident/engine.ts), as columns: every candidate's unit (a
 * call folded into its result, a question into its short reply, as search/units.ts makes them),
 * and what ranking reads of each (its parts' counts added, its length, its scores).
 */
import { ASKS, ROLE_CODES, SHORT_REPLY, SINGLE_CALL } from './doc-flags.ts'
import type { RowTest } from './candidates.ts'
import type { ScopeView } from './view.ts'

/** Units as columns: representative doc, its call or question (gids, -1: none), kept or dropped. */
export class Units {
  readonly rep: Int32Array
  readonly call: Int32Array
  readonly question: Int32Array
  size = 0
  private order: number[] | undefined

  constructor(capacity: number) {
    this.rep = new Int32Array(capacity)
    this.call = new Int32Array(capacity)
    this.question = new Int32Array(capacity)
  }

  push(rep: number, call: number, question: number): void {
    this.rep[this.size] = rep
    this.call[this.size] = call
    this.question[this.size] = question
    this.size += 1
  }

  /** Keep only the units that pass (their numbers stay; `ids` lists the kept ones). */
  keep(test: (unit: number) => boolean): void {
    this.order = this.ids().filter(test)
  }

  ids(): number[] {
    if (this.order === undefined) {
      const all: number[] = []
      for (let unit = 0; unit < this.size; unit += 1) all.push(unit)
      this.order = all
    }
    return this.order
  }

  get count(): number {
    return this.ids().length
  }
}

/**
 * Units of every candidate (units.ts, for all of them): an assistant message making one call
 * becomes its result's unit; a result comes with its call; a question asked by the user or the
 * assistant takes the short reply after it (the next message of the other speaker within two
 * seqs) when no other unit holds that reply. Partners that are not candidates are slotted (`add`).
 */
export function foldUnits(view: ScopeView, candidates: readonly number[], add: (gid: number) => void, foldCalls: boolean, answers: boolean, replyTest: RowTest): Units {
  const count = candidates.length
  const reps = new Int32Array(count)
  const calls = new Int32Array(count).fill(-1)
  const { flags, role, resultOf, callOf } = view
  for (let at = 0; at < count; at += 1) {
    const gid = candidates[at]!
    reps[at] = gid
    if ((flags[gid]! & SINGLE_CALL) === 0) continue
    if (foldCalls && role[gid] === ROLE_CODES.assistant) {
      const result = resultOf[gid]!
      if (result >= 0) {
        reps[at] = result
        calls[at] = gid
        continue
      }
    }
    if (role[gid] === ROLE_CODES.tool && callOf[gid]! >= 0) calls[at] = callOf[gid]!
  }
  // a reply another unit stands for is not folded into a question (units.ts `taken`)
  const taken = new Uint8Array(view.total)
  for (let at = 0; at < count; at += 1) taken[reps[at]!] = 1
  const units = new Units(count)
  const seen = new Uint8Array(view.total)
  for (let at = 0; at < count; at += 1) {
    const rep = reps[at]!
    if (seen[rep] === 1) continue
    seen[rep] = 1
    const call = calls[at]!
    const reply = call < 0 && answers && (flags[rep]! & ASKS) !== 0 ? replyTo(view, rep, replyTest) : -1
    if (reply >= 0 && taken[reply] !== 1 && (flags[reply]! & SHORT_REPLY) !== 0) {
      taken[reply] = 1
      seen[reply] = 1
      add(reply)
      add(rep)
      units.push(reply, -1, rep)
    } else {
      add(rep)
      if (call >= 0) add(call)
      units.push(rep, call, -1)
    }
  }
  return units
}

/** The next message of the other speaker within two seqs of a question that passes the filter (-1: none). */
function replyTo(view: ScopeView, asker: number, test: RowTest): number {
  if (test === undefined) return view.replyOf[asker]!
  const other = view.role[asker] === ROLE_CODES.user ? ROLE_CODES.assistant : ROLE_CODES.user
  // gids ascend with seqs across a fork point too (view.ts): a fork's first message may answer its ancestor's last
  for (let next = asker + 1; next < view.total && view.seq[next]! <= view.seq[asker]! + 2; next += 1) {
    if (view.role[next] === other && test(view.row(next))) return next
  }
  return -1
}

/** What ranking reads of each unit: its parts' counts added, its text length, its scores. */
export class UnitTable {
  readonly units: Units
  private readonly width: number
  /** Per unit and term (unit × width + term): the scan's count in the unit's text (its parts added). */
  readonly counts: Float64Array
  readonly length: Float64Array
  readonly covered: Float64Array
  readonly bucket: Uint8Array
  readonly relevance: Float64Array
  /** Exact literals held; -1 until scored. */
  readonly literal: Int8Array

  constructor(units: Units, slot: Int32Array, docCounts: Float64Array, width: number) {
    this.units = units
    this.width = width
    const size = units.size
    const counts = new Float64Array(size * width)
    const { rep, call, question } = units
    for (let unit = 0; unit < size; unit += 1) {
      const base = unit * width
      const own = slot[rep[unit]!]! * width
      for (let index = 0; index < width; index += 1) counts[base + index] = docCounts[own + index]!
      // a unit has at most one partner: its call, or the question it answers
      const partner = call[unit]! >= 0 ? call[unit]! : question[unit]!
      if (partner >= 0) {
        const at = slot[partner]! * width
        for (let index = 0; index < width; index += 1) counts[base + index]! += docCounts[at + index]!
      }
    }
    this.counts = counts
    this.length = new Float64Array(size)
    this.covered = new Float64Array(size)
    this.bucket = new Uint8Array(size)
    this.relevance = new Float64Array(size)
    this.literal = new Int8Array(size).fill(-1)
  }

  /** The scan's count of term `index` in a unit's text (its parts added). */
  count(unit: number, index: number): number {
    return this.counts[unit * this.width + index]!
  }
}
