/**
 * What capture queues and writes: event references and store ops, weighed in events, and batches
 * of one session's ops (a failed batch is kept per session for retry).
 */
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import type { CapturedEvent, IngestOp } from '@dsh-shadow/store'

export type QueueItem =
  | { readonly kind: 'event'; readonly session: Session; readonly event: SessionEvent; readonly turn: number | null; readonly step: number | null; readonly toolName: string | null }
  | { readonly kind: 'op'; readonly op: IngestOp; readonly weight: number }

export interface WeightedOp {
  readonly op: IngestOp
  readonly weight: number
}

export interface SessionBatch {
  readonly ops: IngestOp[]
  weight: number
}

/** The session an op writes for (a session op registers that session). */
export function opSession(op: IngestOp): string {
  switch (op.op) {
    case 'session':
      return op.session.sessionId
    case 'reconcile':
      return op.sessionId
    case 'checkpoint':
      return op.checkpoint.sessionId
    case 'events':
      return op.events[0]?.sessionId ?? ''
  }
}

/** Characters of event JSON an op carries (what a retry sends again). */
export function opChars(op: IngestOp): number {
  return op.op === 'events' || op.op === 'reconcile' ? op.events.reduce((sum, event) => sum + event.eventJson.length, 0) : 0
}

/** Ops in order, an events op split by session, each tagged with the session it writes for. */
export function splitBySession(ops: readonly WeightedOp[]): Array<WeightedOp & { readonly sessionId: string }> {
  const out: Array<WeightedOp & { readonly sessionId: string }> = []
  for (const { op, weight } of ops) {
    if (op.op !== 'events') {
      out.push({ op, weight, sessionId: opSession(op) })
      continue
    }
    const bySession = new Map<string, CapturedEvent[]>()
    for (const event of op.events) {
      const list = bySession.get(event.sessionId)
      if (list === undefined) bySession.set(event.sessionId, [event])
      else list.push(event)
    }
    for (const [sessionId, events] of bySession) out.push({ op: { op: 'events', events }, weight: events.length, sessionId })
  }
  return out
}
