/** Retention: which stored originals go, oldest checkpoint first, until every budget fits. */
import type { RetentionCandidate, ShadowBackend } from './backend.ts'
import { invalid } from './errors.ts'
import type { RetentionPolicy, RetentionReport } from './types.ts'

/**
 * Retention: drop stored originals, a whole checkpoint at a time and oldest first, until every
 * session and workspace fits its budget and nothing is older than `maxAgeMs`. Only originals a
 * committed checkpoint took off the surface are candidates — the live surface is never touched —
 * and each checkpoint whose originals go is marked expired, so a pointer to it says so instead
 * of pretending. Dropped rows keep their identity and hash: the dsh log still verifies, and a
 * reconciliation does not bring them back.
 */
/** Checkpoints, and their stored originals, one expiry transaction takes at most (it always takes one). */
const EXPIRE_BATCH_CHECKPOINTS = 256
const EXPIRE_BATCH_ROWS = 4_096

export async function applyRetention(backend: ShadowBackend, policy: RetentionPolicy): Promise<RetentionReport> {
  if (typeof policy !== 'object' || policy === null) throw invalid('retention policy must be an object')
  const budget = (value: unknown, name: string): number | undefined => {
    if (value === undefined) return undefined
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(`${name} must be a non-negative integer`)
    return value
  }
  const sessionBytes = budget(policy.sessionBytes, 'sessionBytes')
  const workspaceBytes = budget(policy.workspaceBytes, 'workspaceBytes')
  const maxAgeMs = budget(policy.maxAgeMs, 'maxAgeMs')
  if (sessionBytes === undefined && workspaceBytes === undefined && maxAgeMs === undefined) throw invalid('retention needs sessionBytes, workspaceBytes or maxAgeMs')
  const now = budget(policy.now, 'now') ?? Date.now()
  const dryRun = policy.dryRun === true

  const usage = await backend.retentionUsage()
  const sessionUse = new Map(usage.map(entry => [entry.sessionId, entry.bytes]))
  const workspaceOf = new Map(usage.map(entry => [entry.sessionId, entry.workspace ?? `(no workspace) ${entry.sessionId}`]))
  const workspaceUse = new Map<string, number>()
  for (const entry of usage) workspaceUse.set(workspaceOf.get(entry.sessionId)!, (workspaceUse.get(workspaceOf.get(entry.sessionId)!) ?? 0) + entry.bytes)
  const candidates = await backend.retentionCandidates()
  // each candidate is looked at a bounded number of times: a scan from the list's head per taken
  // checkpoint was quadratic (20k candidates: seconds of a capture chain that writes wait behind)
  const taken = Array.from({ length: candidates.length }, () => false)
  const queues = (key: (candidate: RetentionCandidate) => string): Map<string, { readonly indexes: number[]; next: number }> => {
    const map = new Map<string, { readonly indexes: number[]; next: number }>()
    for (const [index, candidate] of candidates.entries()) {
      const queue = map.get(key(candidate)) ?? { indexes: [], next: 0 }
      queue.indexes.push(index)
      map.set(key(candidate), queue)
    }
    return map
  }
  /** The oldest untaken candidate of a queue (list order), or -1. */
  const oldest = (queue: { readonly indexes: number[]; next: number } | undefined): number => {
    if (queue === undefined) return -1
    while (queue.next < queue.indexes.length && taken[queue.indexes[queue.next]!]) queue.next += 1
    return queue.indexes[queue.next] ?? -1
  }
  const chosen: Array<RetentionReport['expired'][number]> = []
  const take = (index: number, reason: 'age' | 'session' | 'workspace'): void => {
    const candidate = candidates[index]
    if (candidate === undefined || taken[index]) return
    taken[index] = true
    chosen.push({ checkpointId: candidate.checkpointId, sessionId: candidate.sessionId, rows: candidate.rows, bytes: candidate.bytes, reason })
    sessionUse.set(candidate.sessionId, (sessionUse.get(candidate.sessionId) ?? 0) - candidate.bytes)
    const workspace = workspaceOf.get(candidate.sessionId)!
    workspaceUse.set(workspace, (workspaceUse.get(workspace) ?? 0) - candidate.bytes)
  }
  if (maxAgeMs !== undefined) {
    for (const [index, candidate] of candidates.entries()) if (candidate.newest < now - maxAgeMs) take(index, 'age')
  }
  const overBudget: Array<RetentionReport['overBudget'][number]> = []
  if (sessionBytes !== undefined) {
    const bySession = queues(candidate => candidate.sessionId)
    for (const sessionId of sessionUse.keys()) {
      while ((sessionUse.get(sessionId) ?? 0) > sessionBytes) {
        const index = oldest(bySession.get(sessionId))
        if (index === -1) break
        take(index, 'session')
      }
      if ((sessionUse.get(sessionId) ?? 0) > sessionBytes) overBudget.push({ scope: 'session', id: sessionId, bytes: sessionUse.get(sessionId)!, budget: sessionBytes })
    }
  }
  if (workspaceBytes !== undefined) {
    const byWorkspace = queues(candidate => workspaceOf.get(candidate.sessionId)!)
    for (const workspace of workspaceUse.keys()) {
      while ((workspaceUse.get(workspace) ?? 0) > workspaceBytes) {
        const index = oldest(byWorkspace.get(workspace))
        if (index === -1) break
        take(index, 'workspace')
      }
      if ((workspaceUse.get(workspace) ?? 0) > workspaceBytes) overBudget.push({ scope: 'workspace', id: workspace, bytes: workspaceUse.get(workspace)!, budget: workspaceBytes })
    }
  }
  let rows = 0
  let bytes = 0
  const expired: Array<RetentionReport['expired'][number]> = []
  // a transaction per batch, not per checkpoint (a commit each: 20k checkpoints took 6-15 s), small
  // enough that another writer never waits long for the lock
  for (let start = 0; start < chosen.length;) {
    let end = start
    for (let batchRows = 0; end < chosen.length && end - start < EXPIRE_BATCH_CHECKPOINTS && batchRows < EXPIRE_BATCH_ROWS; end += 1) batchRows += chosen[end]!.rows
    const batch = chosen.slice(start, end)
    const results = dryRun ? batch : await backend.expireCheckpoints(batch.map(entry => entry.checkpointId), now)
    for (const [index, entry] of batch.entries()) {
      const done = { ...entry, rows: results[index]!.rows, bytes: results[index]!.bytes }
      expired.push(done)
      rows += done.rows
      bytes += done.bytes
    }
    start = end
  }
  return { dryRun, expired, rows, bytes, overBudget }
}
