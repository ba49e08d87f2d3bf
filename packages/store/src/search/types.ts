/** The search API's options and answers. */
import type { ScopeOptions } from '../scope.ts'
import type { ShadowMessage, ShadowRole } from '../types.ts'

export interface SearchOptions extends ScopeOptions {
  readonly limit?: number
  readonly timeFrom?: number
  readonly timeTo?: number
  readonly roles?: readonly ShadowRole[]
  readonly toolName?: string
  /** Only messages a given checkpoint took off the surface. */
  readonly checkpointId?: string
  /** Rank at most this many newest matches per index. Default 1000 (RANK_WINDOW). */
  readonly rankWindow?: number
  /** Leave out rows of these source kinds (recall layers pass their checkpoint and recall kinds). */
  readonly excludeSourceKinds?: readonly string[]
  /** Leave out results of, and calls to, these tools. */
  readonly excludeToolNames?: readonly string[]
}

export interface SearchHit {
  /**
   * The message in full; one longer than CANDIDATE_TEXT_CHARS characters comes with only its
   * first CANDIDATE_TEXT_CHARS characters and no event JSON (read it by id for the rest).
   */
  readonly message: ShadowMessage
  /** For a tool result: the assistant message that called the tool (call and result rank as one unit). */
  readonly call?: ShadowMessage
  /** For a short reply: the question it answers (they rank as one unit, represented by the reply). */
  readonly question?: ShadowMessage
  readonly score: number
  /** Where in `message.text` the query is, [start, end) characters: a read of the hit starts there. */
  readonly passage: { readonly start: number; readonly end: number }
  /** From the passage, each match a whole token in `**…**`. */
  readonly snippet: string
  readonly matched: readonly string[]
}

/** One word of the query: where it occurs. */
export interface QueryTermReport {
  /** As the query wrote it (lowercased). */
  readonly term: string
  /** Messages in scope containing it, counted up to a cap (0: no message mentions it). */
  readonly inScope: number
  /** Returned hits containing it. */
  readonly inHits: number
  /** Rare in scope or absent: a word that makes the question specific. */
  readonly distinctive: boolean
  /** Its translations (glossary, en↔zh) that messages of the scope hold; `inHits` counts them too. */
  readonly translations?: readonly string[]
}

/** Several hits state a value for the same thing: the statements in time order. */
export interface ValueHistoryReport {
  /** The query words the statements share (their key). */
  readonly key: readonly string[]
  /** Oldest first; the last is the newest. */
  readonly statements: ReadonlyArray<{ readonly shadowId: string; readonly time: number; readonly value: string }>
}

export interface SearchResult {
  readonly hits: SearchHit[]
  readonly coverage: {
    /** Messages in scope after the filters; of a filtered scope of more than 20,000 messages, its size (not counted row by row). */
    readonly searched: number
    /** Messages that matched the query in scope (lower bound when the rank window was hit). */
    readonly matched: number
    readonly returned: number
  }
  /** Literal pieces of the query, lowercased. */
  readonly literals: readonly string[]
  /** Per query word: does the scope have it at all, do the hits. */
  readonly terms: readonly QueryTermReport[]
  /** When hits state different values for the thing asked about, oldest first. */
  readonly history?: ValueHistoryReport
}
