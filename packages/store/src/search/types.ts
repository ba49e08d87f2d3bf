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
  /** Rank at most this many newest matches per index. Default 5000. */
  readonly rankWindow?: number
  /** Leave out rows of these source kinds (recall layers pass their checkpoint and recall kinds). */
  readonly excludeSourceKinds?: readonly string[]
  /** Leave out results of, and calls to, these tools. */
  readonly excludeToolNames?: readonly string[]
}

export interface SearchHit {
  readonly message: ShadowMessage
  /** For a tool result: the assistant message that called the tool (call and result rank as one unit). */
  readonly call?: ShadowMessage
  readonly score: number
  readonly snippet: string
  readonly matched: readonly string[]
}

export interface SearchResult {
  readonly hits: SearchHit[]
  readonly coverage: {
    /** Messages in scope (after filters). */
    readonly searched: number
    /** Messages that matched the query in scope (lower bound when the rank window was hit). */
    readonly matched: number
    readonly returned: number
  }
  /** Literal pieces of the query, lowercased. */
  readonly literals: readonly string[]
}
