/**
 * Random fork trees (chains deeper than the bound-table threshold, forks at 0 and past the
 * parent's last seq, gaps, rows a fork holds below its own fork point, elided rows, `beforeSeq`):
 * every read, count, search, write-ahead check and lookup answers what a plain filter over every
 * stored row says, on both backends. The reference walks the parent links itself, keeps a row when
 * some segment of its session is bounded above its seq (the OR of the segments' conditions), looks a
 * seq up youngest segment first, and views elision marks by the rule in elision-view.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, type ShadowCheckpoint, type ShadowMessage } from '../src/index.ts'
import { message } from './helpers.ts'
import { DEEP_LINEAGE } from '../src/filter.ts'
import { TARGETS } from './targets.ts'

const WORDS = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'garnet', 'helix', 'indigo', 'jasper']

/** mulberry32: a seeded generator, so a failing tree is named by its seed. */
function generator(seed: number): { next(): number; int(max: number): number; pick<T>(list: readonly T[]): T } {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  return { next, int: max => Math.floor(next() * max), pick: list => list[Math.floor(next() * list.length)]! }
}

interface Session { readonly id: string; readonly parent: string | null; readonly forkSeq: number | null }
interface Segment { readonly sessionId: string; readonly belowSeq: number }
const key = (sessionId: string, seq: number): string => `${sessionId}#${seq}`

describe.each(TARGETS)('fork lineages against a plain filter $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  /** Askers whose lineage took the bound-table path (more fork-bounded segments than DEEP_LINEAGE). */
  let deep = 0

  async function checkTree(seed: number): Promise<void> {
    const random = generator(seed)
    const anomalies = seed % 2 === 0
    const store = await ShadowStore.open(target.location())
    try {
      const sessions: Session[] = []
      const top = new Map<string, number>()
      const count = 24 + random.int(30)
      for (let index = 0; index < count; index += 1) {
        const id = `t${seed}s${index}`
        // the first 20 a chain (past DEEP_LINEAGE: the bound-table path), then a tree
        const root = index === 0 || (index >= 20 && random.next() < 0.05)
        const parent = root ? null : index < 20 || random.next() < 0.8 ? sessions[index - 1]!.id : random.pick(sessions).id
        // forks at 0, inside the parent's rows, and past its last seq
        const forkSeq = parent === null ? null : random.next() < 0.1 ? 0 : random.int((top.get(parent) ?? 0) + 4)
        sessions.push({ id, parent, forkSeq })
        await store.registerSession({ sessionId: id, ...(parent === null ? {} : { parentSessionId: parent, forkSeq }) })
        const rows: number[] = []
        let seq = (forkSeq ?? 0) + random.int(2)
        for (let n = random.int(5); n > 0; n -= 1, seq += 1 + random.int(3)) rows.push(seq)
        // a row of the fork's own below its fork point (the API takes it; capture never writes one)
        if (anomalies && forkSeq !== null && forkSeq > 0 && random.next() < 0.2) rows.push(random.int(forkSeq))
        if (rows.length > 0) await store.append(rows.map(at => message(id, at, `row ${id} ${at} ${random.pick(WORDS)}`, random.next() < 0.3 ? { role: 'assistant', eventType: 'assistant/message', sourceKind: 'assistant' } : {})))
        top.set(id, Math.max(forkSeq ?? 0, ...rows))
      }
      const byId = new Map(sessions.map(session => [session.id, session]))
      const stored = new Map<string, ShadowMessage>()
      const refLineage = (sessionId: string): Segment[] => {
        const out: Segment[] = []
        const seen = new Set<string>()
        let below = Number.POSITIVE_INFINITY
        for (let current = byId.get(sessionId); current !== undefined && !seen.has(current.id); current = current.parent === null ? undefined : byId.get(current.parent)) {
          seen.add(current.id)
          out.push({ sessionId: current.id, belowSeq: below })
          if (current.parent === null) break
          below = Math.min(below, current.forkSeq ?? 0)
        }
        return out
      }
      const readStored = async (): Promise<void> => {
        stored.clear()
        for (const session of sessions) for (const row of await store.read({ sessionId: session.id }, { limit: 100_000 })) if (row.sessionId === session.id) stored.set(key(row.sessionId, row.seq), (await store.messageAt(row.sessionId, row.seq))!)
      }
      // checkpoints, elided: some of a session's visible seqs, at a random replace point
      await readStored()
      for (const session of sessions) {
        if (random.next() > 0.25) continue
        const visible = [...stored.values()].filter(row => refLineage(session.id).some(segment => segment.sessionId === row.sessionId && row.seq < segment.belowSeq)).map(row => row.seq)
        if (visible.length === 0) continue
        const seqs = [...new Set(Array.from({ length: 1 + random.int(4) }, () => random.pick(visible)))]
        const ordinal = (await store.checkpoints(session.id)).length + 1
        const recorded = await store.recordCheckpoint({ checkpointId: `${session.id}.c${ordinal}`, sessionId: session.id, engine: 'test', status: 'committed', shadowedSeqs: seqs, createdAt: Date.now(), replaceSeq: random.int((top.get(session.id) ?? 0) + 3) })
        await store.ingest([{ op: 'checkpoint', checkpoint: recorded, elide: true }])
      }
      await readStored()
      const checkpoints = new Map<string, ShadowCheckpoint>()
      for (const session of sessions) for (const checkpoint of await store.checkpoints(session.id)) checkpoints.set(checkpoint.checkpointId, checkpoint)
      const checkpointsOf = (sessionId: string): ShadowCheckpoint[] => [...checkpoints.values()].filter(checkpoint => checkpoint.sessionId === sessionId)

      /** The mark a reader of `lineage` sees on `row` (elision-view.ts, written out). */
      const viewed = (lineage: readonly Segment[], row: ShadowMessage): string | null => {
        const at = lineage.findLastIndex(segment => segment.sessionId === row.sessionId)
        const below = at < 0 ? Number.POSITIVE_INFINITY : lineage[at]!.belowSeq
        if (row.elidedBy !== null) {
          const own = checkpoints.get(row.elidedBy)
          if (own === undefined || (own.sessionId === row.sessionId && (own.replaceSeq ?? -1) < below)) return row.elidedBy
        }
        for (let index = at - 1; index >= 0; index -= 1) {
          const segment = lineage[index]!
          const first = checkpointsOf(segment.sessionId).filter(checkpoint => checkpoint.status === 'committed' && (checkpoint.replaceSeq ?? -1) < segment.belowSeq)
            .toSorted((a, b) => (a.replaceSeq ?? -1) - (b.replaceSeq ?? -1)).find(checkpoint => checkpoint.shadowedSeqs.includes(row.seq))
          if (first !== undefined) return first.checkpointId
        }
        return null
      }
      const view = (lineage: readonly Segment[], row: ShadowMessage) => ({ sessionId: row.sessionId, seq: row.seq, elidedBy: viewed(lineage, row) })
      const sorted = (rows: ReadonlyArray<{ sessionId: string; seq: number }>) => rows.toSorted((a, b) => a.seq - b.seq || a.sessionId.localeCompare(b.sessionId))
      const youngestFirst = (lineage: readonly Segment[], seq: number): ShadowMessage | undefined => {
        for (const segment of lineage) {
          const row = seq < segment.belowSeq ? stored.get(key(segment.sessionId, seq)) : undefined
          if (row !== undefined) return row
        }
        return undefined
      }

      for (const asker of sessions) {
        const lineage = refLineage(asker.id)
        expect((await store.lineage(asker.id)).map(segment => ({ sessionId: segment.sessionId, belowSeq: segment.belowSeq }))).toEqual(lineage)
        const before = random.next() < 0.4 ? random.int((top.get(asker.id) ?? 0) + 2) : undefined
        const scope = { sessionId: asker.id, ...(before === undefined ? {} : { beforeSeq: before }) }
        const segments = lineage.map(segment => (segment.sessionId === asker.id && before !== undefined ? { ...segment, belowSeq: Math.min(segment.belowSeq, before) } : segment))
        const visible = [...stored.values()].filter(row => segments.some(segment => segment.sessionId === row.sessionId && row.seq < segment.belowSeq))
        const label = `seed ${seed}, asker ${asker.id}, beforeSeq ${before}`

        const whole = await store.read(scope, { limit: 100_000 })
        expect(sorted(whole.map(row => ({ sessionId: row.sessionId, seq: row.seq, elidedBy: row.elidedBy }))), label).toEqual(sorted(visible.map(row => view(lineage, row))))
        expect(whole.map(row => row.seq), label).toEqual(visible.map(row => row.seq).toSorted((a, b) => a - b))
        const from = random.int((top.get(asker.id) ?? 0) + 2)
        const to = from + random.int(6)
        const inWindow = visible.filter(row => row.seq >= from && row.seq <= to)
        expect(sorted((await store.read(scope, { fromSeq: from, toSeq: to, limit: 1_000 })).map(row => ({ sessionId: row.sessionId, seq: row.seq }))), label)
          .toEqual(sorted(inWindow.map(row => ({ sessionId: row.sessionId, seq: row.seq }))))
        expect((await store.read(scope, { limit: 3, descending: true })).map(row => row.seq), label).toEqual(visible.map(row => row.seq).toSorted((a, b) => b - a).slice(0, 3))
        expect(await store.count(scope), label).toBe(visible.length)
        expect(await store.count(scope, { fromSeq: from, toSeq: to }), label).toBe(inWindow.length)

        const word = random.pick(WORDS)
        const found = await store.search(word, { ...scope, limit: 50 })
        expect(sorted(found.hits.map(hit => ({ sessionId: hit.message.sessionId, seq: hit.message.seq }))), `${label}, search ${word}`)
          .toEqual(sorted(visible.filter(row => row.text.split(' ').includes(word)).map(row => ({ sessionId: row.sessionId, seq: row.seq }))))

        // seq-keyed: what each seq resolves to, youngest segment first
        const asked = [...new Set(Array.from({ length: 1 + random.int(12) }, () => random.int((top.get(asker.id) ?? 0) + 4)))]
        const rows = asked.map(seq => youngestFirst(lineage, seq))
        const entries = asked.map((seq, index) => ({ seq, hash: rows[index] === undefined || random.next() < 0.3 ? 'not-the-hash' : rows[index]!.hash }))
        expect(await store.confirm(asker.id, entries), label).toEqual({
          missing: asked.filter((_, index) => rows[index] === undefined),
          mismatched: asked.filter((_, index) => rows[index] !== undefined && entries[index]!.hash !== rows[index]!.hash),
        })
        expect((await store.lookupAllInLineage(await store.lineage(asker.id), asked)).map(row => ({ sessionId: row.sessionId, seq: row.seq, elidedBy: row.elidedBy })), label)
          .toEqual(rows.flatMap(row => (row === undefined ? [] : [view(lineage, row)])))
        if (lineage.filter(segment => Number.isFinite(segment.belowSeq)).length > DEEP_LINEAGE) deep += 1
      }
    } finally {
      await store.close()
    }
  }

  const seeds = target.name === 'sqlite' ? 24 : 8
  it(`${seeds} random fork trees`, async () => {
    for (let seed = 1; seed <= seeds; seed += 1) await checkTree(seed)
    // both paths were taken: shallow lineages (one condition per segment) and deep ones
    expect(deep).toBeGreaterThan(seeds)
  }, 600_000)
})
