/**
 * Checkpoints as the log states them, for any engine: a `compaction/summary` followed by the
 * replacing checkpoint message. A pure stepper, used live by capture and over whole logs by the
 * CLI's repair.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import type { CheckpointInput } from '@dsh-shadow/store'

/** The provider name Shadow Context writes on its own `compaction/summary` events. */
export const SHADOW_ENGINE = 'shadow-context'

export interface PendingSummary {
  readonly compactionId: string
  readonly summarySeq: number
  readonly shadowedSeqs: readonly number[]
  readonly shadowedTokenCount: number
  readonly engine: string
}

/** Advance over one event; a committed checkpoint comes out when its replacement is seen. */
export function stepCheckpoint(sessionId: string, event: SessionEvent, summary: PendingSummary | undefined): { summary: PendingSummary | undefined; checkpoint?: CheckpointInput } {
  if (event.type === 'compaction/summary') {
    return {
      summary: {
        compactionId: event.data.compactionId,
        summarySeq: event.seq,
        shadowedSeqs: event.data.shadowedSeqs,
        shadowedTokenCount: event.data.shadowedTokenCount,
        engine: event.data.provider === SHADOW_ENGINE ? SHADOW_ENGINE : 'other',
      },
    }
  }
  if (summary === undefined) return { summary: undefined }
  if (event.type === 'user/message' && typeof event.surfaceOp === 'object' && isCompactCheckpointSource(event.data.source)) {
    return {
      summary: undefined,
      checkpoint: {
        checkpointId: summary.compactionId,
        sessionId,
        engine: summary.engine,
        status: 'committed',
        summarySeq: summary.summarySeq,
        replaceSeq: event.seq,
        shadowedSeqs: summary.shadowedSeqs,
        shadowedTokens: summary.shadowedTokenCount,
        createdAt: event.time,
      },
    }
  }
  return { summary: event.type === 'compaction/end' ? undefined : summary }
}

/** Every committed checkpoint of a log, in order. */
export function checkpointsOfLog(sessionId: string, events: readonly SessionEvent[]): CheckpointInput[] {
  const found: CheckpointInput[] = []
  let summary: PendingSummary | undefined
  for (const event of events) {
    const step = stepCheckpoint(sessionId, event, summary)
    summary = step.summary
    if (step.checkpoint !== undefined) found.push(step.checkpoint)
  }
  return found
}
