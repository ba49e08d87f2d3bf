/**
 * The `shadowContext` session projection unit: a pure, synchronous fold of the session log into
 * what a UI shows about Shadow Context — whether this session runs it (a value, not the key's
 * presence: the unit table is process-wide), how many messages were captured and shadowed, the
 * checkpoints with their ranges, the recalls, and the last failure.
 *
 * Plain JSON state; an irrelevant event returns the same state reference.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { z } from 'zod'
import { extent } from '@dsh-shadow/store'
import { SHADOW_ENGINE } from '../capture/checkpoints.ts'
import { READ_TOOL, SEARCH_TOOL } from '../recall/recall.ts'
import { cutPrefix } from '../text.ts'

export const PROJECTION_KEY = 'shadowContext'
// 2: checkpoints carry the shadow id range their footer states (shadowFrom/shadowTo)
// 4: observation-mask stubs are kind 'mask' (they were folded as 'llm')
export const PROJECTION_STATE_VERSION = 4
/** Lists kept in the value (a UI needs the recent ones; the CLI reads the store for all). */
export const MAX_CHECKPOINTS = 200
export const MAX_RECALLS = 50

export const CheckpointViewSchema = z.object({
  id: z.string(),
  kind: z.enum(['digest', 'index', 'state', 'mask', 'llm', 'other']),
  engine: z.string(),
  seq: z.number(),
  time: z.number(),
  seqFrom: z.number(),
  seqTo: z.number(),
  /** Wall-clock range of the originals, when the checkpoint's footer states it (epoch ms). */
  timeFrom: z.number().nullable(),
  timeTo: z.number().nullable(),
  /** First and last shadow id of the originals, when the footer states them (an index does not). */
  shadowFrom: z.string().nullable(),
  shadowTo: z.string().nullable(),
  messages: z.number(),
  shadowedTokens: z.number(),
  /** Tokens the checkpoint message itself costs in the context (estimated like dsh's meter: chars/4 + 4). */
  digestTokens: z.number(),
  turn: z.number().nullable(),
})

export const RecallViewSchema = z.object({
  kind: z.enum(['search', 'read', 'proactive']),
  seq: z.number(),
  time: z.number(),
  query: z.string().nullable(),
  ok: z.boolean(),
  /** Shadow ids the recall brought back into the context. */
  ids: z.array(z.string()),
  /** One line of what came back (the first hit or message), for people. */
  snippet: z.string().nullable(),
})

export const FailureViewSchema = z.object({ seq: z.number(), time: z.number(), message: z.string() })

export const ShadowContextViewSchema = z.object({
  /** This session runs Shadow Context (its requests carry the recall tools, or it has our checkpoints). */
  active: z.boolean(),
  captured: z.number(),
  shadowed: z.number(),
  checkpointCount: z.number(),
  checkpoints: z.array(CheckpointViewSchema),
  recallCount: z.number(),
  recalls: z.array(RecallViewSchema),
  lastFailure: FailureViewSchema.nullable(),
  /** Tokens of originals our checkpoints took off the context (an index folds checkpoints: it adds none). */
  savedTokens: z.number(),
  /** Tokens the checkpoint messages cost in their place. */
  checkpointTokens: z.number(),
  /** Original messages all recalls brought back. */
  recalledMessages: z.number(),
})

export type CheckpointView = z.infer<typeof CheckpointViewSchema>
export type RecallView = z.infer<typeof RecallViewSchema>
export type ShadowContextView = z.infer<typeof ShadowContextViewSchema>

declare module '@deepseek-ai/dsh-session-projection/types' {
  interface SessionProjectionMap {
    shadowContext: ShadowContextView
  }
}

interface PendingSummary {
  readonly compactionId: string
  readonly provider: string
  readonly model: string
  readonly seqFrom: number
  readonly seqTo: number
  readonly messages: number
  readonly tokens: number
}

interface PendingCall {
  readonly kind: 'search' | 'read'
  readonly query: string | null
}

export interface ShadowContextState extends ShadowContextView {
  readonly tools: boolean
  readonly turn: number | null
  readonly summary: PendingSummary | null
  readonly calls: Readonly<Record<string, PendingCall>>
}

export function initState(): ShadowContextState {
  return {
    active: false, tools: false, captured: 0, shadowed: 0, checkpointCount: 0, checkpoints: [], recallCount: 0, recalls: [],
    lastFailure: null, savedTokens: 0, checkpointTokens: 0, recalledMessages: 0, turn: null, summary: null, calls: {},
  }
}

const TIME_RANGE = /(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) → (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/g

/** The wall-clock range a checkpoint's own text states (a footer, or an index's lines), UTC. */
function footerTimes(text: string): { timeFrom: number | null; timeTo: number | null } {
  let timeFrom: number | null = null
  let timeTo: number | null = null
  for (const match of text.matchAll(TIME_RANGE)) {
    const from = Date.parse(`${match[1]!.replace(' ', 'T')}Z`)
    const to = Date.parse(`${match[2]!.replace(' ', 'T')}Z`)
    timeFrom = timeFrom === null ? from : Math.min(timeFrom, from)
    timeTo = timeTo === null ? to : Math.max(timeTo, to)
  }
  return { timeFrom, timeTo }
}

/**
 * The shadow id range the footer of checkpoint `id` states. Anchored on its own `[shadow <id>]`
 * line: the digest above it may quote another checkpoint's footer.
 */
function footerIds(text: string, id: string): { shadowFrom: string | null; shadowTo: string | null } {
  const line = text.split('\n').findLast(candidate => candidate.startsWith(`[shadow ${id}] `))
  const match = line === undefined ? null : / · shadow ids (\S+) … (\S+) · /.exec(line)
  return match === null ? { shadowFrom: null, shadowTo: null } : { shadowFrom: match[1]!, shadowTo: match[2]! }
}

function kindOf(summary: PendingSummary): CheckpointView['kind'] {
  if (summary.provider !== SHADOW_ENGINE) return 'other'
  if (summary.model.startsWith('rollup')) return 'index'
  if (summary.model.startsWith('state')) return 'state'
  if (summary.model.startsWith('digest')) return 'digest'
  if (summary.model.startsWith('mask')) return 'mask'
  return 'llm'
}

function textOf(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content.map(block => (block.type === 'text' ? block.text ?? '' : '')).join('\n')
}

function queryOf(args: string): string | null {
  try {
    const parsed = JSON.parse(args) as { query?: unknown; id?: unknown; checkpoint?: unknown }
    const value = parsed.query ?? parsed.checkpoint ?? parsed.id
    return typeof value === 'string' ? value : null
  } catch {
    return null
  }
}

const SHADOW_ID = /\b[a-z2-9]{6,12}\.\d+\b/g

function withRecall(state: ShadowContextState, recall: RecallView): ShadowContextState {
  return { ...state, active: true, recallCount: state.recallCount + 1, recalledMessages: state.recalledMessages + recall.ids.length, recalls: [...state.recalls, recall].slice(-MAX_RECALLS) }
}

/** The first line after the first shadow id a recall returned (a hit's snippet, a message's text), cut to one short line. */
export function recallSnippet(text: string): string | null {
  const lines = text.split('\n').map(line => line.trim())
  const at = lines.findIndex(line => new RegExp(SHADOW_ID.source).test(line))
  if (at === -1) return null
  const line = (lines.slice(at + 1).find(candidate => candidate.length > 0 && !candidate.startsWith('──')) ?? lines[at]!).replaceAll('**', '').replace(/\s+/g, ' ')
  return line.length > 120 ? `${cutPrefix(line, 119)}…` : line
}

/** How a unit redacts the free text it keeps (recall queries, failure messages); identity when off. */
export type TextRedaction = (text: string) => string

const keep: TextRedaction = text => text

export function applyEvent(state: ShadowContextState, event: SessionEvent, redact: TextRedaction = keep): ShadowContextState {
  switch (event.type) {
    case 'turn/start':
      return { ...state, turn: event.data.turn }
    case 'turn/end':
      return state.turn === null ? state : { ...state, turn: null }
    case 'request/header': {
      const tools = (event.data.header.tools ?? []).some(tool => tool.name === SEARCH_TOOL)
      return tools === state.tools ? state : { ...state, tools, active: state.active || tools }
    }
    case 'compaction/summary': {
      const seqs = event.data.shadowedSeqs
      const range = extent(seqs) ?? { min: 0, max: 0 }
      return {
        ...state,
        summary: {
          compactionId: event.data.compactionId,
          provider: event.data.provider,
          model: event.data.model,
          seqFrom: range.min,
          seqTo: range.max,
          messages: seqs.length,
          tokens: event.data.shadowedTokenCount,
        },
      }
    }
    case 'compaction/end': {
      const error = event.data.error
      if (error === undefined) return state.summary === null ? state : { ...state, summary: null }
      return { ...state, summary: null, lastFailure: { seq: event.seq, time: event.time, message: redact(error) } }
    }
    case 'user/message': {
      let next = { ...state, captured: state.captured + 1 }
      const source = event.data.source
      if (typeof event.surfaceOp === 'object' && isCompactCheckpointSource(source) && state.summary !== null) {
        const summary = state.summary
        const kind = kindOf(summary)
        const checkpoint: CheckpointView = {
          id: summary.compactionId,
          kind,
          engine: summary.provider === SHADOW_ENGINE ? SHADOW_ENGINE : summary.provider,
          seq: event.seq,
          time: event.time,
          seqFrom: summary.seqFrom,
          seqTo: summary.seqTo,
          ...footerTimes(textOf(event.data.content)),
          ...footerIds(textOf(event.data.content), summary.compactionId),
          messages: summary.messages,
          shadowedTokens: summary.tokens,
          digestTokens: Math.ceil(textOf(event.data.content).length / 4) + 4,
          turn: state.turn,
        }
        next = {
          ...next,
          active: next.active || summary.provider === SHADOW_ENGINE,
          // an index folds earlier checkpoints, not messages: only digests and states add to "shadowed"
          shadowed: next.shadowed + (kind === 'index' ? 0 : summary.messages),
          checkpointCount: next.checkpointCount + 1,
          savedTokens: next.savedTokens + (kind === 'index' || checkpoint.engine !== SHADOW_ENGINE ? 0 : summary.tokens),
          checkpointTokens: next.checkpointTokens + (checkpoint.engine === SHADOW_ENGINE ? checkpoint.digestTokens : 0),
          checkpoints: [...next.checkpoints, checkpoint].slice(-MAX_CHECKPOINTS),
          summary: null,
        }
      }
      if (source.kind === 'shadow-context') {
        const text = textOf(event.data.content)
        next = withRecall(next, { kind: 'proactive', seq: event.seq, time: event.time, query: null, ok: true, ids: [...new Set(text.match(SHADOW_ID) ?? [])], snippet: recallSnippet(text) })
      }
      return next
    }
    case 'assistant/message': {
      let calls = state.calls
      for (const block of event.data.message.content) {
        if (block.type !== 'tool-call' || (block.name !== SEARCH_TOOL && block.name !== READ_TOOL)) continue
        const query = queryOf(block.arguments)
        calls = { ...calls, [block.id]: { kind: block.name === SEARCH_TOOL ? 'search' : 'read', query: query === null ? null : redact(query) } }
      }
      return { ...state, captured: state.captured + 1, calls }
    }
    case 'tool/result': {
      const callId = event.data.message.source.callId
      const call = state.calls[callId]
      const next = { ...state, captured: state.captured + 1 }
      if (call === undefined) return next
      const { [callId]: _done, ...calls } = state.calls
      const result = event.data.message.content[0]
      const text = result === undefined ? '' : textOf(result.content)
      return withRecall({ ...next, calls }, {
        kind: call.kind, seq: event.seq, time: event.time, query: call.query, ok: result?.isError !== true,
        ids: result?.isError === true ? [] : [...new Set(text.match(SHADOW_ID) ?? [])].slice(0, 200),
        // an error echoes the arguments it refused (a checkpoint id, a time): redacted like the query
        snippet: result?.isError === true ? cutPrefix(redact(text.split('\n')[0]!), 120) : recallSnippet(text),
      })
    }
    default:
      return state
  }
}

export function viewOf(state: ShadowContextState): ShadowContextView {
  return {
    active: state.active,
    captured: state.captured,
    shadowed: state.shadowed,
    checkpointCount: state.checkpointCount,
    checkpoints: state.checkpoints,
    recallCount: state.recallCount,
    recalls: state.recalls,
    lastFailure: state.lastFailure,
    savedTokens: state.savedTokens,
    checkpointTokens: state.checkpointTokens,
    recalledMessages: state.recalledMessages,
  }
}

/**
 * The unit as dsh's session projection registry takes it. With redaction on, free text taken from
 * the log (what the model typed into shadow_search) is redacted as the store redacts it.
 */
export function projectionUnit(redact: TextRedaction = keep) {
  return {
    key: PROJECTION_KEY,
    schema: ShadowContextViewSchema,
    stateVersion: PROJECTION_STATE_VERSION,
    init: initState,
    apply: (state: ShadowContextState, event: SessionEvent): ShadowContextState => applyEvent(state, event, redact),
    view: viewOf,
  } as const
}

export const shadowContextProjection = projectionUnit()
