/**
 * Browser half of dsh-shadow-context (module id `dsh-shadow-context`, served by the web app at
 * `/plugins/dsh-shadow-context/client.js` because the package's host row declares `dsh.client`).
 * Registers the recall chat node definition with its keyed renderer, renderers for dsh's own
 * `compaction` and `manual-compaction` rows (below dsh's priority, so they are the ones that
 * render: compaction.ts says why), and the composer-dock panel.
 * Its only imports are the web app's shared modules (here: react, react/jsx-runtime).
 */
import { createApi } from './api.ts'
import { COMPACTION_KIND, COMPACTION_PRIORITY, MANUAL_COMPACTION_KIND, nextRenderer } from './compaction.ts'
import { createCompactionNode, createManualCompactionNode } from './compaction-view.tsx'
import { recallDefinition, RECALL_KIND } from './definitions.ts'
import { injectStyle } from './styles.ts'
import type { ClientContext } from './types.ts'
import { createRecallNode, ShadowDock } from './views.tsx'

export const name = 'dsh-shadow-context'
export const inject = ['slots', 'conversationEvents', 'connection']

export function apply(ctx: ClientContext): void {
  injectStyle()
  const api = createApi(ctx.connection)
  // the registry ties each definition to this plugin's fiber itself
  ctx.conversationEvents.register(recallDefinition)
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: RECALL_KIND }, createRecallNode(api)))
  // `locale: 'conversation'` hands the renderer dsh's conversation strings ("Context compacted", …)
  // another engine's compaction (a Standard session's compaction-basic) goes back to dsh's own row
  const compaction = createCompactionNode(api, () => nextRenderer(ctx.slots.entries('conversation.chat.node'), COMPACTION_KIND, compaction))
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: COMPACTION_KIND, priority: COMPACTION_PRIORITY, locale: 'conversation' }, compaction))
  // a manual /compact is its own row kind in dsh: ours once our checkpoint landed, dsh's otherwise
  const manual = createManualCompactionNode(api, () => nextRenderer(ctx.slots.entries('conversation.chat.node'), MANUAL_COMPACTION_KIND, manual))
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: MANUAL_COMPACTION_KIND, priority: COMPACTION_PRIORITY, locale: 'conversation' }, manual))
  ctx.slots.inject('conversation.input.dock', () => ctx.slots.register({
    name: 'conversation.input.dock',
    id: 'shadow-context',
    order: 30,
    inject: () => ({ shadow: api }),
  }, ShadowDock))
}
