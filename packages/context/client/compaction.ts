/**
 * dsh's own "Context compacted" row, taken over: the web app builds one `compaction` chat node per
 * automatic compaction (whichever engine made it) and renders it through the keyed
 * `conversation.chat.node` seat. This plugin registers a renderer for that key at a lower priority
 * than dsh's own (the lowest live entry of a keyed cell renders), so every compaction row is ours:
 * one of our engine's becomes our checkpoint node, merged with dsh's facts; any other engine's
 * (compaction-basic in a Standard session) gets a row equivalent to dsh's. One row per compaction.
 *
 * A manual `/compact` is a row of its own kind (`manual-compaction`: the command and its compaction
 * in one node, keyed by the command); its renderer here shows our checkpoint once ours has landed
 * and hands every other state of that row to the next renderer of the cell (dsh's) unchanged.
 *
 * Which engine made it is read from the event itself: our checkpoints always end with the code
 * footer `[shadow <compactionId>] … · seqs a–b · …`, which dsh's node carries as its summary text.
 * A node whose summary the browser has not loaded falls back to the projection's checkpoint list.
 */
import type { ShadowContextView } from '../src/projection/unit.ts'
import { ENGINE, type CheckpointData } from './definitions.ts'

export const COMPACTION_KIND = 'compaction'
/** dsh's node for a manual `/compact`: the command and its compaction in one row (rc.8 `ManualCompactionChatData`). */
export const MANUAL_COMPACTION_KIND = 'manual-compaction'
/** Below dsh's own renderer (priority 0): the lowest priority of a keyed cell renders. */
export const COMPACTION_PRIORITY = -10

/** The payload of dsh's `compaction` chat node (rc.8 `CompactionSummaryNode`, dsh-client-runtime). */
export interface CompactionSummaryData {
  /** Seq of the replacing checkpoint message. */
  readonly seq: number
  readonly time: number
  /** The checkpoint's text (the `compaction/summary` event's), null when that event is not loaded. */
  readonly summary: string | null
  readonly shadowedItemCount: number | null
  readonly shadowedTokenCount: number | null
}

export interface CompactionNode {
  /** The compaction id (dsh keys its node by it). */
  readonly id: string
  readonly data: CompactionSummaryData
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null
}

/** dsh's node payload, checked field by field (a later dsh may change it; then nothing is assumed). */
export function compactionDataOf(value: unknown): CompactionSummaryData | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const data = value as Record<string, unknown>
  if (typeof data['seq'] !== 'number' || typeof data['time'] !== 'number') return undefined
  return {
    seq: data['seq'],
    time: data['time'],
    summary: typeof data['summary'] === 'string' ? data['summary'] : null,
    shadowedItemCount: count(data['shadowedItemCount']),
    shadowedTokenCount: count(data['shadowedTokenCount']),
  }
}

/**
 * The compaction inside dsh's `manual-compaction` node (`{ command, compaction }`), or undefined
 * while the command runs, when it made none (failure, nothing to compact) or for a payload this
 * plugin does not know.
 */
export function manualCompactionDataOf(value: unknown): CompactionSummaryData | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  return compactionDataOf((value as Record<string, unknown>)['compaction'])
}

const FOOTER_ID = /^\[shadow (\S+)\] /

/**
 * The compaction behind a manual `/compact` row. dsh keys that node by the command, and its
 * payload names no compaction id: our footer names it, or, while the summary is not loaded, the
 * projection's checkpoint at the same replacement seq. Undefined when neither says: not ours.
 */
export function manualCompactionNode(data: CompactionSummaryData, view: ShadowContextView | undefined): CompactionNode | undefined {
  // a loaded summary decides alone: another engine's carries no footer of ours
  const id = data.summary !== null
    ? data.summary.split('\n').map(line => FOOTER_ID.exec(line)?.[1]).findLast(found => found !== undefined)
    : view?.checkpoints.find(candidate => candidate.seq === data.seq && candidate.engine === ENGINE)?.id
  return id === undefined ? undefined : { id, data }
}

/** One entry of a slot as the registry's raw ledger lists it (rc.8 `StoredEntry`), priority ascending. */
export interface SlotEntry {
  readonly component: unknown
  readonly options: { readonly key?: string }
}

/**
 * The renderer a keyed cell would fall to without `own`: the first other entry for `key` in the
 * ledger's priority order. A keyed seat has no chain, so this is how our renderer hands a row it
 * does not own back to dsh's (or a later plugin's) with the very props it got.
 */
export function nextRenderer(entries: readonly SlotEntry[], key: string, own: unknown): unknown {
  return entries.find(entry => entry.options.key === key && entry.component !== own)?.component
}

/** The seq range our footer for checkpoint `id` states, if `summary` carries that footer. */
function footerSeqs(summary: string | null, id: string): { seqFrom: number; seqTo: number } | undefined {
  if (summary === null) return undefined
  const line = summary.split('\n').findLast(candidate => candidate.startsWith(`[shadow ${id}] `))
  if (line === undefined) return undefined
  // a digest's footer has `… · seqs a–b · …`, a mask stub's `[shadow id] seqs a–b · …`
  const seqs = /(?:\] | · )seqs (\d+)–(\d+) · /.exec(line)
  return seqs === null ? { seqFrom: 0, seqTo: 0 } : { seqFrom: Number(seqs[1]), seqTo: Number(seqs[2]) }
}

/**
 * Our checkpoint behind dsh's compaction node, or undefined when another engine made it. The
 * footer decides when dsh has the summary; otherwise the projection's list (our engine's entries).
 */
export function shadowCheckpointOf(node: CompactionNode, view: ShadowContextView | undefined): CheckpointData | undefined {
  const listed = view?.checkpoints.find(candidate => candidate.id === node.id && candidate.engine === ENGINE)
  const fromFooter = footerSeqs(node.data.summary, node.id)
  // a footer whose seqs cannot be read says only that the checkpoint is ours: the list's seqs win then
  const seqs = listed !== undefined && (fromFooter === undefined || (fromFooter.seqFrom === 0 && fromFooter.seqTo === 0))
    ? { seqFrom: listed.seqFrom, seqTo: listed.seqTo }
    : fromFooter
  if (seqs === undefined) return undefined
  return {
    checkpointId: node.id,
    seqFrom: seqs.seqFrom,
    seqTo: seqs.seqTo,
    messages: node.data.shadowedItemCount ?? listed?.messages ?? 0,
    tokens: node.data.shadowedTokenCount ?? listed?.shadowedTokens ?? 0,
    seq: node.data.seq,
    time: node.data.time,
  }
}

/** A locale lookup as the web app hands it to a seat registered with a locale namespace. */
export type Translate = (key: string, params?: Record<string, unknown>) => string

/**
 * dsh's own words for the row, from the conversation locale namespace when the web app provides
 * it (so the row follows the UI language), else English.
 */
export function compactionWords(t: Translate | undefined, data: CompactionSummaryData): { title: string; facts: string } {
  const say = (key: string, english: string, params?: Record<string, unknown>): string => {
    if (t === undefined) return english
    const said = t(key, params)
    return typeof said === 'string' && said.length > 0 && said !== key ? said : english
  }
  const title = say('message.compaction', 'Context compacted')
  if (data.shadowedItemCount !== null && data.shadowedTokenCount !== null) {
    const items = data.shadowedItemCount
    const tokens = data.shadowedTokenCount
    return { title, facts: say('message.compaction.completed', `Compacted ${items} history items (~${tokens} tokens)`, { items, tokens }) }
  }
  return { title, facts: data.summary === null ? say('message.compaction.unavailable', 'Compaction summary unavailable') : say('message.compaction.expand', 'View compaction summary') }
}
