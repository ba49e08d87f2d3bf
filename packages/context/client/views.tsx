/**
 * What the browser shows: the checkpoint pointer node (collapsed; expands into the paginated
 * original transcript), the recall marker (links to the originals that came back) and the panel
 * above the composer (timeline, totals, search, last store failure). Everything is driven by the
 * `shadowContext` projection value: a session whose value says `active: false` shows nothing.
 *
 * Originals render in `<pre>` as plain text nodes, so what the page holds is the stored text
 * byte for byte (no Markdown, no trimming).
 */
import { useCallback, useEffect, useRef, useState, type FormEvent, type ReactElement } from 'react'
import type { CheckpointView, RecallView, ShadowContextView } from '../src/projection/unit.ts'
import type { OriginalView, ReaderScope, ReadReply, SearchReply } from '../src/web/reader.ts'
import type { ApiResult, ReadRequest, ShadowApi } from './api.ts'
import { ENGINE, type CheckpointData, type RecallData } from './definitions.ts'
import type { SessionKit } from './types.ts'

export const PROJECTION_KEY = 'shadowContext'
export const PAGE_SIZE = 20

/** The projection value, if this browser has one and it has the shape this plugin knows. */
export function shadowViewOf(value: unknown): ShadowContextView | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const view = value as Partial<ShadowContextView>
  return typeof view.active === 'boolean' && Array.isArray(view.checkpoints) && Array.isArray(view.recalls) ? value as ShadowContextView : undefined
}

const count = (value: number | undefined): string => (value ?? 0).toLocaleString('en-US')

/** What Shadow Context saved this session, in plain words (values from before these fields read as 0). */
export function savingsText(view: ShadowContextView): string {
  const saved = `${count(view.savedTokens)} tokens kept off the context by ${view.checkpointCount} checkpoints (which cost ${count(view.checkpointTokens)})`
  return `${saved} · ${view.recallCount} recalls brought back ${count(view.recalledMessages)} originals · ${view.captured} messages captured`
}

export function formatTime(time: number | null): string {
  return time === null ? '?' : `${new Date(time).toISOString().replace('T', ' ').slice(0, 19)}`
}

function speakerOf(message: Pick<OriginalView, 'role' | 'toolName' | 'sourceKind'>): string {
  if (message.sourceKind === 'request/header') return 'system prompt'
  if (message.role === 'tool') return `tool ${message.toolName ?? ''}`.trim()
  if (message.role === 'user' && message.sourceKind !== 'user') return `context (${message.sourceKind})`
  return message.role
}

type Load<T> = { readonly state: 'idle' } | { readonly state: 'loading' } | { readonly state: 'done'; readonly value: T } | { readonly state: 'error'; readonly code: string; readonly message: string }

/** One request at a time; a late answer for a superseded request is dropped. */
function useLoad<T>(): [Load<T>, (run: () => Promise<ApiResult<T>>) => void] {
  const [load, setLoad] = useState<Load<T>>({ state: 'idle' })
  const ticket = useRef(0)
  useEffect(() => () => {
    ticket.current += 1
  }, [])
  const start = useCallback((run: () => Promise<ApiResult<T>>) => {
    const mine = ++ticket.current
    setLoad({ state: 'loading' })
    void run().then(result => {
      if (mine !== ticket.current) return
      setLoad(result.ok ? { state: 'done', value: result.value } : { state: 'error', code: result.error.code, message: result.error.message })
    })
  }, [])
  return [load, start]
}

/** A search snippet: the store marks matched pieces with `**`; show them as marks. */
function Snippet({ text }: { text: string }): ReactElement {
  return <span className="dsc-snippet">{text.split('**').map((part, index) => (index % 2 === 1 ? <mark key={index}>{part}</mark> : part))}</span>
}

function Failure({ code, message }: { code: string; message: string }): ReactElement {
  return <div className="dsc-error" role="alert" data-shadow-error={code}>{code}: {message}</div>
}

export function Originals({ messages }: { messages: readonly OriginalView[] }): ReactElement {
  return (
    <ol className="dsc-originals">
      {messages.map(message => (
        <li key={`${message.sessionId}:${message.seq}`} className="dsc-original" data-shadow-id={message.shadowId}>
          <div className="dsc-meta">
            <span className="dsc-id">{message.shadowId}</span> · {formatTime(message.time)} UTC · {speakerOf(message)}
            {message.turn === null ? null : ` · turn ${message.turn}`}
          </div>
          {message.expiredAt === null
            ? <pre className="dsc-text" data-shadow-original={message.shadowId}>{message.text}</pre>
            : <div className="dsc-expired" data-shadow-expired={message.shadowId}>original removed by retention on {formatTime(message.expiredAt)} UTC; the dsh session log still holds it</div>}
        </li>
      ))}
    </ol>
  )
}

function Pager({ page, onPage }: { page: ReadReply; onPage: (start: number) => void }): ReactElement {
  const last = page.start + page.messages.length
  return (
    <div className="dsc-pager" data-shadow-pager="">
      <button type="button" disabled={page.start === 0} onClick={() => onPage(Math.max(0, page.start - PAGE_SIZE))} data-shadow-page="prev">‹ Previous</button>
      <span data-shadow-page-range="">messages {page.total === 0 ? 0 : page.start + 1}–{last} of {page.total}</span>
      <button type="button" disabled={last >= page.total} onClick={() => onPage(last)} data-shadow-page="next">Next ›</button>
    </div>
  )
}

function Transcript({ api, sessionId, request }: { api: ShadowApi; sessionId: string; request: ReadRequest }): ReactElement {
  const [load, start] = useLoad<ReadReply>()
  const open = useCallback((from: number) => {
    start(() => api.read(sessionId, 'checkpoint' in request ? { ...request, start: from, limit: PAGE_SIZE } : request))
  }, [api, sessionId, request, start])
  useEffect(() => {
    open(0)
  }, [open])
  if (load.state === 'error') return <Failure code={load.code} message={load.message} />
  if (load.state !== 'done') return <div className="dsc-muted" data-shadow-loading="">Loading the originals…</div>
  return (
    <div className="dsc-transcript" data-shadow-transcript="">
      <Originals messages={load.value.messages} />
      {'checkpoint' in request && (load.value.start > 0 || load.value.start + load.value.messages.length < load.value.total) ? <Pager page={load.value} onPage={open} /> : null}
    </div>
  )
}

function shadowRange(checkpoint: CheckpointView | undefined, data: CheckpointData): string {
  if (checkpoint !== undefined && checkpoint.shadowFrom !== null && checkpoint.shadowTo !== null) return `${checkpoint.shadowFrom} … ${checkpoint.shadowTo}`
  const from = checkpoint?.seqFrom ?? data.seqFrom
  const to = checkpoint?.seqTo ?? data.seqTo
  return `seqs ${from}–${to}`
}

export interface CheckpointRowProps {
  readonly api: ShadowApi
  readonly sessionId: string
  readonly view: ShadowContextView | undefined
  readonly data: CheckpointData
  /** dsh's own title for the row ("Context compacted") when this row stands in for dsh's. */
  readonly title?: string
  /** The checkpoint's text as the model sees it, when known (shown under the originals). */
  readonly digest?: string | null
}

/** The pointer of one checkpoint, collapsed; expanding reads the originals page by page. */
export function CheckpointRow({ api, sessionId, view, data, title, digest = null }: CheckpointRowProps): ReactElement {
  const [expanded, setExpanded] = useState(false)
  const checkpoint = view?.checkpoints.find(candidate => candidate.id === data.checkpointId)
  const messages = checkpoint?.messages ?? data.messages
  const time = checkpoint === undefined || checkpoint.timeFrom === null ? `checkpoint at ${formatTime(data.time)} UTC` : `${formatTime(checkpoint.timeFrom)} → ${formatTime(checkpoint.timeTo)} UTC`
  return (
    <div className="dsc-node dsc-checkpoint" data-shadow-checkpoint={data.checkpointId} data-shadow-expanded={expanded ? 'true' : 'false'} data-shadow-compaction={title === undefined ? undefined : ENGINE}>
      <button type="button" className="dsc-row" aria-expanded={expanded} onClick={() => setExpanded(!expanded)} data-shadow-toggle="">
        <span className="dsc-glyph" aria-hidden="true">{expanded ? '▾' : '▸'}</span>
        {title === undefined ? null : <span className="dsc-title" data-shadow-compaction-title="">{title} ·</span>}
        <span className="dsc-title">Shadow Context checkpoint <b>{data.checkpointId}</b></span>
        <span className="dsc-facts" data-shadow-pointer="">
          {messages} messages, {count(checkpoint?.shadowedTokens ?? data.tokens)} tokens off the context{checkpoint === undefined ? '' : ` → ${count(checkpoint.digestTokens)} in their place`} · {shadowRange(checkpoint, data)} · {time}
        </span>
      </button>
      {expanded ? <Transcript api={api} sessionId={sessionId} request={{ checkpoint: data.checkpointId }} /> : null}
      {expanded && digest !== null ? (
        <details className="dsc-digest">
          <summary className="dsc-muted">What the model sees in their place</summary>
          <pre className="dsc-text" data-shadow-digest="">{digest}</pre>
        </details>
      ) : null}
    </div>
  )
}

function requestLabel(data: RecallData, recall: RecallView | undefined): string {
  if (recall !== undefined && recall.query !== null) return JSON.stringify(recall.query)
  if (data.request === null) return ''
  try {
    const args = JSON.parse(data.request) as Record<string, unknown>
    const value = args['query'] ?? args['checkpoint'] ?? args['id'] ?? args['since']
    return typeof value === 'string' ? JSON.stringify(value) : data.request
  } catch {
    return data.request
  }
}

/** Marker where the model searched or read the shadow; each id it got back opens the original. */
export function createRecallNode(api: ShadowApi) {
  return function ShadowRecallNode({ node, sessionId, useProjection }: SessionKit & { node: { data: RecallData } }): ReactElement | null {
    const view = shadowViewOf(useProjection(PROJECTION_KEY))
    const [open, setOpen] = useState<string | null>(null)
    const data = node.data
    if (view !== undefined && !view.active) return null
    const recall = data.seq === null ? undefined : view?.recalls.find(candidate => candidate.seq === data.seq)
    const ids = recall?.ids ?? data.ids
    const ok = recall?.ok ?? data.ok
    const verb = data.kind === 'search' ? 'searched' : data.kind === 'read' ? 'read' : 'recalled'
    const status = ok === null ? 'running…' : ok ? `${ids.length} original${ids.length === 1 ? '' : 's'} came back` : 'failed'
    // the same search or read right after itself: one short line instead of a second full marker
    const index = recall === undefined ? -1 : view!.recalls.indexOf(recall)
    const previous = index > 0 ? view!.recalls[index - 1] : undefined
    const repeat = recall !== undefined && previous !== undefined && previous.kind === recall.kind && previous.query === recall.query && previous.ok && recall.ok
    if (repeat) {
      return (
        <div className="dsc-node dsc-recall dsc-repeat" data-shadow-recall={data.kind} data-shadow-recall-seq={data.seq ?? ''} data-shadow-recall-repeat="">
          <div className="dsc-row dsc-static">
            <span className="dsc-glyph" aria-hidden="true">↺</span>
            <span className="dsc-muted">the same {data.kind} again · {status}</span>
          </div>
        </div>
      )
    }
    const snippet = recall?.snippet ?? null
    return (
      <div className="dsc-node dsc-recall" data-shadow-recall={data.kind} data-shadow-recall-seq={data.seq ?? ''}>
        <div className="dsc-row dsc-static">
          <span className="dsc-glyph" aria-hidden="true">↺</span>
          <span className="dsc-title">Shadow Context {verb} {requestLabel(data, recall)}</span>
          <span className="dsc-facts">{status}</span>
        </div>
        {snippet === null ? null : <div className="dsc-muted dsc-line" data-shadow-recall-snippet="">{snippet}</div>}
        {ids.length > 0 ? (
          <div className="dsc-chips">
            {ids.slice(0, 24).map(id => (
              <button key={id} type="button" className={id === open ? 'dsc-chip dsc-on' : 'dsc-chip'} onClick={() => setOpen(id === open ? null : id)} data-shadow-link={id}>{id}</button>
            ))}
            {ids.length > 24 ? <span className="dsc-muted">+{ids.length - 24} more</span> : null}
          </div>
        ) : null}
        {open === null ? null : <Transcript api={api} sessionId={sessionId} request={{ id: open, before: 0, after: 0 }} />}
      </div>
    )
  }
}

type TimelineItem = { kind: 'checkpoint'; seq: number; item: CheckpointView } | { kind: 'recall'; seq: number; item: RecallView }

/** A session id as people tell sessions apart: its last eight characters. */
const shortSession = (sessionId: string): string => sessionId.slice(-8)

function SearchBox({ api, sessionId }: { api: ShadowApi; sessionId: string }): ReactElement {
  const [query, setQuery] = useState('')
  const [scope, setScope] = useState<ReaderScope>('session')
  const [asked, setAsked] = useState<{ query: string; scope: ReaderScope }>({ query: '', scope: 'session' })
  const [load, start] = useLoad<SearchReply>()
  const [open, setOpen] = useState<string | null>(null)
  const submit = (event: FormEvent): void => {
    event.preventDefault()
    const trimmed = query.trim()
    if (trimmed.length === 0) return
    setAsked({ query: trimmed, scope })
    setOpen(null)
    start(() => api.search(sessionId, { query: trimmed, limit: 10, scope }))
  }
  return (
    <div className="dsc-search">
      <form onSubmit={submit} className="dsc-search-form">
        <input type="search" value={query} onChange={event => setQuery(event.target.value)} placeholder="Search the full history (English, 中文, identifiers, paths)" aria-label="Search Shadow Context" data-shadow-search-input="" />
        <select value={scope} onChange={event => setScope(event.target.value === 'workspace' ? 'workspace' : 'session')} aria-label="What to search" data-shadow-search-scope="">
          <option value="session">this session</option>
          <option value="workspace">all sessions of this workspace</option>
        </select>
        <button type="submit" data-shadow-search-submit="">Search</button>
      </form>
      {load.state === 'loading' ? <div className="dsc-muted">Searching…</div> : null}
      {load.state === 'error' ? <Failure code={load.code} message={load.message} /> : null}
      {load.state === 'done' ? (
        <div data-shadow-results={asked.query} data-shadow-results-scope={asked.scope}>
          <div className="dsc-muted" data-shadow-result-count={load.value.hits.length}>{load.value.hits.length} of {load.value.matched} matching messages for {JSON.stringify(load.value.query)}{asked.scope === 'workspace' ? ' in this workspace' : ''}</div>
          <ol className="dsc-hits">
            {load.value.hits.map(hit => (
              <li key={hit.shadowId} data-shadow-hit={hit.shadowId} data-shadow-hit-session={hit.sessionId}>
                <button type="button" className="dsc-hit" onClick={() => setOpen(open === hit.shadowId ? null : hit.shadowId)}>
                  <span className="dsc-id">{hit.shadowId}</span> · {formatTime(hit.time)} UTC · {speakerOf(hit)}{hit.elidedBy === null ? ' · in context' : ` · in ${hit.elidedBy}`}
                  {hit.sessionId === sessionId ? null : <span data-shadow-hit-other=""> · from session …{shortSession(hit.sessionId)}</span>}
                  <Snippet text={hit.snippet} />
                </button>
                {open === hit.shadowId ? <Transcript api={api} sessionId={sessionId} request={{ id: hit.shadowId, before: 0, after: 0, scope: asked.scope }} /> : null}
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </div>
  )
}

export interface DockInjected {
  readonly shadow: ShadowApi
}

/** The panel above the composer: totals, the session's shadow timeline, search, last failure. */
export function ShadowDock({ sessionId, useProjection, shadow }: SessionKit & DockInjected): ReactElement | null {
  const view = shadowViewOf(useProjection(PROJECTION_KEY))
  const [expanded, setExpanded] = useState(false)
  if (view === undefined || !view.active) return null
  const timeline: TimelineItem[] = [
    ...view.checkpoints.map(item => ({ kind: 'checkpoint' as const, seq: item.seq, item })),
    ...view.recalls.map(item => ({ kind: 'recall' as const, seq: item.seq, item })),
  ].toSorted((a, b) => a.seq - b.seq)
  return (
    <div className="dsc-dock" data-shadow-panel="" data-shadow-panel-expanded={expanded ? 'true' : 'false'}>
      <div className="dsc-bar">
        <button type="button" className="dsc-row" aria-expanded={expanded} onClick={() => setExpanded(!expanded)} data-shadow-panel-toggle="">
          <span className="dsc-glyph" aria-hidden="true">{expanded ? '▾' : '▸'}</span>
          <span className="dsc-title">Shadow Context</span>
          <span className="dsc-facts" data-shadow-totals="">
            {savingsText(view)}
          </span>
        </button>
        {view.lastFailure === null ? null : (
          <span className="dsc-error dsc-inline" role="alert" data-shadow-failure="" title={view.lastFailure.message}>
            last store failure {formatTime(view.lastFailure.time)} UTC: {view.lastFailure.message}
          </span>
        )}
      </div>
      {expanded ? (
        <div className="dsc-body">
          <SearchBox api={shadow} sessionId={sessionId} />
          <ol className="dsc-timeline" data-shadow-timeline="">
            {timeline.map(entry => entry.kind === 'checkpoint' ? (
              <li key={`c${entry.seq}`} data-shadow-timeline-checkpoint={entry.item.id}>
                <span className="dsc-id">{entry.item.id}</span> · {entry.item.kind} · {entry.item.messages} messages, {count(entry.item.shadowedTokens)} tokens off the context → {count(entry.item.digestTokens)} · {formatTime(entry.item.timeFrom)} → {formatTime(entry.item.timeTo)} UTC
              </li>
            ) : (
              <li key={`r${entry.seq}`} data-shadow-timeline-recall={entry.item.kind}>
                ↺ {entry.item.kind}{entry.item.query === null ? '' : ` ${JSON.stringify(entry.item.query)}`} · {entry.item.ok ? `brought back ${entry.item.ids.length} originals` : 'failed'}{entry.item.snippet === null || entry.item.snippet === undefined ? '' : `: ${entry.item.snippet}`} · {formatTime(entry.item.time)} UTC
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </div>
  )
}
