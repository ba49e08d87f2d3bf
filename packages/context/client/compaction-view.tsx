/**
 * The renderer this plugin puts in dsh's `compaction` row seat (see compaction.ts): our
 * checkpoint node, titled with dsh's words, for our engine's compactions; any other engine's goes
 * back to the renderer dsh would have used (`next()`), or, on a dsh without one, to a row like it.
 */
import { createElement, useState, type ComponentType, type ReactElement } from 'react'
import type { ShadowApi } from './api.ts'
import { compactionDataOf, compactionWords, manualCompactionDataOf, manualCompactionNode, shadowCheckpointOf, type Translate } from './compaction.ts'
import type { SessionKit } from './types.ts'
import { CheckpointRow, PROJECTION_KEY, shadowViewOf } from './views.tsx'

interface CompactionRowProps {
  readonly node: { readonly id: string; readonly data: unknown }
  readonly t?: Translate
}

/** Another engine's compaction when dsh has no renderer of its own: collapsed, the summary on click. */
function OtherCompactionRow({ id, title, facts, summary }: { id: string; title: string; facts: string; summary: string | null }): ReactElement {
  const [open, setOpen] = useState(false)
  return (
    <div className="dsc-compaction" data-shadow-compaction="other" data-shadow-compaction-id={id}>
      <button type="button" className="dsc-row" disabled={summary === null} aria-expanded={summary === null ? undefined : open} onClick={() => setOpen(!open)} data-shadow-compaction-toggle="">
        <span className="dsc-glyph" aria-hidden="true">{open ? '▾' : '▸'}</span>
        <span className="dsc-title" data-shadow-compaction-title="">{title}</span>
        <span className="dsc-facts">· {facts}</span>
      </button>
      {open && summary !== null ? <pre className="dsc-text dsc-summary" data-shadow-compaction-summary="">{summary}</pre> : null}
    </div>
  )
}

export function createCompactionNode(api: ShadowApi, next: () => unknown = () => undefined) {
  return function ShadowCompactionNode(props: SessionKit & CompactionRowProps): ReactElement | null {
    const { node, t, sessionId, useProjection } = props
    const view = shadowViewOf(useProjection(PROJECTION_KEY))
    const data = compactionDataOf(node.data)
    if (data === undefined) return null // a payload this plugin does not know: nothing rather than a wrong row
    const words = compactionWords(t, data)
    const ours = shadowCheckpointOf({ id: node.id, data }, view)
    if (ours !== undefined) return <CheckpointRow api={api} sessionId={sessionId} view={view} data={ours} title={words.title} digest={data.summary} />
    const renderer = next()
    if (isRenderer(renderer)) return createElement(renderer as ComponentType<typeof props>, props)
    return <OtherCompactionRow id={node.id} title={words.title} facts={words.facts} summary={data.summary} />
  }
}

function isRenderer(value: unknown): boolean {
  return typeof value === 'function' || (typeof value === 'object' && value !== null)
}

/**
 * The renderer this plugin puts in dsh's `manual-compaction` seat (a `/compact` command and its
 * compaction in one row): our checkpoint node once our engine's compaction has landed, so the
 * command shows as that one row; anything else (still running, failed, nothing to compact, another
 * engine's) goes to `next()`, the renderer dsh would have used, with the same props.
 */
export function createManualCompactionNode(api: ShadowApi, next: () => unknown) {
  return function ShadowManualCompactionNode(props: SessionKit & CompactionRowProps): ReactElement | null {
    const { node, t, sessionId, useProjection } = props
    const view = shadowViewOf(useProjection(PROJECTION_KEY))
    const data = manualCompactionDataOf(node.data)
    const compaction = data === undefined ? undefined : manualCompactionNode(data, view)
    const ours = compaction === undefined ? undefined : shadowCheckpointOf(compaction, view)
    if (data !== undefined && ours !== undefined) {
      return <CheckpointRow api={api} sessionId={sessionId} view={view} data={ours} title={compactionWords(t, data).title} digest={data.summary} />
    }
    const renderer = next()
    // no other renderer for the key (not a dsh this plugin knows): nothing rather than a wrong row
    return isRenderer(renderer) ? createElement(renderer as ComponentType<typeof props>, props) : null
  }
}
