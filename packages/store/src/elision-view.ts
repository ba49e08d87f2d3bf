/**
 * ElisionResolver: which checkpoint a row is "in", as one session sees it.
 *
 * A checkpoint mark belongs to the session that compacted. A row carries only its owner's own
 * marks (`elided_by`); a fork that elides rows it inherited from its parent does not mark them
 * (the parent's search would otherwise report its live rows as "in checkpoint <fork>.cN").
 * Reading through a lineage, a row of an ancestor is in:
 *
 * 1. its owner's checkpoint, if that one committed before the fork (it is part of the fork's
 *    seeded history; a parent checkpoint made after the fork is not the fork's);
 * 2. otherwise the first checkpoint of a descendant on the path to the reader (oldest first)
 *    that shadowed its seq before that descendant's own fork point;
 * 3. otherwise none: it is still on the reader's surface.
 */
import type { ShadowBackend } from './backend.ts'
import type { LineageSegment, ShadowCheckpoint, ShadowMessage } from './types.ts'

/** First checkpoint (in commit order) shadowing each seq, of one session, before `belowSeq`. */
function marksOf(checkpoints: readonly ShadowCheckpoint[], belowSeq: number): Map<number, string> {
  const marks = new Map<number, string>()
  const ordered = checkpoints
    .filter(checkpoint => checkpoint.status === 'committed' && (checkpoint.replaceSeq ?? -1) < belowSeq)
    .toSorted((a, b) => (a.replaceSeq ?? -1) - (b.replaceSeq ?? -1))
  for (const checkpoint of ordered) for (const seq of checkpoint.shadowedSeqs) if (!marks.has(seq)) marks.set(seq, checkpoint.checkpointId)
  return marks
}

/**
 * The rows with `elidedBy` as the reader of `lineage` (its segments, the reader first) sees them.
 * Rows of sessions outside the lineage (a workspace-wide search) get their owner's own view.
 */
export async function viewElision(backend: ShadowBackend, segments: readonly LineageSegment[], rows: readonly ShadowMessage[]): Promise<ShadowMessage[]> {
  if (rows.length === 0) return []
  // a scope's segments are the lineage (the reader, then ancestors bounded by fork points),
  // then, for a wider scope, other sessions whole: only the lineage shares rows
  const lineage = segments.slice(0, 1)
  for (const segment of segments.slice(1)) {
    if (!Number.isFinite(segment.belowSeq)) break
    lineage.push(segment)
  }
  const position = new Map(lineage.map((segment, index) => [segment.sessionId, index]))
  const checkpoints = new Map<string, ShadowCheckpoint | undefined>()
  const checkpoint = async (id: string): Promise<ShadowCheckpoint | undefined> => {
    if (!checkpoints.has(id)) checkpoints.set(id, await backend.getCheckpoint(id))
    return checkpoints.get(id)
  }
  // per seq: the lineage positions (ascending) whose session shadowed it before its fork point,
  // with that checkpoint; built once (a row looked at each descendant in turn: a whole read of a
  // chain 5,000 deep walked 12.5M of them)
  let descendants: Map<number, Array<{ readonly at: number; readonly id: string }>> | undefined
  const viewed: ShadowMessage[] = []
  for (const row of rows) {
    const at = position.get(row.sessionId)
    const belowSeq = at === undefined ? Number.POSITIVE_INFINITY : lineage[at]!.belowSeq
    let mark: string | null = null
    if (row.elidedBy !== null) {
      const own = await checkpoint(row.elidedBy)
      // unknown checkpoint: keep the mark; a mark another session left (older stores) is not the owner's
      if (own === undefined || (own.sessionId === row.sessionId && (own.replaceSeq ?? -1) < belowSeq)) mark = row.elidedBy
    }
    if (mark === null && at !== undefined && at > 0) {
      if (descendants === undefined) {
        descendants = new Map()
        const bySession = new Map<string, ShadowCheckpoint[]>()
        for (const entry of await backend.listCheckpoints(lineage.map(segment => segment.sessionId))) {
          const list = bySession.get(entry.sessionId)
          if (list === undefined) bySession.set(entry.sessionId, [entry])
          else list.push(entry)
        }
        for (const [index, segment] of lineage.entries()) {
          for (const [seq, id] of marksOf(bySession.get(segment.sessionId) ?? [], segment.belowSeq)) {
            const list = descendants.get(seq)
            if (list === undefined) descendants.set(seq, [{ at: index, id }])
            else list.push({ at: index, id })
          }
        }
      }
      // the nearest descendant on the path to the reader (the highest position below the row's)
      mark = descendants.get(row.seq)?.findLast(entry => entry.at < at)?.id ?? null
    }
    viewed.push(mark === row.elidedBy ? row : { ...row, elidedBy: mark })
  }
  return viewed
}
