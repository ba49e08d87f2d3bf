/**
 * The few browser-side dsh shapes this plugin touches, declared locally: the slot, conversation
 * and connection packages publish no client types for rc.8 that we could depend on. Each mirrors
 * the rc.8 contract it names (dsh-client-runtime, dsh-client-ui-slots, dsh-client-connection).
 */
import type { ComponentType } from 'react'

/** `RpcResult` of dsh-host-apiproxy: what `connection.rpc.call` resolves to (it never throws for a refusal). */
export type RpcResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } }

export interface ClientConnection {
  readonly rpc: { call(channel: string, endpoint: string, payload: unknown, signal?: AbortSignal): Promise<RpcResult> }
}

/** A session log event as the conversation engine hands it to a definition (rc.8 `SessionEvent`). */
export interface LogEvent {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: Record<string, unknown>
  readonly surfaceOp?: unknown
}

export interface ConversationMatch {
  readonly event: LogEvent
  readonly role: 'start' | 'update'
  readonly location: unknown
}

export interface NodeContext<State> {
  readonly key: string
  readonly kind: string
  readonly id: string
  readonly start: ConversationMatch | undefined
  readonly matches: readonly ConversationMatch[]
  readonly state: State | undefined
}

export interface ChatViewNode<Data> {
  readonly key: string
  readonly kind: string
  readonly id: string
  readonly target: 'chat'
  readonly anchorSeq: number
  readonly location: unknown
  readonly visibility: 'visible' | 'hidden'
  readonly data: Data
}

/** rc.8 `ConversationNodeDefinition` (dsh-client-runtime/lib/types/client/contract/conversation.d.ts). */
export interface NodeDefinition<State, Data> {
  readonly kind: string
  readonly target: 'chat'
  match(event: LogEvent): { id: string; role: 'start' | 'update' } | null
  start(context: NodeContext<State>, match: ConversationMatch): State
  update(context: NodeContext<State> & { readonly state: State }, match: ConversationMatch): State
  buildViewNode(context: NodeContext<State>): ChatViewNode<Data> | null
}

/** The session standard kit every session-scoped slot component receives. */
export interface SessionKit {
  readonly sessionId: string
  readonly useProjection: (key: string) => unknown
}

export interface SlotRegistry {
  inject(key: string, callback: () => () => void): () => void
  register(options: Readonly<Record<string, unknown>>, component: ComponentType<never>): () => void
  /** The raw ledger of a slot (every entry, priority ascending), rc.8 `SlotRegistry.entries`. */
  entries(key: string): readonly { readonly component: unknown; readonly options: { readonly key?: string } }[]
}

export interface ClientContext {
  readonly slots: SlotRegistry
  readonly conversationEvents: { register<State, Data>(definition: NodeDefinition<State, Data>): () => void }
  readonly connection: ClientConnection
}
