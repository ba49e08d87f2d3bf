/**
 * Browser half of dsh-shadow-context (module id `dsh-shadow-context`, served by the web app at
 * `/plugins/dsh-shadow-context/client.js` because the package's host row declares `dsh.client`).
 * Registers the two chat node definitions with their keyed renderers, a renderer for dsh's own
 * `compaction` row (below dsh's priority, so it is the one that renders: compaction.ts says why),
 * and the composer-dock panel.
 * Its only imports are the web app's shared modules (here: react, react/jsx-runtime).
 */
import { createApi } from './api.ts'
import { COMPACTION_KIND, COMPACTION_PRIORITY } from './compaction.ts'
import { createCompactionNode } from './compaction-view.tsx'
import { checkpointDefinition, CHECKPOINT_KIND, recallDefinition, RECALL_KIND } from './definitions.ts'
import { injectStyle } from './styles.ts'
import type { ClientContext } from './types.ts'
import { createCheckpointNode, createRecallNode, ShadowDock } from './views.tsx'

export const name = 'dsh-shadow-context'
export const inject = ['slots', 'conversationEvents', 'connection']

export function apply(ctx: ClientContext): void {
  injectStyle()
  const api = createApi(ctx.connection)
  // the registry ties each definition to this plugin's fiber itself
  ctx.conversationEvents.register(checkpointDefinition)
  ctx.conversationEvents.register(recallDefinition)
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: CHECKPOINT_KIND }, createCheckpointNode(api)))
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: RECALL_KIND }, createRecallNode(api)))
  // `locale: 'conversation'` hands the renderer dsh's conversation strings ("Context compacted", …)
  ctx.slots.inject('conversation.chat.node', () => ctx.slots.register({ name: 'conversation.chat.node', key: COMPACTION_KIND, priority: COMPACTION_PRIORITY, locale: 'conversation' }, createCompactionNode(api)))
  ctx.slots.inject('conversation.input.dock', () => ctx.slots.register({
    name: 'conversation.input.dock',
    id: 'shadow-context',
    order: 30,
    inject: () => ({ shadow: api }),
  }, ShadowDock))
}
