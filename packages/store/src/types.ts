/** Public data shapes of the shadow store. Plain JSON-friendly values, no dsh or SQL types. */

export type ShadowRole = 'system' | 'user' | 'assistant' | 'tool'

/** The dsh log event types the store keeps (the model-visible ones). */
export type ShadowEventType = 'user/message' | 'assistant/message' | 'tool/result' | 'request/header'

/** What a writer hands the store for one model-visible message. */
export interface ShadowMessageInput {
  readonly sessionId: string
  readonly seq: number
  readonly eventType: ShadowEventType
  readonly role: ShadowRole
  readonly sourceKind: string
  readonly turn: number | null
  readonly step: number | null
  /** Tool name for a tool result; space-separated tool names for an assistant message with calls. */
  readonly toolName: string | null
  /** Call id for a tool result; space-separated call ids for an assistant message with calls. */
  readonly callId: string | null
  /** Wall-clock time of the log event, epoch milliseconds. */
  readonly time: number
  /** The exact log event, serialized (lossless JSON). */
  readonly eventJson: string
  /** Rendered plain text for search and transcripts. */
  readonly text: string
  /** Heuristic token price of the message. */
  readonly tokens: number
}

/** One stored message. */
export interface ShadowMessage extends ShadowMessageInput {
  readonly shadowId: string
  /** sha1 of `eventJson`. */
  readonly hash: string
  /** The checkpoint that took this message off the surface, if any. */
  readonly elidedBy: string | null
  /** When retention dropped the original (text and event JSON are then empty), else null. */
  readonly expiredAt: number | null
}

export interface ShadowSessionInput {
  readonly sessionId: string
  /** The session this one was forked from, when it is a fork. */
  readonly parentSessionId?: string | null
  /** First seq that belongs to this session itself; messages below it are read from the parent. */
  readonly forkSeq?: number | null
  /** Working directory (dsh's cwd): the workspace the session belongs to. */
  readonly workspace?: string | null
  readonly createdAt?: number | null
}

export interface ShadowSession {
  readonly sessionId: string
  readonly tag: string
  readonly parentSessionId: string | null
  readonly forkSeq: number | null
  readonly workspace: string | null
  readonly createdAt: number | null
  readonly messageCount: number
  readonly lastSeq: number
  readonly firstTime: number | null
  readonly lastTime: number | null
}

/** One segment of a session's visible history: its own rows, or an ancestor's rows below a fork. */
export interface LineageSegment {
  readonly sessionId: string
  readonly tag: string
  /** Exclusive upper bound on seq for this segment (Infinity for the session itself). */
  readonly belowSeq: number
}

export type CheckpointStatus = 'committed' | 'failed'

export interface CheckpointInput {
  readonly checkpointId: string
  readonly sessionId: string
  /** Which engine wrote it, e.g. 'shadow-context' or 'compaction-basic'. */
  readonly engine: string
  readonly status: CheckpointStatus
  readonly trigger?: string | null
  readonly startSeq?: number | null
  readonly summarySeq?: number | null
  /** Seq of the surface replacement (the checkpoint message itself). */
  readonly replaceSeq?: number | null
  /** Shadowed surface seqs in surface order. */
  readonly shadowedSeqs: readonly number[]
  readonly shadowedTokens?: number | null
  readonly summaryTokens?: number | null
  readonly footer?: string | null
  readonly error?: string | null
  readonly createdAt: number
}

export interface ShadowCheckpoint extends CheckpointInput {
  /** When retention first dropped originals this checkpoint points to (its pointer is then expired), else null. */
  readonly expiredAt: number | null
  /** How many of its originals were dropped. */
  readonly expiredRows: number
  readonly firstSeq: number | null
  readonly lastSeq: number | null
  readonly timeFrom: number | null
  readonly timeTo: number | null
  readonly messageCount: number
  readonly firstShadowId: string | null
  readonly lastShadowId: string | null
}

export type RecallKind = 'search' | 'read' | 'proactive'

export interface RecallInput {
  readonly sessionId: string
  readonly kind: RecallKind
  readonly time: number
  readonly query?: string | null
  readonly shadowIds: readonly string[]
  readonly checkpointIds?: readonly string[]
  /** Log seq of the tool result or recall message that carried the content, when known. */
  readonly seq?: number | null
}

export interface ShadowRecall extends RecallInput {
  readonly recallId: number
}

export interface AppendResult {
  readonly written: number
  readonly unchanged: number
  /** Rows that existed with different content (a lost lifetime's stale rows) and were replaced. */
  readonly replaced: number
}

/** How a session's rows differ from an authoritative list of (seq, hash). */
export interface ReconcileReport {
  readonly missing: number[]
  readonly mismatched: number[]
  /** Stored seqs the authority does not have at all. */
  readonly extra: number[]
  readonly duplicated: number
}

export interface StoreStats {
  readonly path: string
  readonly schemaVersion: number
  readonly analyzerVersion: number
  readonly sessions: number
  readonly messages: number
  readonly checkpoints: number
  readonly recalls: number
  readonly bytes: number
  readonly textBytes: number
  /** Rows whose originals retention dropped. */
  readonly expired: number
}

/** What a retention pass may keep. Only originals a committed checkpoint took off the surface are ever dropped. */
export interface RetentionPolicy {
  /** Stored bytes (text + event JSON) a session may keep. */
  readonly sessionBytes?: number
  /** Stored bytes all sessions of one workspace may keep together. */
  readonly workspaceBytes?: number
  /** Drop originals whose checkpoint's newest message is older than this, ms. */
  readonly maxAgeMs?: number
  /** Report what would be dropped, drop nothing. */
  readonly dryRun?: boolean
  /** Clock for age (tests); default Date.now(). */
  readonly now?: number
}

export interface RetentionReport {
  readonly dryRun: boolean
  /** Checkpoints whose originals were dropped, oldest first, with why. */
  readonly expired: ReadonlyArray<{ readonly checkpointId: string; readonly sessionId: string; readonly rows: number; readonly bytes: number; readonly reason: 'age' | 'session' | 'workspace' }>
  readonly rows: number
  readonly bytes: number
  /** Scopes still over budget with nothing left to drop (their live surface alone is bigger). */
  readonly overBudget: ReadonlyArray<{ readonly scope: 'session' | 'workspace'; readonly id: string; readonly bytes: number; readonly budget: number }>
}
