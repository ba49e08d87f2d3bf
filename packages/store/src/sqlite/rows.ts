/** Row mapping between SQLite rows and store types, and the SQL of a message filter. */
import { CANDIDATE_READ_BYTES, candidateText, type MessageFilter, type WideScope } from '../backend.ts'
import { deepLineage, splitLineage } from '../filter.ts'
import { scopeHandle } from './lineage.ts'
import { messageOf, type Row } from '../rows.ts'
import type { LineageSegment, ShadowMessage } from '../types.ts'
import { unpackEventJson } from '../event-json.ts'

export type { Row }
export { toCheckpoint, toRecall, toSession } from '../rows.ts'

export const MESSAGE_COLUMNS = 'm.session_id, m.seq, m.shadow_id, m.event_type, m.role, m.source_kind, m.turn, m.step, m.tool_name, m.call_id, m.time, m.tokens, m.hash, m.event_json, m.text, m.elided_by, m.expired_at'
/**
 * The same without the event JSON and with the text cut, for search candidates (most are ranked
 * and dropped): the stored bytes are cut in SQL, the characters in toMessage (candidateText).
 * `substr` of an empty BLOB is NULL (an empty message, an expired row): read as an empty text, or
 * a search pairing a result with such a call failed with UNAVAILABLE.
 */
export const CANDIDATE_COLUMNS = `${MESSAGE_COLUMNS.replace('m.event_json', "'' AS event_json").replace('m.text', `coalesce(substr(m.text, 1, ${CANDIDATE_READ_BYTES}), X'') AS text`)}, 1 AS light_row`

export function toMessage(row: Row): ShadowMessage {
  const text = row['light_row'] === 1 ? candidateText(decodeText(row['text'])) : decodeText(row['text'])
  return messageOf(row, text, unpackEventJson(row['event_json'], text, row['time'] as number))
}

// Text is stored as a UTF-8 BLOB: a bound JS string is cut at its first NUL, a blob is not.
export function encodeText(text: string): Uint8Array {
  return Buffer.from(text, 'utf8')
}

export function decodeText(value: unknown): string {
  if (typeof value === 'string') return value
  const bytes = value as Uint8Array
  // a view on the same memory, not a copy
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
}

/** Sessions of a scope bound one variable each; more go as one JSON list (SQLite allows 32,766 variables a statement). */
const SESSION_PARAMS = 256

/**
 * `(a OR b OR ...)` as a balanced tree: SQLite parses a chain of ORs left-deep and refuses an
 * expression deeper than 1000, so a fork chain ~1000 deep failed every read and search of its
 * newest session ("Expression tree is too large"). Balanced, the depth is log2 of the terms; the
 * planner flattens ORs whatever their nesting.
 */
function balancedOr(terms: readonly string[]): string {
  if (terms.length === 1) return `(${terms[0]})`
  const half = Math.ceil(terms.length / 2)
  return `(${balancedOr(terms.slice(0, half))} OR ${balancedOr(terms.slice(half))})`
}

/**
 * A wide scope's rows (alias `m`): the named segments within their bounds, and every session of
 * the provenance they do not name, whole. A session's provenance is looked up on the row (one
 * primary-key seek), never as a list of the workspace's sessions built per statement.
 */
function wideSql(segments: readonly LineageSegment[], wide: WideScope, params: unknown[]): string {
  let named: string
  let unnamed: string
  if (deepLineage(segments)) {
    params.push(scopeHandle(segments))
    named = 'm.seq < shadow_below(?, m.session_id)'
    params.push(scopeHandle(segments))
    unnamed = 'shadow_below(?, m.session_id) IS NULL'
  } else {
    named = segments.length === 0 ? '0' : balancedOr(segments.map(segment => {
      params.push(segment.sessionId)
      if (!Number.isFinite(segment.belowSeq)) return 'm.session_id = ?'
      params.push(segment.belowSeq)
      return 'm.session_id = ? AND m.seq < ?'
    }))
    unnamed = segments.length === 0 ? '1' : `m.session_id NOT IN (${segments.map(segment => { params.push(segment.sessionId); return '?' }).join(', ')})`
  }
  if (wide.of === 'store') return `(${named} OR ${unnamed})`
  params.push(wide.workspace)
  return `(${named} OR (${unnamed} AND (SELECT s.workspace FROM sessions s WHERE s.session_id = m.session_id) = ?))`
}

/**
 * SQL for the filter part of a message query (always against alias `m`); `wholeStore` leaves the
 * sessions out (the scope is the whole store, or the rows are joined against it: `lineageFrom`).
 */
export function filterSql(filter: MessageFilter, params: unknown[], wholeStore = false): string {
  const clauses: string[] = []
  if (!wholeStore && filter.wide !== undefined) clauses.push(wideSql(filter.segments, filter.wide, params))
  else if (!wholeStore && deepLineage(filter.segments)) {
    // one bound lookup per row, whatever the chain's depth (lineage.ts)
    clauses.push('m.seq < shadow_below(?, m.session_id)')
    params.push(scopeHandle(filter.segments))
  } else if (!wholeStore) {
    const lineage: string[] = []
    const { open, bounded } = splitLineage(filter.segments)
    if (open.length === 1) { lineage.push('m.session_id = ?'); params.push(open[0]) }
    if (open.length > 1 && open.length <= SESSION_PARAMS) { lineage.push(`m.session_id IN (${open.map(() => '?').join(', ')})`); params.push(...open) }
    // a workspace of 33k sessions was 33k variables, past SQLite's limit (the search failed): one JSON list instead
    if (open.length > SESSION_PARAMS) { lineage.push('m.session_id IN (SELECT value FROM json_each(?))'); params.push(JSON.stringify(open)) }
    for (const segment of bounded) {
      params.push(segment.sessionId, segment.belowSeq)
      lineage.push('(m.session_id = ? AND m.seq < ?)')
    }
    clauses.push(lineage.length === 0 ? '0' : balancedOr(lineage))
  }
  if (filter.fromSeq !== undefined) { clauses.push('m.seq >= ?'); params.push(filter.fromSeq) }
  if (filter.toSeq !== undefined) { clauses.push('m.seq <= ?'); params.push(filter.toSeq) }
  if (filter.timeFrom !== undefined) { clauses.push('m.time >= ?'); params.push(filter.timeFrom) }
  if (filter.timeTo !== undefined) { clauses.push('m.time <= ?'); params.push(filter.timeTo) }
  if (filter.roles !== undefined && filter.roles.length > 0) {
    clauses.push(`m.role IN (${filter.roles.map(() => '?').join(', ')})`)
    params.push(...filter.roles)
  }
  if (filter.toolName !== undefined) {
    // tool_name holds one name for a result, or space-separated names for an assistant's calls
    // (instr, not LIKE: SQLite's LIKE folds ASCII case, so 'Shell' matched shell here and nowhere else)
    clauses.push("(m.tool_name = ? OR instr(' ' || m.tool_name || ' ', ?) > 0)")
    params.push(filter.toolName, ` ${filter.toolName} `)
  }
  // the checkpoint's originals within the scope's history: a fork's checkpoint also covers rows it
  // inherited, which carry only their owner's marks (checkpoint marks belong to who compacted)
  // (`+`: joined against a deep lineage, a seek per session and seq was 5M seeks for a checkpoint
  // of 1,000 at 5,000 deep; each session's range is read instead)
  if (filter.elidedBy !== undefined) { clauses.push(`${wholeStore ? '+' : ''}m.seq IN (SELECT value FROM json_each((SELECT shadowed_seqs FROM checkpoints WHERE checkpoint_id = ?)))`); params.push(filter.elidedBy) }
  if (filter.excludeSourceKinds !== undefined && filter.excludeSourceKinds.length > 0) {
    clauses.push(`m.source_kind NOT IN (${filter.excludeSourceKinds.map(() => '?').join(', ')})`)
    params.push(...filter.excludeSourceKinds)
  }
  if (filter.excludeToolNames !== undefined && filter.excludeToolNames.length > 0) {
    clauses.push(`coalesce(m.tool_name, '') NOT IN (${filter.excludeToolNames.map(() => '?').join(', ')})`)
    params.push(...filter.excludeToolNames)
  }
  return clauses.length === 0 ? '1' : clauses.join(' AND ')
}
