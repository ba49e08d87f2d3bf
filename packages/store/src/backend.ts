/**
 * The storage backend seam. `ShadowStore` and its modules hold every domain rule (ids, lineage,
 * validation, the search plan and ranking, retention choice); a backend only persists rows and
 * answers index queries, with every SQL dialect detail inside its own folder (`sqlite/`, `postgres/`).
 *
 * A backend's responsibilities:
 * - schema and migrations; typed `ShadowStoreError`s for its failures (locked, full, corrupt: fail closed);
 * - idempotent writes keyed by (session, seq): same hash unchanged, a new hash replaced (elision
 *   and expiry cleared); session counters and both indexes kept in the same transaction;
 * - reads by key and by `MessageFilter` (lineage segments, seq/time/role/tool filters; `filter.ts`
 *   reads the filter for every backend), call partners, counts;
 * - the two index lists (`searchIndex`: ranked by its own relevance within `rankWindow`, or newest
 *   first) and per-term document frequencies up to a cap;
 * - maintenance: retention usage and candidates (never rows a fork still sees), expiry, vacuum,
 *   reindex with the store's analyzer, stats, integrity, write freeze, `assertInPlace`;
 * - per-session revisions (`sessionChanges`): every write transaction that inserts, replaces,
 *   deletes, marks, expires or redacts (text, or only the hash) rows of a session adds exactly 1 to
 *   its revision, in that transaction, and stamps the rows it wrote with the new revision (`rev`);
 *   one that deletes rows also records it as the session's `removedRev`. A write that changes
 *   nothing (an idempotent append, a mark already there) leaves it; so does a reindex (index
 *   entries only).
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

/** What the store derives for a checkpoint from its rows (retention fields are the backend's own). */
export type CheckpointDerived = Omit<ShadowCheckpoint, keyof CheckpointInput | 'expiredAt' | 'expiredRows'>

/** A message row ready to persist: the input plus what the store derived from it. */
export interface PreparedMessage extends ShadowMessageInput {
  readonly tag: string
  readonly shadowId: string
  readonly hash: string
  /** Analyzer output for the two indexes. */
  readonly words: string
  readonly grams: string
  /** UTC days other than its own the message's time words refer to (days.ts). */
  readonly days?: readonly number[]
}

/** What a reindex or redaction pass derives from a stored text (and the row's time). */
export interface IndexViews {
  readonly words: string
  readonly grams: string
  readonly days?: readonly number[]
}

/**
 * Where a wide scope came from: every session of the store, or of one workspace. A filter that
 * carries one reads, beside its `segments`, every other session of it whole, without naming them:
 * a workspace of 50k sessions listed as segments was a 50k-id parameter and a 50k-row listing per
 * search (0.3-0.6 s). The store names the sessions instead while there are at most WIDE_LISTED of
 * them, so a wide scope always holds more sessions than a backend scopes its index queries by.
 */
export type WideScope = { readonly of: 'store' } | { readonly of: 'workspace'; readonly workspace: string }

/** Sessions a workspace or allSessions scope names as segments at most (scope.ts); above, the filter says `wide`. */
export const WIDE_LISTED = 64

/** Row filters shared by reads and searches. */
export interface MessageFilter {
  /**
   * The sessions the filter names, each visible below its bound (a lineage: the asking session,
   * its fork ancestors below each fork point). With `wide`, these win over the wide scope: a
   * session named here is seen only as named (a parent in the workspace, below the fork).
   */
  readonly segments: readonly LineageSegment[]
  /** Also every session of this provenance that `segments` does not name, all its rows. */
  readonly wide?: WideScope
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
  /** `rank` (default): bm25 over the newest `rankWindow` matches; `newest`: the newest matches, unscored. */
  readonly order?: 'rank' | 'newest'
  /**
   * Candidates only: leave `eventJson` empty and cut `text` to its first CANDIDATE_TEXT_CHARS
   * characters (ranking looks no further; the winners are read in full).
   */
  readonly light?: boolean
  /**
   * Only rows whose time words refer to one of these UTC days (days.ts), whenever they were said:
   * `timeFrom`/`timeTo` are not applied. Words index, `order: 'newest'` only.
   */
  readonly referredDays?: readonly number[]
  /**
   * How many messages of the scope the caller counted holding the terms (a hint, from
   * documentFrequencies): a backend may read a list it expects not to fill in index order. The
   * result never depends on it (a list that does fill is read newest first after all).
   */
  readonly expected?: number
}

/** Characters (UTF-16 code units) of a candidate's text a light read returns (what ranking and passages look at). */
export const CANDIDATE_TEXT_CHARS = 256_000
/**
 * UTF-8 bytes a light read takes from the stored text: always at least CANDIDATE_TEXT_CHARS
 * characters, cut to exactly that many by `candidateText`, so every backend's light rows hold the
 * same text whatever the script. A code unit takes at most 3 bytes (BMP characters 1-3, a pair
 * of surrogates 4, an invalid byte read as U+FFFD 1), and the last unit kept may be the first half
 * of a pair, whose character ends a byte further: 3 x CANDIDATE_TEXT_CHARS + 1 bytes always hold
 * the units kept whole. (4 x, as it was, decoded a third more of a long CJK candidate for nothing.)
 */
export const CANDIDATE_READ_BYTES = CANDIDATE_TEXT_CHARS * 3 + 1

/** A light row's text: its first CANDIDATE_TEXT_CHARS characters. */
export function candidateText(text: string): string {
  return text.length > CANDIDATE_TEXT_CHARS ? text.slice(0, CANDIDATE_TEXT_CHARS) : text
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
  /** As MessageFilter's. */
  readonly wide?: WideScope
  readonly index: 'words' | 'grams'
  readonly terms: readonly string[]
  /** Stop counting a term at this many messages. */
  readonly cap: number
  /** Count in the whole store, whatever the segments (what bm25's idf pass walks). */
  readonly global?: boolean
}

/** Stored bytes of one session (rows not yet expired). */
export interface RetentionUsage {
  readonly sessionId: string
  readonly workspace: string | null
  readonly bytes: number
}

/** Originals one checkpoint took off the surface that are still stored. */
export interface RetentionCandidate {
  readonly sessionId: string
  readonly checkpointId: string
  readonly rows: number
  readonly bytes: number
  /** Time of its newest message. */
  readonly newest: number
}

export interface ReadQuery extends MessageFilter {
  readonly limit: number
  /** Newest first instead of oldest first. */
  readonly descending?: boolean
}

/**
 * What changed in a session since a revision the caller holds (`ShadowBackend.sessionChanges`):
 * what a resident index reads to stay exact while any process writes the store.
 */
export interface SessionChanges {
  /**
   * The session's revision in the snapshot read. A session registered again after a forget starts
   * above every revision the forgotten one had (REVISION_FLOOR_META), with `removedRev` at that start.
   */
  readonly revision: number
  /** The revision of the last transaction that deleted rows of the session (0: none since the store has revisions). */
  readonly removedRev: number
  /**
   * Rows with rev > since, in seq order, light (as search candidates: `eventJson` '' and text cut to
   * CANDIDATE_TEXT_CHARS). Empty when revision === since. A row deleted since is absent: compare
   * `removedRev` with `since` to know whether to drop rows the caller holds (reload with since -1).
   */
  readonly rows: ShadowMessage[]
  /** Each row's event JSON as stored (event-json.ts `packEventJson`), same order: a resident index puts a hit's event back together from it. */
  readonly events: ReadonlyArray<Uint8Array | string>
  /** The session's rows (its counter in the same snapshot): whether a scope is small enough to hold. */
  readonly messageCount: number
  /**
   * False when the byte bound (`bound.bytes`, `page.bytes`) stopped the read with a row after it:
   * only then may a bounded answer under its row bound not be the whole delta (or page). The light
   * rows' own text cannot tell: cut shorter than the read that counted it, a 1 MB row looked small,
   * and the rows the bound left out after it were taken as none.
   */
  readonly complete: boolean
}

/**
 * One question of `sessionChanges`: the session's rows stamped after `since`, or, with `page`, one
 * page of them in seq order, so that a whole session (`since: -1`) is read a bounded piece at a time.
 */
export interface ChangesRequest {
  readonly sessionId: string
  readonly since: number
  /**
   * Only rows above `afterSeq`, at most `rows` of them, and none after the row at which the text
   * read (cut as a candidate's, in UTF-8 bytes) reaches `bytes` (the first row always). An empty
   * page: no row is left above `afterSeq`. Each page is its own snapshot.
   */
  readonly page?: { readonly afterSeq: number; readonly rows: number; readonly bytes: number }
  /**
   * Without a page: at most `rows` of the rows stamped after `since` (the oldest revisions first),
   * and none after the row at which the text read reaches `bytes` (the first always); still in seq
   * order. An answer of fewer rows and bytes than these is the whole delta; one that reaches either
   * may not be (a resident index then builds itself anew, in the background).
   */
  readonly bound?: { readonly rows: number; readonly bytes: number }
}

/** SQLite answers synchronously; a network database would not. The store awaits either. */
export type Awaitable<T> = T | Promise<T>

export interface ShadowBackend {
  readonly path: string
  readonly schemaVersion: number
  close(): Awaitable<void>
  /** The store's own settings (schema-independent keys: the redaction policy, the analyzer version). */
  meta(key: string): Awaitable<string | undefined>
  setMeta(key: string, value: string): Awaitable<void>

  upsertSession(input: ShadowSessionInput & { readonly tag: string }): Awaitable<void>
  getSession(sessionId: string): Awaitable<ShadowSession | undefined>
  getSessionByTag(tag: string): Awaitable<ShadowSession | undefined>
  /**
   * The stored sessions among these ids (any order; absent ones left out), in one statement: an
   * append spanning 2,000 new sessions asked for each on its own (3.4 s on PostgreSQL).
   */
  getSessions(sessionIds: readonly string[]): Awaitable<ShadowSession[]>
  /** The stored sessions holding any of these tags (any order), in one statement. */
  getSessionsByTags(tags: readonly string[]): Awaitable<ShadowSession[]>
  /**
   * Register these sessions bare (no parent, workspace or time) unless stored, in one statement;
   * a session stored already is left as it is. CONFLICT when a session is not stored afterwards (its
   * tag went to another session meanwhile) or is stored under another tag (another writer chose one).
   */
  addSessions(sessions: ReadonlyArray<{ readonly sessionId: string; readonly tag: string }>): Awaitable<void>
  /** Newest first; at most `limit` of them when given (the newest session, without building every session's row). */
  listSessions(workspace?: string, limit?: number): Awaitable<ShadowSession[]>
  /**
   * The session, then its parent, its parent's parent… (child first), at most `limit` sessions, in
   * one statement; ends at a session without a parent or whose parent is not stored. Links that loop
   * repeat sessions (up to `limit`): the caller stops at the first one it has seen. A lineage walked
   * one `getSession` at a time was 5,000 round trips at 5,000 forks deep (1.2 s on PostgreSQL).
   */
  ancestry(sessionId: string, limit: number): Awaitable<SessionLink[]>
  /**
   * At most `limit` sessions (any order) of the store, or of a workspace: whether a wide scope is
   * small enough to name its sessions (WIDE_LISTED). An indexed read of `limit` rows, however many
   * sessions there are.
   */
  someSessions(scope: WideScope, limit: number): Awaitable<Array<Pick<ShadowSession, 'sessionId' | 'tag'>>>

  appendMessages(rows: readonly PreparedMessage[]): Awaitable<AppendResult>
  getMessage(sessionId: string, seq: number): Awaitable<ShadowMessage | undefined>
  /**
   * Rows by key, in their order (undefined for one not stored), in one read. Optional: without it
   * a caller asks `getMessage` per key (PostgreSQL answers the calls of one tick in one statement).
   */
  getMessages?(keys: ReadonlyArray<{ readonly sessionId: string; readonly seq: number }>): Awaitable<Array<ShadowMessage | undefined>>
  readMessages(query: ReadQuery): Awaitable<ShadowMessage[]>
  /** The results (role tool) and calling assistant messages of these (session, call id) pairs, without event JSON. */
  callRows(keys: ReadonlyArray<{ readonly sessionId: string; readonly callId: string }>): Awaitable<ShadowMessage[]>
  countMessages(filter: MessageFilter): Awaitable<number>
  /** Messages in the whole store (cheap: kept per session by every write). */
  messageTotal(): Awaitable<number>
  messageHashes(sessionId: string): Awaitable<Array<{ seq: number; hash: string }>>
  /**
   * What changed in these sessions since the revisions given, one answer per request (same order),
   * all from one consistent snapshot: a revision is never seen without its rows, nor a row newer
   * than the revision returned. `undefined` for a session not stored; `since: -1` returns every row.
   */
  sessionChanges(requests: readonly ChangesRequest[]): Awaitable<Array<SessionChanges | undefined>>
  /**
   * A mark that differs once a write has been committed to the store since it was read, by this
   * connection or any other (another thread, process or host): what a caller read under an equal
   * mark is still what the store holds. Optional, and undefined where it is not cheap to tell
   * (PostgreSQL): the caller reads again.
   */
  changeMark?(): Awaitable<string | undefined>
  deleteMessages(sessionId: string, seqs: readonly number[]): Awaitable<number>
  markElided(sessionId: string, seqs: readonly number[], checkpointId: string): Awaitable<void>

  putCheckpoint(input: CheckpointInput, derived: CheckpointDerived): Awaitable<void>
  getCheckpoint(checkpointId: string): Awaitable<ShadowCheckpoint | undefined>
  listCheckpoints(sessionIds: readonly string[]): Awaitable<ShadowCheckpoint[]>

  addRecall(input: RecallInput): Awaitable<number>
  listRecalls(sessionId: string): Awaitable<ShadowRecall[]>

  searchIndex(query: IndexQuery): Awaitable<IndexResult>
  /**
   * Several lists at once, each exactly what `searchIndex` returns for it (same order). Optional:
   * the search asks `searchIndex` per list without it. SQLite reads the rows of all lists once.
   */
  searchIndexes?(queries: readonly IndexQuery[]): Awaitable<IndexResult[]>
  /**
   * The row ids of each list (words index, newest first, light), exactly the rows `searchIndex`
   * would return for it, not read. Optional, with `candidateRows`: without them the search reads
   * those lists' rows (the same candidates, more reading).
   */
  listIds?(queries: readonly IndexQuery[]): Awaitable<number[][]>
  /** Light rows (as a light list reads them) of ids from `listIds`, one per id; `undefined` for one no longer stored. */
  candidateRows?(ids: readonly number[]): Awaitable<Array<ShadowMessage | undefined>>
  /** Per term (same order): how many messages in scope contain it, counted up to `cap`. */
  documentFrequencies(query: FrequencyQuery): Awaitable<number[]>
  retentionUsage(): Awaitable<RetentionUsage[]>
  /** Every checkpoint with stored originals, oldest (by newest message) first. */
  retentionCandidates(): Awaitable<RetentionCandidate[]>
  /** Drop the stored originals a checkpoint elided (content and index entries; identity and hash stay). */
  expireCheckpoint(checkpointId: string, time: number): Awaitable<{ rows: number; bytes: number }>
  /**
   * `expireCheckpoint` for each of these checkpoints (same order), in one transaction: one commit
   * per checkpoint made a first retention pass over 20k checkpoints take 6 s (SQLite) to 15 s (PostgreSQL).
   */
  expireCheckpoints(checkpointIds: readonly string[], time: number): Awaitable<Array<{ rows: number; bytes: number }>>
  /**
   * Give freed space back to the file system; while `VACUUM_DUE_META` is set, also rewrite the
   * storage so no old copy of deleted or redacted text stays in it (then clear it).
   */
  vacuum(): Awaitable<void>
  /** Rebuild both indexes from stored text with the given analyzer; returns rows indexed. */
  reindex(analyze: (text: string, time: number) => IndexViews, version: number, progress?: (done: number, total: number) => void): Awaitable<number>
  stats(): Awaitable<Omit<StoreStats, 'path'>>
  /** A pass redacting the stored rows is due (the policy was turned on or changed) or was interrupted. */
  redactionPending(): Awaitable<boolean>
  /**
   * Mark a pass due. `restart`: from the first row, for a policy (or redaction version) that takes
   * more than the one an interrupted pass was applying (the rows it did never saw the new one).
   */
  markRedactionPending(restart: boolean): Awaitable<void>
  /** Every row's hash is of its stored (redacted) form; false for a store from before that rule. */
  rowHashesCurrent(): Awaitable<boolean>
  /** A vacuum is owed (text was redacted in place and may linger in free space). */
  vacuumDue(): Awaitable<boolean>
  /** Redact every stored row, checkpoint footer and recall query in place (resumable); see the SQLite backend. */
  redactStored(
    redaction: { text(text: string): string; json(json: string): string; hash(storedJson: string): string },
    analyze: (text: string, time: number) => IndexViews,
    progress?: (done: number, total: number) => void,
  ): Awaitable<{ rows: number; changed: number }>
  /** Refuse (or accept again) every write on this connection, e.g. during a backup. */
  setWritable(writable: boolean): Awaitable<void>
  /**
   * Throws UNAVAILABLE when the storage this backend opened is no longer where it was opened
   * (an embedded file deleted or replaced under a live connection: its writes would vanish).
   */
  assertInPlace(): Awaitable<void>
  /** Structural self-check; empty when healthy. */
  integrityCheck(): Awaitable<string[]>
  /** Hash and marks of these seqs of a session's own rows (absent seqs are left out); no text is read. */
  messageHashesFor(sessionId: string, seqs: readonly number[]): Awaitable<MessageMark[]>
  /**
   * Delete these sessions outright: rows, index entries, call links, checkpoints, recalls, session
   * rows. One transaction, which also sets `VACUUM_DUE_META` when `vacuumDue` (owed exactly when the rows went).
   */
  forgetSessions(sessionIds: readonly string[], options?: { readonly vacuumDue?: boolean }): Awaitable<ForgetCounts>
}

/**
 * Meta key set while deleted or replaced text may still sit in the storage (free pages, old row
 * versions, index keys) until `vacuum()` rewrites it: after a redaction pass, a `forget` with vacuum
 * (a forget sets it in its own transaction, a redaction pass once done; the vacuum clears it, one that fails leaves it owed).
 */
export const VACUUM_DUE_META = 'vacuum_due'

/**
 * Meta key: one above every revision a forgotten session reached. A session row is created with
 * this revision (and `removed_rev`), so a session forgotten and registered again never goes back
 * over revisions its forgotten rows had: a reader holding one of them (another process's resident
 * index) is told by its next delta read that rows went (`removedRev` above what it holds), however
 * many writes the new session has had.
 */
export const REVISION_FLOOR_META = 'revision_floor'

/** What a lineage needs of a session (`ancestry`). */
export type SessionLink = Pick<ShadowSession, 'sessionId' | 'tag' | 'parentSessionId' | 'forkSeq' | 'workspace'>

/** What the write-ahead check and elision marking need of a row. */
export interface MessageMark {
  readonly seq: number
  readonly hash: string
  /** The row's time (a checkpoint's time range is derived from its rows' marks). */
  readonly time: number
  readonly elidedBy: string | null
  readonly expiredAt: number | null
}

/** What `forgetSessions` deleted. */
export interface ForgetCounts {
  readonly sessions: number
  readonly messages: number
  readonly checkpoints: number
  readonly recalls: number
}
