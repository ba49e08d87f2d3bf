/**
 * RecallResolver: answers the recall tools against the shadow store, for one session and the
 * history it can see (its own rows, its fork parents' below each fork point, and — only when the
 * config says so — the other sessions of its workspace). Validates every argument; a bad one is a
 * typed RecallError and nothing is read or written.
 */
import {
  isShadowStoreError,
  MAX_QUERY_CHARS,
  parseShadowId,
  parseTimeRange,
  type ScopeOptions,
  type SearchHit,
  type ShadowMessage,
  type ShadowRole,
  type ShadowStoreApi,
} from '@dsh-shadow/store'
import { describeWindow, TimeExpressionResolver } from '@dsh-shadow/store'
import { cutPrefix } from '../text.ts'
import { rowsAt, SEQ_SPAN_MAX, windowPage, windowSlice } from './reads.ts'
import { decodeCursor, encodeCursor, formatTime, RecallError, renderSearch, renderTranscript, type TranscriptPage } from './format.ts'

export const SEARCH_TOOL = 'shadow_search'
export const READ_TOOL = 'shadow_read'

/**
 * What search leaves out by default: checkpoint summaries and index rollups (they restate the
 * originals), recall messages and the recall tools' own calls and results (copies), and system
 * prompt snapshots. The originals stay findable; a read by id or checkpoint still shows all.
 */
export const SEARCH_EXCLUDES = {
  excludeSourceKinds: ['plugin:compact', 'shadow-context', 'request/header'],
  excludeToolNames: [SEARCH_TOOL, READ_TOOL],
} as const

export const SEARCH_LIMIT_MAX = 20
export const READ_BUDGET_MIN = 200
export const READ_BUDGET_MAX = 8_000
const WINDOW_MAX = 20
/** Selector kinds a read pages through by position in a window (seq range, time window). */
const WINDOWED = new Set(['seq', 'time'])
const QUERY_MAX = Math.min(2_000, MAX_QUERY_CHARS)
/** The last instant a Date holds. */
const MAX_DATE_MS = 8.64e15

export interface SearchArgs {
  readonly query?: unknown
  readonly since?: unknown
  readonly until?: unknown
  readonly role?: unknown
  readonly tool?: unknown
  readonly checkpoint?: unknown
  readonly limit?: unknown
}

export interface ReadArgs {
  readonly checkpoint?: unknown
  readonly id?: unknown
  readonly before?: unknown
  readonly after?: unknown
  /** With id: start this many characters into the message (a hit's passage). */
  readonly at?: unknown
  readonly from_seq?: unknown
  readonly to_seq?: unknown
  readonly since?: unknown
  readonly until?: unknown
  readonly budget?: unknown
  readonly cursor?: unknown
}

export interface SearchOutcome {
  readonly text: string
  readonly shadowIds: string[]
  readonly checkpointIds: string[]
  readonly matched: number
  /** The ranked hits behind `text` (UIs render them themselves). */
  readonly hits: readonly SearchHit[]
}

export interface ReadOutcome {
  readonly text: string
  readonly shadowIds: string[]
  readonly checkpointIds: string[]
  readonly cursor: string | null
}

/** One page of the exact originals a read selects, for UIs: addressed by position, not by cursor. */
export interface ReadPage {
  readonly title: string
  /** Messages the selector covers in all. */
  readonly total: number
  readonly start: number
  readonly messages: ShadowMessage[]
}

export const PAGE_LIMIT_MAX = 100
/** Text a page carries before it stops early (one message always goes whole, however long). */
export const PAGE_CHARS_MAX = 1_000_000

export interface RecallScope {
  readonly sessionId: string
  /** Widen search to the session's workspace (config `scope: workspace`). */
  readonly workspace?: string
  /**
   * First seq of the turn that is asking. Its messages (the question itself among them) are never
   * hits: they cannot answer it, and the model already sees them.
   */
  readonly turnStartSeq?: number
  /** Minutes east of UTC for reading "yesterday" and "this morning" (default 0). */
  readonly offsetMinutes?: number
  /**
   * The store's redaction (when on). A query is searched as the store keeps text: a secret in it
   * can match nothing stored, and its words must not come back in the answer (the answer is stored).
   */
  readonly redact?: (text: string) => string
}

const ROLES = new Set<ShadowRole>(['user', 'assistant', 'tool', 'system'])

function text(value: unknown, label: string, max: number): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw new RecallError('INVALID_INPUT', `${label} must be a string`)
  if (value.includes('\u0000')) throw new RecallError('INVALID_INPUT', `${label} must not contain NUL`)
  if (value.length > max) throw new RecallError('INVALID_INPUT', `${label} is longer than ${max} characters`)
  return value
}

function integer(value: unknown, label: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new RecallError('INVALID_INPUT', `${label} must be an integer`)
  if (value < min || value > max) throw new RecallError('INVALID_INPUT', `${label} must be between ${min} and ${max}`)
  return value
}

function optionalInteger(value: unknown, label: string, min: number, max: number): number | undefined {
  return value === undefined || value === null ? undefined : integer(value, label, min, max, 0)
}

/** A window selector with the seq its next page starts at (a cursor's; checked like every field). */
function withNext(selector: Record<string, string | number>, next: string | number | undefined): Record<string, string | number> {
  if (next === undefined) return selector
  return { ...selector, next: integer(next, 'cursor position', 0, Number.MAX_SAFE_INTEGER, 0) }
}

/** Re-raise store failures as recall errors with the same meaning. */
async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof RecallError) throw error
    if (isShadowStoreError(error)) {
      const code = error.code === 'INVALID_INPUT' || error.code === 'NOT_FOUND' || error.code === 'FORBIDDEN' ? error.code : 'UNAVAILABLE'
      throw new RecallError(code, error.message)
    }
    throw new RecallError('UNAVAILABLE', `shadow store: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** Share of a read's budget a tool result's call may take (its arguments, shown first). */
const CALL_PREFACE_SHARE = 0.5

/** The call of a tool result, bounded: what it was asked to do (a write's content, a command). */
function callPreface(call: ShadowMessage, budget: number): string {
  const room = Math.floor(budget * 4 * CALL_PREFACE_SHARE)
  const cut = cutPrefix(call.text, room)
  const shown = call.text.length > room ? `${cut}\n[… ${call.text.length - cut.length} more characters: shadow_read {"id":"${call.shadowId}"}]` : call.text
  return `── called in ${call.shadowId} · ${formatTime(call.time)} UTC · assistant\n${shown}`
}

export class RecallResolver {
  readonly store: ShadowStoreApi
  readonly scope: RecallScope
  private readonly now: () => number

  constructor(store: ShadowStoreApi, scope: RecallScope, now: () => number = Date.now) {
    this.store = store
    this.scope = scope
    this.now = now
  }

  private get scopeOptions(): ScopeOptions {
    return { sessionId: this.scope.sessionId, ...(this.scope.workspace === undefined ? {} : { workspace: this.scope.workspace }) }
  }

  /**
   * Per session, the seq below which the scope sees its rows (null: outside it). Asked of the
   * store for these sessions only: a workspace scope of 50k sessions is never listed for a check.
   */
  private async bounds(sessionIds: readonly string[]): Promise<Array<number | null>> {
    const { empty, bounds } = await this.store.scopeBounds(this.scopeOptions, sessionIds)
    if (empty) throw new RecallError('NOT_FOUND', 'this session has nothing in the shadow store yet')
    return bounds
  }

  /** A row the scope may see, or NOT_FOUND (never a hint that it exists elsewhere). */
  private async visible(row: ShadowMessage | undefined, label: string): Promise<ShadowMessage> {
    if (row !== undefined) {
      const [bound] = await this.bounds([row.sessionId])
      if (bound !== null && bound !== undefined && row.seq < bound) return row
    }
    throw new RecallError('NOT_FOUND', `no message ${label} in this session's history`)
  }

  private async checkpointSeqs(id: string): Promise<{ checkpointId: string; sessionId: string; seqs: number[]; expired: string }> {
    const checkpoint = await this.store.checkpoint(id)
    const [bound] = await this.bounds(checkpoint === undefined ? [] : [checkpoint.sessionId])
    // an ancestor's checkpoint made after the fork is not part of this history
    if (checkpoint === undefined || bound === null || bound === undefined || !((checkpoint.replaceSeq ?? -1) < bound)) {
      throw new RecallError('NOT_FOUND', `no checkpoint ${JSON.stringify(id.slice(0, 80))} in this session's history`)
    }
    const expired = checkpoint.expiredAt === null ? '' : ` (retention removed ${checkpoint.expiredRows} of its originals on ${formatTime(checkpoint.expiredAt)} UTC)`
    return { checkpointId: checkpoint.checkpointId, sessionId: checkpoint.sessionId, seqs: [...checkpoint.shadowedSeqs], expired }
  }

  async search(args: SearchArgs, scopeLabel = 'this session'): Promise<SearchOutcome> {
    return guarded(async () => {
      const query = text(args.query, 'query', QUERY_MAX)
      if (query === undefined || query.trim().length === 0) throw new RecallError('INVALID_INPUT', 'query must be a non-empty string')
      const range = (() => {
        try {
          return parseTimeRange(args.since, args.until, this.now())
        } catch (error) {
          throw new RecallError('INVALID_INPUT', error instanceof Error ? error.message : String(error))
        }
      })()
      const role = text(args.role, 'role', 20)
      if (role !== undefined && !ROLES.has(role as ShadowRole)) throw new RecallError('INVALID_INPUT', 'role must be user, assistant, tool or system')
      const tool = text(args.tool, 'tool', 200)
      const checkpoint = text(args.checkpoint, 'checkpoint', 200)
      if (checkpoint !== undefined) await this.checkpointSeqs(checkpoint)
      const limit = integer(args.limit, 'limit', 1, SEARCH_LIMIT_MAX, 8)
      // Time words of the question become a window, unless since/until say otherwise.
      const asked = await this.timeWords(query, range)
      const { window, timeNote } = asked
      const words = this.scope.redact === undefined ? asked.words : this.scope.redact(asked.words).replace(/\[REDACTED:[^\]]*\]/g, ' ')
      if (!/[\p{L}\p{N}]/u.test(asked.words)) throw new RecallError('INVALID_INPUT', 'query has no word or number to search for (punctuation alone matches nothing)')
      if (!/[\p{L}\p{N}]/u.test(words)) throw new RecallError('INVALID_INPUT', 'the query holds only text the store redacts (secrets are not kept, so they cannot be searched); search for the words around it')
      const search = (timed: boolean) => this.store.search(words, {
        ...this.scopeOptions,
        ...(this.scope.turnStartSeq === undefined ? {} : { beforeSeq: this.scope.turnStartSeq }),
        ...SEARCH_EXCLUDES,
        limit,
        ...(timed && window !== undefined ? { timeFrom: window.from, timeTo: window.to } : range),
        ...(role === undefined ? {} : { roles: [role as ShadowRole] }),
        ...(tool === undefined ? {} : { toolName: tool }),
        ...(checkpoint === undefined ? {} : { checkpointId: checkpoint }),
      })
      let result = await search(true)
      let note = timeNote
      if (window !== undefined && result.hits.length === 0) {
        // nothing in that window: say so, and show what the rest of the history has
        result = await search(false)
        note = `${timeNote}, where nothing matched; these hits are from any time`
      }
      const kept = result.hits
      const sessions = [...new Set(kept.map(hit => hit.message.sessionId))]
      const bounds = await this.bounds(sessions)
      const own = new Set(sessions.filter((_, index) => bounds[index] !== null))
      // what the model sees already goes last, marked; what only recall can show goes first
      const onSurface = new Set(kept.filter(hit => hit.message.elidedBy === null && own.has(hit.message.sessionId)).map(hit => hit.message.shadowId))
      const hits = [...kept.filter(hit => !onSurface.has(hit.message.shadowId)), ...kept.filter(hit => onSurface.has(hit.message.shadowId))]
      return {
        text: renderSearch({
          query,
          hits,
          coverage: result.coverage,
          scope: this.scope.workspace === undefined ? scopeLabel : 'this workspace',
          ...(note === undefined ? {} : { timeNote: note }),
          terms: result.terms,
          ...(result.history === undefined ? {} : { history: result.history }),
          onSurface,
        }),
        shadowIds: hits.map(hit => hit.message.shadowId),
        checkpointIds: [...new Set(hits.flatMap(hit => (hit.message.elidedBy === null ? [] : [hit.message.elidedBy])))],
        matched: result.coverage.matched,
        hits,
      }
    })
  }

  /** The query without its time words, and the window they name (when since/until do not say otherwise). */
  private async timeWords(query: string, range: { timeFrom?: number; timeTo?: number }): Promise<{ words: string; window?: { from: number; to: number }; timeNote?: string }> {
    const session = await this.store.session(this.scope.sessionId)
    const resolver = new TimeExpressionResolver({
      now: this.now(),
      ...(session?.firstTime === null || session?.firstTime === undefined ? {} : { sessionStart: session.firstTime }),
      ...(this.scope.offsetMinutes === undefined ? {} : { offsetMinutes: this.scope.offsetMinutes }),
    })
    const resolved = resolver.resolve(query)
    if (resolved.window === undefined) return { words: query }
    // a question that is only time words ("what happened yesterday") still searches its words
    const words = /[\p{L}\p{N}]{2,}/u.test(resolved.rest) ? resolved.rest : query
    const shown = `"${resolved.window.phrase}" as ${describeWindow(resolved.window, this.scope.offsetMinutes ?? 0)}`
    if (range.timeFrom !== undefined || range.timeTo !== undefined) return { words, timeNote: `since/until as given (not ${shown})` }
    return { words, window: resolved.window, timeNote: shown }
  }

  async read(args: ReadArgs): Promise<ReadOutcome> {
    return guarded(async () => {
      const budget = integer(args.budget, 'budget', READ_BUDGET_MIN, READ_BUDGET_MAX, 2_000)
      const cursorText = text(args.cursor, 'cursor', 4_000)
      let selector: Record<string, string | number>
      let index = 0
      let offset = 0
      if (cursorText !== undefined) {
        const others = [args.checkpoint, args.id, args.from_seq, args.to_seq, args.since, args.until].filter(value => value !== undefined && value !== null)
        if (others.length > 0) throw new RecallError('INVALID_INPUT', 'a cursor continues an earlier read; give it alone (with an optional budget)')
        const cursor = decodeCursor(cursorText)
        selector = this.reissued(cursor.selector)
        index = cursor.index
        offset = cursor.offset
      } else {
        selector = this.selector(args)
      }
      // a seq range or time window is read from where this page starts, only as far as its budget reaches
      const windowed = WINDOWED.has(String(selector['kind']))
      const { messages, title, start, call, base, total }: Awaited<ReturnType<RecallResolver['select']>> & { base: number; total?: number } = windowed
        ? await windowPage(this.store, this.scope.sessionId, selector, index, budget * 4)
        : { ...(await this.select(selector, cursorText === undefined)), base: 0 }
      if (cursorText === undefined && start !== undefined) {
        index = start.index
        offset = start.offset
      }
      const count = total ?? messages.length
      if (index > count) throw new RecallError('INVALID_INPUT', 'cursor is past the end of this read')
      // positions in `messages` (which starts at message `base` of the read)
      const at = index - base
      // a tool result read by id: its call's arguments first, unless the read shows the call anyway
      const preface = cursorText === undefined && call !== undefined && !messages.slice(at).some(message => message.seq === call.seq) ? callPreface(call, budget) : undefined
      const compose = (pageBudget: number, floor?: { chars: number; take: number }): { text: string; page: TranscriptPage; next: string | null; last: number } => {
        const rendered = renderTranscript(messages, at, offset, pageBudget, floor)
        // a window page that showed every row it read, with more in the window, goes on after them
        const page = rendered.nextIndex === null && messages.length > 0 && base + messages.length < count ? { ...rendered, nextIndex: messages.length, nextOffset: 0 } : rendered
        const resume = page.nextIndex === null ? undefined : messages[page.nextIndex]?.seq ?? (messages.at(-1)?.seq ?? 0) + 1
        const next = page.nextIndex === null ? null : encodeCursor({ selector: windowed && resume !== undefined ? { ...selector, next: resume } : selector, index: base + page.nextIndex, offset: page.nextOffset })
        const last = page.nextIndex ?? messages.length
        const span = count === 0 ? 'nothing' : `messages ${index + 1}–${Math.max(index + 1, base + last + (page.nextOffset > 0 ? 1 : 0))} of ${count}`
        const lines = [`shadow_read ${title}: ${span} (budget ${budget} tokens)`]
        if (preface !== undefined) lines.push(preface)
        if (page.text.length > 0) lines.push(page.text)
        lines.push(next === null ? '[end]' : `More: shadow_read {"cursor":"${next}"}`)
        return { text: lines.join('\n'), page, next, last }
      }
      let pageBudget = preface === undefined ? budget : Math.max(READ_BUDGET_MIN, budget - Math.ceil(preface.length / 4))
      let composed = compose(pageBudget)
      // the title, the cursor line and a cut notice come on top of the page: take what they cost off it
      // (a read at budget 200 came to 257 tokens). Their length barely moves with the page, so a few tries do.
      for (let attempt = 0; attempt < 3 && Math.ceil(composed.text.length / 4) > budget; attempt += 1) {
        pageBudget = Math.max(1, Math.floor((Math.min(pageBudget * 4, composed.page.text.length) - (composed.text.length - budget * 4)) / 4))
        composed = compose(pageBudget, { chars: 0, take: 2 })
      }
      const { page, next, last } = composed
      const shown = messages.slice(at, last + (page.nextOffset > 0 ? 1 : 0))
      return {
        text: composed.text,
        shadowIds: shown.map(message => message.shadowId),
        checkpointIds: [...new Set(shown.flatMap(message => (message.elidedBy === null ? [] : [message.elidedBy])))],
        cursor: next,
      }
    })
  }

  /**
   * The same selectors, scope and errors as `read`, but whole messages by position (`start`,
   * `limit`), so a UI can page through the originals and show them verbatim.
   */
  async page(args: ReadArgs, start?: unknown, limit?: unknown): Promise<ReadPage> {
    return guarded(async () => {
      const from = integer(start, 'start', 0, Number.MAX_SAFE_INTEGER, 0)
      const size = integer(limit, 'limit', 1, PAGE_LIMIT_MAX, 20)
      if (args.cursor !== undefined && args.cursor !== null) throw new RecallError('INVALID_INPUT', 'a page is addressed by start and limit, not by cursor')
      const selector = this.selector(args)
      // a seq range or time window: only the page's own rows are read (reads.ts)
      const { messages, title, total, base } = WINDOWED.has(String(selector['kind']))
        ? { ...(await windowSlice(this.store, this.scope.sessionId, selector, from, size)), base: from }
        : { ...(await this.select(selector)), total: undefined, base: 0 }
      const count = total ?? messages.length
      if (from > count) throw new RecallError('INVALID_INPUT', `start ${from} is past the end (${count} messages)`)
      // whole messages, but not a hundred 5 MB tool outputs in one reply: the page ends where its text passes the cap
      const shown: ShadowMessage[] = []
      let chars = 0
      for (const message of messages.slice(from - base, from - base + size)) {
        if (shown.length > 0 && chars + message.text.length > PAGE_CHARS_MAX) break
        shown.push(message)
        chars += message.text.length
      }
      return { title, total: count, start: from, messages: shown }
    })
  }

  /** Exactly one way to say what to read. */
  private selector(args: ReadArgs): Record<string, string | number> {
    const checkpoint = text(args.checkpoint, 'checkpoint', 200)
    const id = text(args.id, 'id', 64)
    const fromSeq = optionalInteger(args.from_seq, 'from_seq', 0, Number.MAX_SAFE_INTEGER)
    const toSeq = optionalInteger(args.to_seq, 'to_seq', 0, Number.MAX_SAFE_INTEGER)
    const since = text(args.since, 'since', 100)
    const until = text(args.until, 'until', 100)
    if (id === undefined && args.at !== undefined && args.at !== null) throw new RecallError('INVALID_INPUT', 'at goes with id')
    const kinds = [checkpoint !== undefined, id !== undefined, fromSeq !== undefined || toSeq !== undefined, since !== undefined || until !== undefined].filter(Boolean).length
    if (kinds !== 1) throw new RecallError('INVALID_INPUT', 'give exactly one of: checkpoint, id (with before/after), from_seq+to_seq, since/until, or cursor')
    if (checkpoint !== undefined) return { kind: 'checkpoint', checkpoint }
    if (id !== undefined) {
      try {
        parseShadowId(id)
      } catch (error) {
        throw new RecallError('INVALID_INPUT', error instanceof Error ? error.message : String(error))
      }
      const at = optionalInteger(args.at, 'at', 0, Number.MAX_SAFE_INTEGER)
      // at a passage: start there (no earlier neighbours), so the budget goes to the passage first
      if (at !== undefined) return { kind: 'id', id, before: integer(args.before, 'before', 0, WINDOW_MAX, 0), after: integer(args.after, 'after', 0, WINDOW_MAX, 2), at }
      return { kind: 'id', id, before: integer(args.before, 'before', 0, WINDOW_MAX, 2), after: integer(args.after, 'after', 0, WINDOW_MAX, 2) }
    }
    if (fromSeq !== undefined || toSeq !== undefined) {
      if (fromSeq === undefined || toSeq === undefined) throw new RecallError('INVALID_INPUT', 'from_seq and to_seq go together')
      if (fromSeq > toSeq) throw new RecallError('INVALID_INPUT', `seq range is inverted: ${fromSeq} > ${toSeq}`)
      if (toSeq - fromSeq > SEQ_SPAN_MAX) throw new RecallError('INVALID_INPUT', `seq range is wider than ${SEQ_SPAN_MAX}`)
      return { kind: 'seq', from: fromSeq, to: toSeq }
    }
    let range: { timeFrom?: number; timeTo?: number }
    try {
      range = parseTimeRange(since, until, this.now())
    } catch (error) {
      throw new RecallError('INVALID_INPUT', error instanceof Error ? error.message : String(error))
    }
    // Relative times resolve once, so a cursor keeps reading the same window.
    return { kind: 'time', from: range.timeFrom ?? 0, to: range.timeTo ?? this.now() }
  }

  /**
   * A cursor's selector held to the bounds of a fresh one: the model can edit a cursor, and an
   * edited window (`before: 100000`, a seq span of a billion) must not buy a read no argument can.
   */
  private reissued(selector: Record<string, string | number>): Record<string, string | number> {
    const given = (key: string): string | number | undefined => selector[key]
    switch (given('kind')) {
      case 'checkpoint':
        return this.selector({ checkpoint: given('checkpoint') })
      case 'id':
        return this.selector({ id: given('id'), before: given('before'), after: given('after'), at: given('at') })
      case 'seq':
        return withNext(this.selector({ from_seq: given('from'), to_seq: given('to') }), given('next'))
      case 'time': {
        const from = integer(given('from'), 'cursor time', 0, MAX_DATE_MS, 0)
        const to = integer(given('to'), 'cursor time', 0, MAX_DATE_MS, 0)
        if (from > to) throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
        return withNext({ kind: 'time', from, to }, given('next'))
      }
      default:
        throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
    }
  }

  /** `withCall`: also the call behind a tool result read by id (only a read's first page shows it). */
  private async select(selector: Record<string, string | number>, withCall = false): Promise<{ messages: ShadowMessage[]; title: string; start?: { index: number; offset: number }; call?: ShadowMessage }> {
    switch (selector['kind']) {
      case 'checkpoint': {
        const { checkpointId, sessionId, seqs, expired } = await this.checkpointSeqs(String(selector['checkpoint']))
        // its seqs are its own session's: a workspace sibling's checkpoint reads that sibling's history
        const own = await this.store.lineage(this.scope.sessionId)
        const history = own.some(segment => segment.sessionId === sessionId) ? own : await this.store.lineage(sessionId)
        return { messages: await rowsAt(this.store, history, seqs), title: `checkpoint ${checkpointId}${expired}` }
      }
      case 'id': {
        const id = String(selector['id'])
        const found = await this.visible(await this.store.message(id), id)
        const before = Number(selector['before'])
        const after = Number(selector['after'])
        // Neighbours come from one history: this session's lineage, or the other session's own.
        const lineage = await this.store.lineage(this.scope.sessionId)
        const own = lineage.some(segment => segment.sessionId === found.sessionId)
        // which checkpoint the row is in depends on who reads it (marks belong to who compacted)
        const center = own ? (await this.store.lookupInLineage(lineage, found.seq)) ?? found : found
        const history = { sessionId: own ? this.scope.sessionId : center.sessionId }
        const earlier = before === 0 || center.seq === 0 ? [] : await this.store.read(history, { toSeq: center.seq - 1, limit: before, descending: true })
        const later = after === 0 ? [] : await this.store.read(history, { fromSeq: center.seq + 1, limit: after })
        const at = selector['at'] === undefined ? undefined : Number(selector['at'])
        if (at !== undefined && at > center.text.length) throw new RecallError('INVALID_INPUT', `at ${at} is past the end of ${id} (${center.text.length} characters)`)
        const title = at === undefined ? `around ${id}` : `${id} from character ${at}`
        const call = withCall ? await this.store.callOf(center) : undefined
        return { messages: [...earlier.toReversed(), center, ...later], title, ...(at === undefined || at === 0 ? {} : { start: { index: earlier.length, offset: at } }), ...(call === undefined ? {} : { call }) }
      }
      default:
        throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
    }
  }
}
