/** Row mapping and the filter clause of the PostgreSQL backend. */
import { isAscii } from 'node:buffer'
import { CANDIDATE_READ_BYTES, CANDIDATE_TEXT_CHARS, candidateText, type MessageFilter, type WideScope } from '../backend.ts'
import { deepLineage, lineageBounds, oncePerList, splitLineage } from '../filter.ts'
import type { LineageSegment } from '../types.ts'
import { messageOf, type Row } from '../rows.ts'
import { packEventJson, unpackEventJson } from '../event-json.ts'
import type { ShadowMessage } from '../types.ts'

export type { Row }
export { toCheckpoint, toRecall, toSession } from '../rows.ts'

const MESSAGE_FIELDS = 'm.session_id, m.seq, m.shadow_id, m.event_type, m.role, m.source_kind, m.turn, m.step, m.tool_name, m.call_id, m.time, m.tokens, m.hash, m.text, m.elided_by, m.expired_at'
export const MESSAGE_COLUMNS = `${MESSAGE_FIELDS}, m.event_json`
/**
 * Text bytes a light row reads first: CANDIDATE_TEXT_CHARS characters when they are ASCII. A row
 * whose first bytes are not, and that is longer, is read again up to CANDIDATE_READ_BYTES
 * (`completeLight`). Reading CANDIDATE_READ_BYTES at once sent 1 MB (2 MB of hex) of every long
 * candidate: 60 candidates of 2M characters took a search 2.2-4.3 s, 1.4 s of it that read
 * (adversarial hunt, 2026-12-06).
 */
const LIGHT_FIRST_BYTES = CANDIDATE_TEXT_CHARS
/**
 * The same without the event JSON and with the text cut, for search candidates (most are ranked
 * and dropped; a 50 MB output is not sent for them): bytes cut here, characters in toMessage.
 * Rows read with them go through `completeLight` before `toMessage`.
 */
export const CANDIDATE_COLUMNS = `${MESSAGE_FIELDS.replace('m.text', `substring(m.text FROM 1 FOR ${LIGHT_FIRST_BYTES}) AS text`)}, octet_length(m.text) AS text_bytes, m.id AS light_id, ''::bytea AS event_json, 1 AS light_row`

/** Whether a light row's first read may hold fewer than CANDIDATE_TEXT_CHARS of its text's characters. */
function cutShort(row: Row): boolean {
  if (row['light_row'] !== 1 || typeof row['text'] === 'string') return false
  const bytes = row['text'] as Uint8Array
  return bytes.length >= LIGHT_FIRST_BYTES && Number(row['text_bytes']) > bytes.length && !isAscii(bytes)
}

/** The bytes of a UTF-8 prefix up to its last whole character. */
function wholeCharacters(bytes: Uint8Array): Uint8Array {
  let start = bytes.length - 1
  while (start > 0 && (bytes[start]! & 0xc0) === 0x80) start -= 1
  const lead = bytes[start] ?? 0
  const width = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return bytes.length - start < width ? bytes.subarray(0, start) : bytes
}

/**
 * Light rows as `toMessage` takes them: a row whose first read is short of CANDIDATE_TEXT_CHARS
 * characters (not ASCII) gets the rest of its CANDIDATE_READ_BYTES read (only the bytes past the
 * first read: sending those again was a quarter of a long CJK candidate's transfer), one
 * statement for all of them. A row rewritten in between (another hash) keeps its first read, cut
 * at a whole character: a shorter prefix of the text it was read with.
 */
export async function completeLight<R extends Row>(read: (sql: string, params: unknown[]) => Promise<Row[]>, rows: R[]): Promise<R[]> {
  const short = rows.filter(cutShort)
  if (short.length === 0) return rows
  const again = await read(`SELECT m.id, m.hash, substring(m.text FROM ${LIGHT_FIRST_BYTES + 1} FOR ${CANDIDATE_READ_BYTES - LIGHT_FIRST_BYTES}) AS text FROM messages m WHERE m.id = ANY($1::bigint[])`, [[...new Set(short.map(row => row['light_id']))]])
  const byId = new Map(again.map(row => [String(row['id']), row]))
  for (const row of short) {
    const found = byId.get(String(row['light_id']))
    const first = row['text'] as Uint8Array
    // cutShort: the first read is LIGHT_FIRST_BYTES long exactly, so the rest starts where it ends;
    // a rest shorter than the first read's length said is another text (expiry empties a row and
    // keeps its hash): the first read then stands, cut at a whole character
    const rest = found === undefined || found['hash'] !== row['hash'] ? undefined : found['text'] as Uint8Array
    const expected = Math.min(Number(row['text_bytes']), CANDIDATE_READ_BYTES) - first.length
    ;(row as Row)['text'] = rest !== undefined && rest.length === expected ? Buffer.concat([first, rest]) : wholeCharacters(first)
  }
  return rows
}
/** Stored bytes of one message row (what retention budgets count). */
export const ROW_BYTES = 'octet_length(m.text) + coalesce(m.event_bytes, octet_length(m.event_json))'

function utf8(value: unknown): string {
  if (typeof value === 'string') return value
  return Buffer.from(value as Uint8Array).toString('utf8')
}

/**
 * Event JSON as stored: since schema v2 without its copy of the text (the SQLite backend's
 * `event-json.ts` format, told apart by its first byte; JSON itself starts with `{`), before that
 * (and when the text is not in it) the plain JSON.
 */
export function storedEventJson(json: string, text: string): Buffer {
  const packed = packEventJson(json, text)
  return typeof packed === 'string' ? Buffer.from(packed, 'utf8') : Buffer.from(packed)
}

export function eventJsonOf(value: unknown, text: string): string {
  if (typeof value === 'string') return value
  const bytes = value as Uint8Array
  // packed formats start with a control byte (1–3); stored JSON itself starts with `{`. Rows are
  // packed without the row time here, so the time stays in the JSON text.
  return bytes.length > 0 && bytes[0]! < 0x20 ? unpackEventJson(bytes, text) : utf8(bytes)
}

export function toMessage(row: Row): ShadowMessage {
  const text = row['light_row'] === 1 ? candidateText(utf8(row['text'])) : utf8(row['text'])
  return messageOf(row, text, eventJsonOf(row['event_json'], text))
}

/** Positional parameters: `param(value)` appends and returns its `$n`. */
export class Params {
  readonly values: unknown[] = []
  param(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }
}

/**
 * The scope is every session of the store, as of its newest row id then: no session filter, and
 * no row written since (a session begun since is not in the scope). `false`: filter on sessions.
 */
export type WholeStore = false | { readonly newest: number }

/**
 * SQL for the filter part of a message query (alias `m`); `wholeStore` leaves the sessions out
 * (`'joined'`: the rows are joined against them, `lineageFrom`).
 * `sessions: 'row'` checks the sessions on each row only, never through an index: for a words
 * query that holds the scope lexemes already, the session is then no index key the planner could
 * intersect (the grams index's session key is all of the session's rows: a 10k-entry bitmap,
 * ~0.45 ms, per list of a session search).
 */
export function filterSql(filter: MessageFilter, params: Params, wholeStore: WholeStore | 'joined' = false, sessions: 'index' | 'row' = 'index'): string {
  const clauses: string[] = []
  if (wholeStore === 'joined') {
    // the rows are joined against the lineage already (lineageFrom)
  } else if (wholeStore !== false) clauses.push(`m.id <= ${params.param(wholeStore.newest)}`)
  else if (filter.wide !== undefined) clauses.push(wideSql(filter.segments, filter.wide, params))
  else if (deepLineage(filter.segments)) {
    // one bound lookup per row (a jsonb object's keys are searched in halves), whatever the chain's
    // depth: one condition per segment checked each of them on every candidate row. The scalar
    // subquery is computed once per statement.
    const session = sessions === 'row' ? "(m.session_id || '')" : 'm.session_id'
    clauses.push(`m.seq < coalesce(((SELECT ${params.param(boundsObject(filter.segments))}::jsonb) ->> ${session})::bigint, -1)`)
  } else {
    const lineage: string[] = []
    const { open, bounded } = splitLineage(filter.segments)
    // `|| ''`: the same text, as an expression no index holds
    const session = sessions === 'row' ? "(m.session_id || '')" : 'm.session_id'
    if (open.length === 1) lineage.push(`${session} = ${params.param(open[0])}`)
    if (open.length > 1) lineage.push(`${session} = ANY(${params.param(open)}::text[])`)
    for (const segment of bounded) lineage.push(`(${session} = ${params.param(segment.sessionId)} AND m.seq < ${params.param(segment.belowSeq)})`)
    clauses.push(lineage.length === 0 ? 'false' : `(${lineage.join(' OR ')})`)
  }
  if (filter.fromSeq !== undefined) clauses.push(`m.seq >= ${params.param(filter.fromSeq)}`)
  if (filter.toSeq !== undefined) clauses.push(`m.seq <= ${params.param(filter.toSeq)}`)
  if (filter.timeFrom !== undefined) clauses.push(`m.time >= ${params.param(filter.timeFrom)}`)
  if (filter.timeTo !== undefined) clauses.push(`m.time <= ${params.param(filter.timeTo)}`)
  if (filter.roles !== undefined && filter.roles.length > 0) clauses.push(`m.role = ANY(${params.param(filter.roles)}::text[])`)
  if (filter.toolName !== undefined) {
    // tool_name holds one name for a result, or space-separated names for an assistant's calls
    const like = `% ${filter.toolName.replace(/[\\%_]/g, char => `\\${char}`)} %`
    clauses.push(`(m.tool_name = ${params.param(filter.toolName)} OR ' ' || m.tool_name || ' ' LIKE ${params.param(like)})`)
  }
  // the checkpoint's originals within the scope's history: a fork's checkpoint also covers rows it
  // inherited, which carry only their owner's marks (checkpoint marks belong to who compacted)
  if (filter.elidedBy !== undefined) clauses.push(`m.seq IN (SELECT value::bigint FROM jsonb_array_elements_text((SELECT shadowed_seqs FROM checkpoints WHERE checkpoint_id = ${params.param(filter.elidedBy)})::jsonb))`)
  if (filter.excludeSourceKinds !== undefined && filter.excludeSourceKinds.length > 0) clauses.push(`m.source_kind <> ALL(${params.param(filter.excludeSourceKinds)}::text[])`)
  if (filter.excludeToolNames !== undefined && filter.excludeToolNames.length > 0) clauses.push(`coalesce(m.tool_name, '') <> ALL(${params.param(filter.excludeToolNames)}::text[])`)
  return clauses.length === 0 ? 'true' : clauses.join(' AND ')
}

/** A deep lineage's bounds as one jsonb object parameter: `{session: bound}` (worked out once per list). */
function boundsObject(segments: readonly LineageSegment[]): string {
  return oncePerList(jsonObjects, segments, list => JSON.stringify(Object.fromEntries(lineageBounds(list).map(bound => [bound.sessionId, bound.below]))))
}

/**
 * A wide scope's rows (alias `m`): the named segments within their bounds, and every session of
 * the provenance they do not name, whole. A session's provenance is looked up on the row (a
 * primary-key probe per candidate row), never as a list of the workspace's sessions.
 */
function wideSql(segments: readonly LineageSegment[], wide: WideScope, params: Params): string {
  let named: string
  let unnamed: string
  if (deepLineage(segments)) {
    const bound = `((SELECT ${params.param(boundsObject(segments))}::jsonb) ->> m.session_id)::bigint`
    named = `m.seq < coalesce(${bound}, -1)`
    unnamed = `${bound} IS NULL`
  } else {
    const { open, bounded } = splitLineage(segments)
    const lineage: string[] = []
    if (open.length > 0) lineage.push(`m.session_id = ANY(${params.param(open)}::text[])`)
    for (const segment of bounded) lineage.push(`(m.session_id = ${params.param(segment.sessionId)} AND m.seq < ${params.param(segment.belowSeq)})`)
    named = lineage.length === 0 ? 'false' : `(${lineage.join(' OR ')})`
    unnamed = segments.length === 0 ? 'true' : `m.session_id <> ALL(${params.param(segments.map(segment => segment.sessionId))}::text[])`
  }
  if (wide.of === 'store') return `(${named} OR ${unnamed})`
  // a scalar subquery: one probe per row, where a join or IN would let the planner hash every session of the workspace
  return `(${named} OR (${unnamed} AND (SELECT s.workspace FROM sessions s WHERE s.session_id = m.session_id) = ${params.param(wide.workspace)}))`
}

/**
 * FROM clause of the rows of a deep lineage (filter.ts `deepLineage`, alias `m`): joined against
 * the bound list, so the (session_id, seq) index finds each session's rows in scope; the rest of
 * the filter is `filterSql(..., 'joined')`.
 */
export function lineageFrom(segments: readonly LineageSegment[], params: Params): string {
  const bounds = oncePerList(boundArrays, segments, list => {
    const all = lineageBounds(list)
    return { sessions: all.map(bound => bound.sessionId), below: all.map(bound => bound.below) }
  })
  return `unnest(${params.param(bounds.sessions)}::text[], ${params.param(bounds.below)}::bigint[]) AS lb(session_id, below)
    JOIN messages m ON m.session_id = lb.session_id AND m.seq < lb.below`
}

const jsonObjects = new WeakMap<readonly LineageSegment[], string>()
const boundArrays = new WeakMap<readonly LineageSegment[], { readonly sessions: string[]; readonly below: number[] }>()
