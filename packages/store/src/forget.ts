/** Forgetting a session outright, with the forks that read its rows by reference. */
import type { ForgetCounts, ShadowBackend } from './backend.ts'
import { ShadowStoreError } from './errors.ts'

export interface ForgetOptions {
  /** Forget the session's forks (and theirs) with it instead of refusing. Default false. */
  readonly force?: boolean
  /** Rewrite the storage afterwards so the deleted text is gone from disk, not just unreachable. Default false. */
  readonly vacuum?: boolean
}

export type ForgetReport = ForgetCounts & { readonly forgotten: string[]; readonly vacuumed: boolean }

/**
 * A fork reads its parent's rows below the fork point by reference, so forgetting a session that
 * has forks would take their shared history too: that is refused (CONFLICT) unless `force`.
 * The caller has validated `sessionId`.
 */
export async function forgetSession(backend: ShadowBackend, sessionId: string, options: ForgetOptions): Promise<ForgetReport> {
  if (await backend.getSession(sessionId) === undefined) throw new ShadowStoreError('NOT_FOUND', `no session ${sessionId} in the shadow store`)
  // children by parent, walked breadth first: scanning every session per level (and the forks found
  // so far per session) was quadratic in a store of many forks
  const children = new Map<string, string[]>()
  const position = new Map<string, number>()
  for (const [index, session] of (await backend.listSessions()).entries()) {
    position.set(session.sessionId, index)
    if (session.parentSessionId === null) continue
    const list = children.get(session.parentSessionId) ?? []
    list.push(session.sessionId)
    children.set(session.parentSessionId, list)
  }
  const found = new Set<string>([sessionId])
  const forks: string[] = []
  for (let frontier = [sessionId]; frontier.length > 0;) {
    const next: string[] = []
    for (const parent of frontier) {
      for (const child of children.get(parent) ?? []) {
        if (found.has(child)) continue
        found.add(child)
        next.push(child)
      }
    }
    // a level in the store's list order, as before
    next.sort((a, b) => position.get(a)! - position.get(b)!)
    forks.push(...next)
    frontier = next
  }
  if (forks.length > 0 && options.force !== true) {
    throw new ShadowStoreError('CONFLICT', `session ${sessionId} has ${forks.length} fork(s) (${forks.slice(0, 5).join(', ')}${forks.length > 5 ? ', …' : ''}) that read its rows by reference; forgetting it would remove their shared history too. Forget the forks first, or force to forget it together with its forks`)
  }
  const forgotten = [sessionId, ...forks]
  // owed in the forget's own transaction (a forget that failed, e.g. on a full disk, owes nothing; a
  // kill before the vacuum leaves it owed for the next writable open), and it tells a backend whose
  // plain vacuum keeps old row versions (PostgreSQL) to rewrite them
  const counts = await backend.forgetSessions(forgotten, { vacuumDue: options.vacuum === true })
  if (options.vacuum === true) await backend.vacuum()
  return { ...counts, forgotten, vacuumed: options.vacuum === true }
}
