/**
 * The storage backend seam. `ShadowStore` holds the domain rules (ids, lineage, validation,
 * ranking); a backend only persists rows and answers index queries. SQLite (`node:sqlite`) is the
 * embedded default; every SQL dialect detail stays inside its implementation so a PostgreSQL
 * backend for team dsh servers can sit behind the same interface.
 */
import type {
  AppendResult,
  CheckpointInput,
  LineageSegment,
  RecallInput,
  ShadowCheckpoint,
  ShadowMessage,
  ShadowMessageInput,
  ShadowRecall,
  ShadowRole,
  ShadowSession,
  ShadowSessionInput,
  StoreStats,
} from './types.ts'

/** A message row ready to persist: the input plus what the store derived from it. */
export interface PreparedMessage extends ShadowMessageInput {
  readonly tag: string
  readonly shadowId: string
  readonly hash: string
  /** Analyzer output for the two indexes. */
  readonly words: string
  readonly grams: string
}

/** Row filters shared by reads and searches. */
export interface MessageFilter {
  readonly segments: readonly LineageSegment[]
  readonly fromSeq?: number
  readonly toSeq?: number
  readonly timeFrom?: number
  readonly timeTo?: number
  readonly roles?: readonly ShadowRole[]
  readonly toolName?: string
  readonly elidedBy?: string
  /** Leave out rows of these source kinds (e.g. checkpoint summaries, recall messages). */
  readonly excludeSourceKinds?: readonly string[]
  /** Leave out results of, and calls to, these tools (e.g. the recall tools themselves). */
  readonly excludeToolNames?: readonly string[]
}

export interface IndexQuery extends MessageFilter {
  readonly index: 'words' | 'grams'
  readonly terms: readonly string[]
  readonly operator: 'or' | 'and'
  readonly limit: number
  /** Rank at most this many of the newest matches (bounds the cost of very common terms); Infinity ranks all. */
  readonly rankWindow: number
}

export interface IndexHit {
  readonly message: ShadowMessage
  /** Backend relevance, higher is better (for FTS5: -bm25). */
  readonly score: number
}

export interface IndexResult {
  readonly hits: IndexHit[]
  /** True when older matches beyond `rankWindow` were not ranked. */
  readonly windowed: boolean
}

export interface FrequencyQuery {
  readonly segments: readonly LineageSegment[]
  readonly index: 'words' | 'grams'
  readonly terms: readonly string[]
  /** Stop counting a term at this many messages. */
  readonly cap: number
}

export interface ReadQuery extends MessageFilter {
  readonly limit: number
  /** Newest first instead of oldest first. */
  readonly descending?: boolean
}

/** SQLite answers synchronously; a network database would not. The store awaits either. */
export type Awaitable<T> = T | Promise<T>

export interface ShadowBackend {
  readonly path: string
  readonly schemaVersion: number
  close(): Awaitable<void>

  upsertSession(input: ShadowSessionInput & { readonly tag: string }): Awaitable<void>
  getSession(sessionId: string): Awaitable<ShadowSession | undefined>
  getSessionByTag(tag: string): Awaitable<ShadowSession | undefined>
  listSessions(workspace?: string): Awaitable<ShadowSession[]>

  appendMessages(rows: readonly PreparedMessage[]): Awaitable<AppendResult>
  getMessage(sessionId: string, seq: number): Awaitable<ShadowMessage | undefined>
  readMessages(query: ReadQuery): Awaitable<ShadowMessage[]>
  countMessages(filter: MessageFilter): Awaitable<number>
  messageHashes(sessionId: string): Awaitable<Array<{ seq: number; hash: string }>>
  deleteMessages(sessionId: string, seqs: readonly number[]): Awaitable<number>
  markElided(sessionId: string, seqs: readonly number[], checkpointId: string): Awaitable<void>

  putCheckpoint(input: CheckpointInput, derived: Omit<ShadowCheckpoint, keyof CheckpointInput>): Awaitable<void>
  getCheckpoint(checkpointId: string): Awaitable<ShadowCheckpoint | undefined>
  listCheckpoints(sessionIds: readonly string[]): Awaitable<ShadowCheckpoint[]>

  addRecall(input: RecallInput): Awaitable<number>
  listRecalls(sessionId: string): Awaitable<ShadowRecall[]>

  searchIndex(query: IndexQuery): Awaitable<IndexResult>
  /** Per term (same order): how many messages in scope contain it, counted up to `cap`. */
  documentFrequencies(query: FrequencyQuery): Awaitable<number[]>
  /** Rebuild both indexes from stored text with the given analyzer; returns rows indexed. */
  reindex(analyze: (text: string) => { words: string; grams: string }, version: number, progress?: (done: number, total: number) => void): Awaitable<number>
  stats(): Awaitable<Omit<StoreStats, 'path'>>
  /** Refuse (or accept again) every write on this connection, e.g. during a backup. */
  setWritable(writable: boolean): Awaitable<void>
  /** Structural self-check; empty when healthy. */
  integrityCheck(): Awaitable<string[]>
}
