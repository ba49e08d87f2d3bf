/**
 * Conversation node definition: which log events make a Shadow Context recall chat node. They only
 * anchor the nodes in the flow and carry the event's own facts as a fallback; what a node shows
 * comes from the `shadowContext` projection value when the browser has it.
 *
 * A checkpoint needs no node of ours: dsh builds its own row for every compaction, automatic
 * (`compaction`) or manual (`manual-compaction`, the `/compact` command's row), and this plugin
 * renders both (see compaction.ts).
 *
 * - `shadow-recall`: where the model searched or read the shadow — a `tool/call` of
 *   `shadow_search` / `shadow_read` starts it and its `tool/result` completes it; a proactive
 *   recall message (`source.kind: 'shadow-context'`, `form: 'recall'`) is one on its own.
 */
import type { ChatViewNode, NodeContext, NodeDefinition } from './types.ts'

export const ENGINE = 'shadow-context'
export const SEARCH_TOOL = 'shadow_search'
export const READ_TOOL = 'shadow_read'
export const RECALL_KIND = 'shadow-recall'

/** What a checkpoint row shows: read from dsh's compaction node and the projection (compaction.ts). */
export interface CheckpointData {
  readonly checkpointId: string
  readonly seqFrom: number
  readonly seqTo: number
  readonly messages: number
  readonly tokens: number
  /** Seq of the replacing checkpoint message (the node sits right after it). */
  readonly seq: number
  readonly time: number
}

export interface RecallData {
  readonly kind: 'search' | 'read' | 'proactive'
  /** The call's arguments as the model wrote them (JSON), or the recall message's query. */
  readonly request: string | null
  /** Seq of what came back: the tool result or the recall message; null while the tool runs. */
  readonly seq: number | null
  readonly ok: boolean | null
  /** Shadow ids named in what came back (the projection's list wins when present). */
  readonly ids: readonly string[]
}

interface RecallState extends RecallData {
  readonly anchor: number
}

const SHADOW_ID = /\b[a-z2-9]{6,12}\.\d+\b/g
const MAX_IDS = 200

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content.map(block => {
    const fields = record(block)
    if (fields === undefined) return ''
    if (fields['type'] === 'text' && typeof fields['text'] === 'string') return fields['text']
    if (fields['type'] === 'tool-result') return textOf(fields['content'])
    return ''
  }).join('\n')
}

function idsIn(text: string): string[] {
  return [...new Set(text.match(SHADOW_ID) ?? [])].slice(0, MAX_IDS)
}

function locationOf<State>(context: NodeContext<State>): unknown {
  return context.start?.location ?? { kind: 'unresolved' }
}

export const recallDefinition: NodeDefinition<RecallState, RecallData> = {
  kind: RECALL_KIND,
  target: 'chat',
  match(event) {
    if (event.type === 'tool/call' && (event.data['name'] === SEARCH_TOOL || event.data['name'] === READ_TOOL) && typeof event.data['callId'] === 'string') {
      return { id: `call:${event.data['callId']}`, role: 'start' }
    }
    if (event.type === 'tool/result') {
      // Every result is offered as an update; results of other tools never find a start and stay pending.
      const callId = record(record(event.data['message'])?.['source'])?.['callId']
      return typeof callId === 'string' ? { id: `call:${callId}`, role: 'update' } : null
    }
    if (event.type === 'user/message' && record(event.data['source'])?.['kind'] === ENGINE) return { id: `message:${event.seq}`, role: 'start' }
    return null
  },
  start(_context, match) {
    const event = match.event
    if (event.type === 'user/message') {
      const source = record(event.data['source'])
      const listed = Array.isArray(source?.['shadowIds']) ? (source['shadowIds'] as unknown[]).filter((id): id is string => typeof id === 'string') : []
      return {
        kind: 'proactive', request: typeof source?.['query'] === 'string' ? source['query'] : null, seq: event.seq, ok: true,
        ids: listed.length > 0 ? listed.slice(0, MAX_IDS) : idsIn(textOf(event.data['content'])), anchor: event.seq,
      }
    }
    return {
      kind: event.data['name'] === SEARCH_TOOL ? 'search' : 'read',
      request: typeof event.data['arguments'] === 'string' ? event.data['arguments'] : null,
      seq: null, ok: null, ids: [], anchor: event.seq,
    }
  },
  update(context, match) {
    const message = record(match.event.data['message'])
    const result = Array.isArray(message?.['content']) ? record(message['content'][0]) : undefined
    const failed = result?.['isError'] === true
    return { ...context.state, seq: match.event.seq, anchor: match.event.seq, ok: !failed, ids: failed ? [] : idsIn(textOf(message?.['content'])) }
  },
  buildViewNode(context): ChatViewNode<RecallData> | null {
    const state = context.state
    if (state === undefined) return null
    return {
      key: context.key,
      kind: RECALL_KIND,
      id: context.id,
      target: 'chat',
      // right after what came back, so the marker reads as "this is what the recall returned"
      anchorSeq: state.anchor + 0.5,
      location: locationOf(context),
      visibility: 'visible',
      data: { kind: state.kind, request: state.request, seq: state.seq, ok: state.ok, ids: state.ids },
    }
  },
}
