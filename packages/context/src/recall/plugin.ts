/**
 * ShadowRecall: the model-facing side. Registers `shadow_search` and `shadow_read` with dsh's
 * tool registry and one static system-prompt section; optionally (config) queues one proactive
 * recall message before a turn whose input strongly matches shadowed history.
 *
 * Schemas and prompt text are constants, so they never disturb the provider's prefix cache.
 * Results are ordinary tool results (logged, at the tail); the proactive message is a
 * `user/message` with `source: { kind: 'shadow-context', form: 'recall' }`.
 */
import type { Context } from '@deepseek-ai/cordis'
import { createUserMessage, type UserMessage } from '@deepseek-ai/dsh-llm'
import type { Session } from '@deepseek-ai/dsh-session'
import type { CommandDefinition } from '@deepseek-ai/dsh-commands'
import { defineTool, type ToolRunContext } from '@deepseek-ai/dsh-tools'
import z from '@deepseek-ai/schemastery'
import { failpoint } from '@dsh-shadow/store'
import { chooseProactiveHit, proactiveText } from './proactive.ts'
import { refuseUnknownKeys } from '../config-keys.ts'
import { cutPrefix } from '../text.ts'
import type { ShadowCapture } from '../capture/service.ts'
import { plainSnippet, RecallError } from './format.ts'
import { READ_BUDGET_MAX, READ_BUDGET_MIN, READ_TOOL, RecallResolver, SEARCH_EXCLUDES, SEARCH_LIMIT_MAX, SEARCH_TOOL, type ReadArgs, type SearchArgs } from './recall.ts'

/** Source of recall messages Shadow Context puts into the context. */
export interface ShadowContextRecallSource {
  readonly kind: 'shadow-context'
  readonly form: 'recall'
  readonly shadowIds: readonly string[]
  readonly query?: string
}

declare module '@deepseek-ai/dsh-llm/message' {
  interface MessageSourceMap {
    'shadow-context': ShadowContextRecallSource
  }
}

export interface ShadowRecallConfig {
  /** `session`: the session and its fork ancestors. `workspace`: every session of its cwd. Default session. */
  scope?: 'session' | 'workspace'
  /** Proactive recall before a turn whose input strongly matches shadowed history. Default off. */
  proactive?: boolean
  /** Rare words of the prompt (distinctive in the session, not stopwords) a hit must contain to count as a strong match. Default 2. */
  proactiveMinMatches?: number
  /** Token budget of one proactive recall message. Default 600. */
  proactiveTokens?: number
  /** The same shadow ids are not recalled again within this many turns. Default 20. */
  proactiveWindowTurns?: number
}

export const ShadowRecallConfigSchema: z<ShadowRecallConfig> = z.object({
  scope: z.union(['session', 'workspace']).default('session').description('what recall may read'),
  proactive: z.boolean().default(false).description('queue one recall message before a strongly matching turn'),
  proactiveMinMatches: z.natural().min(1).default(2).description('rare words of the prompt a proactive hit must contain'),
  proactiveTokens: z.natural().min(100).default(600).description('token budget of a proactive recall message'),
  proactiveWindowTurns: z.natural().default(20).description('turns before the same ids may be recalled again'),
})

/** The recall row's options checked as its constructor checks them (doctor runs this too). */
export function checkRecallConfig(config: ShadowRecallConfig = {}): ShadowRecallConfig {
  refuseUnknownKeys('ShadowRecallConfig', config, ShadowRecallConfigSchema)
  return ShadowRecallConfigSchema(config)
}

/** The one static prompt section (byte-stable). */
// Every request carries this section and both tool schemas (bench:agent: ~1 050 tokens before it was
// made terse, ~1/4 of a lean request), so each line here earns its place.
export const RECALL_PROMPT = [
  '# Shadow Context: nothing is lost',
  'Checkpoints ("[Shadow Context checkpoint …]", "[Shadow Context index …]") replace older history; every original, tool outputs included, is stored verbatim with its time.',
  `- Before relying on a detail a checkpoint only summarizes (exact value, path, error, output, decision), look it up: ${SEARCH_TOOL} {"query":"…"} (words, identifiers, paths, 中文; time words like "yesterday" become a window), then ${READ_TOOL} with the id and "at" a hit suggests, or {"checkpoint":"<id>"} from a footer.`,
  '- "on your surface now": you can already see it. "Value over time": the newest is current. "No message … mentions `x`" or "No hit contains `x`": it was not discussed; do not guess (unless it names a translation).',
].join('\n')

/**
 * Where the open turn's own messages start (the question among them): they are not hits, the model
 * sees them. A long turn that compacted part of itself gets the seq of its latest checkpoint
 * instead: what that took off the surface, earlier in this same turn, is exactly what recall is for.
 */
export function currentTurnStart(session: Pick<Session, 'events'>): number | undefined {
  const events = session.events
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!
    if (event.type === 'turn/end') return undefined
    if (event.type === 'compaction/summary' || event.type === 'turn/start') return event.seq
  }
  return undefined
}

/** Plain text of message content (tool calls as name + arguments, results recursively). */
function blocksText(content: ReadonlyArray<{ type: string; text?: string; name?: string; arguments?: string; content?: unknown }>): string {
  return content.map(block => {
    if (block.type === 'tool-call') return `${block.name ?? ''} ${block.arguments ?? ''}`
    if (block.type === 'tool-result' && Array.isArray(block.content)) return blocksText(block.content as Parameters<typeof blocksText>[0])
    return block.text ?? ''
  }).join('\n')
}

function fail(error: unknown): never {
  if (error instanceof RecallError) throw Object.assign(new Error(`${error.code}: ${error.message}`), { name: 'RecallError', code: error.code })
  throw error
}

export class ShadowRecall {
  static readonly inject = ['shadowCapture', 'tools', 'systemPrompt', 'sessions']
  static readonly Config = ShadowRecallConfigSchema

  readonly config: Required<ShadowRecallConfig>
  private readonly ctx: Context
  private readonly recent = new WeakMap<Session, Map<string, number>>()

  constructor(ctx: Context, config: ShadowRecallConfig = {}) {
    this.ctx = ctx
    const resolved = checkRecallConfig(config)
    this.config = {
      scope: resolved.scope ?? 'session',
      proactive: resolved.proactive ?? false,
      proactiveMinMatches: resolved.proactiveMinMatches ?? 2,
      proactiveTokens: resolved.proactiveTokens ?? 600,
      proactiveWindowTurns: resolved.proactiveWindowTurns ?? 20,
    }
    ctx.tools.register(this.searchTool())
    ctx.tools.register(this.readTool())
    ctx.systemPrompt.section({ name: 'shadow-context:recall', order: 900, text: RECALL_PROMPT })
    if (this.config.proactive) this.registerProactive()
    // `/recall <words>` in the composer: the same search for the person, when the profile has dsh's command registry
    ctx.inject(['commands'], commandsCtx => {
      commandsCtx.effect(() => commandsCtx.commands.register(this.recallCommand()), 'shadow-context /recall')
    })
  }

  /**
   * A person's search from the composer. Its answer is the command's result, shown in the chat;
   * nothing enters the model's context and it is not recorded as a recall (people are not the model).
   */
  private recallCommand(): CommandDefinition {
    return {
      name: 'recall',
      description: 'search this session\'s full history in the Shadow Context store (for you: the model does not see it)',
      input: { hint: 'words, identifiers, paths or Chinese text' },
      handler: async invocation => {
        const query = invocation.rawInput.trim()
        if (query.length === 0) return { kind: 'error', text: 'give what to look for: /recall <words, identifiers, paths, 中文>' }
        try {
          const resolver = await this.resolver({ agent: invocation.agent } as ToolRunContext)
          // the model's header names its tool; a person reads "Shadow Context search"
          const outcome = await resolver.search({ query, limit: 8 })
          // dsh shows the answer as plain text: no bold marks
          let text = outcome.text.replace(/^shadow_search /, 'Shadow Context search ')
          // a function, not a string, as the replacement: a snippet's own $` or $& is text, not a pattern
          for (const hit of outcome.hits) text = text.replace(`   ${hit.snippet}\n`, () => `   ${plainSnippet(hit)}\n`)
          return { kind: 'success', text }
        } catch (error) {
          return { kind: 'error', text: error instanceof RecallError ? `${error.code}: ${error.message}` : String(error) }
        }
      },
    }
  }

  private get capture(): ShadowCapture {
    return this.ctx.shadowCapture
  }

  private async resolver(exec: ToolRunContext): Promise<RecallResolver> {
    const agent = exec.agent
    if (agent === undefined) throw new RecallError('FORBIDDEN', 'shadow recall needs a calling agent; it reads that agent\'s own session')
    const workspace = this.config.scope === 'workspace' ? agent.session.header.cwd : undefined
    let store
    try {
      store = await this.capture.opened()
    } catch (error) {
      throw new RecallError('UNAVAILABLE', `the shadow store is unavailable: ${error instanceof Error ? error.message : String(error)}`)
    }
    // read your own writes: what was captured before this call (batched for up to batchDelayMs)
    // is in the store before it is searched; a failed write is the capture's to report, the
    // recall still answers from what is stored
    await this.capture.flush().catch(() => undefined)
    const turnStartSeq = currentTurnStart(agent.session)
    const capture = this.capture
    return new RecallResolver(store, { sessionId: agent.session.id, ...(workspace === undefined ? {} : { workspace }), ...(turnStartSeq === undefined ? {} : { turnStartSeq }), redact: text => capture.redactText(text) })
  }

  private searchTool() {
    return defineTool({
      name: SEARCH_TOOL,
      description: 'Search this conversation\'s full history, checkpointed parts and tool outputs included; returns shadow ids with snippets.',
      parameters: {
        query: { type: 'string', required: true, description: 'words, identifiers, paths, errors, 中文' },
        since: { type: 'string', description: 'ISO time or "2h ago"' },
        until: { type: 'string', description: 'ISO time or "2h ago"' },
        role: { type: 'string', enum: ['user', 'assistant', 'tool', 'system'] },
        tool: { type: 'string', description: 'tool name' },
        checkpoint: { type: 'string', description: 'checkpoint id' },
        limit: { type: 'integer', description: `1–${SEARCH_LIMIT_MAX}, default 8` },
      },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: async (args, exec) => {
        try {
          const outcome = await (await this.resolver(exec)).search(args as SearchArgs)
          await this.record(exec, 'search', (args as SearchArgs).query, outcome.shadowIds, outcome.checkpointIds)
          return outcome.text
        } catch (error) {
          return fail(error)
        }
      },
    })
  }

  private readTool() {
    return defineTool({
      name: READ_TOOL,
      description: 'Read original messages verbatim: a checkpoint, a message (id; before/after neighbours; at = char offset), a seq range or a time window. Long reads return a cursor.',
      parameters: {
        checkpoint: { type: 'string', description: 'e.g. "k7q2mz.c3"' },
        id: { type: 'string', description: 'e.g. "k7q2mz.41"' },
        before: { type: 'integer', description: '0–20, default 2' },
        after: { type: 'integer', description: '0–20, default 2' },
        at: { type: 'integer' },
        from_seq: { type: 'integer' },
        to_seq: { type: 'integer' },
        since: { type: 'string' },
        until: { type: 'string' },
        budget: { type: 'integer', description: `tokens, ${READ_BUDGET_MIN}–${READ_BUDGET_MAX}, default 2000` },
        cursor: { type: 'string' },
      },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: async (args, exec) => {
        try {
          const outcome = await (await this.resolver(exec)).read(args as ReadArgs)
          failpoint('recall.during-read')
          await this.record(exec, 'read', undefined, outcome.shadowIds, outcome.checkpointIds)
          return outcome.text
        } catch (error) {
          return fail(error)
        }
      },
    })
  }

  private async record(exec: ToolRunContext, kind: 'search' | 'read', query: unknown, shadowIds: string[], checkpointIds: string[]): Promise<void> {
    const sessionId = exec.agent?.session.id
    if (sessionId === undefined) return
    try {
      await (await this.capture.opened()).recordRecall({ sessionId, kind, time: Date.now(), query: typeof query === 'string' ? query : null, shadowIds, checkpointIds })
    } catch (error) {
      // The answer already reached the model; a lost recall record is only a gap in the timeline.
      this.ctx.logger.warn(`Shadow Context: could not record a recall: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  private registerProactive(): void {
    this.ctx.on('agent/pre-step', async (payload, next) => {
      const decision = await next()
      if (decision.kind !== 'enter' || payload.step !== 1 || payload.signal.aborted) return decision
      const prompt = decision.messages.filter(message => message.source.kind === 'user').map(message => message.content.map(block => (block.type === 'text' ? block.text : '')).join(' ')).join('\n').trim()
      if (prompt.length === 0) return decision
      try {
        const recall = await this.proactiveRecall(payload.agent.session, payload.turn, prompt)
        return recall === undefined ? decision : { ...decision, messages: [recall, ...decision.messages] }
      } catch (error) {
        this.ctx.logger.warn(`Shadow Context: proactive recall skipped: ${error instanceof Error ? error.message : String(error)}`)
        return decision
      }
    })
  }

  /** One bounded recall message for a strongly matching prompt, or nothing. */
  private async proactiveRecall(session: Session, turn: number, prompt: string): Promise<UserMessage | undefined> {
    const store = await this.capture.opened()
    // the previous turn's last events may still be batched: searched as stored, not as captured so far
    await this.capture.flush().catch(() => undefined)
    if ((await store.session(session.id)) === undefined) {
      // a fresh fork or a session whose first batch is still on its way: say so, once per turn
      this.ctx.logger.info(`Shadow Context: proactive recall skipped: the store does not know session ${session.id} yet`)
      return undefined
    }
    const turnStartSeq = currentTurnStart(session)
    const result = await store.search(cutPrefix(prompt, 1_000), { sessionId: session.id, limit: 5, ...SEARCH_EXCLUDES, ...(turnStartSeq === undefined ? {} : { beforeSeq: turnStartSeq }) })
    const recent = this.recent.get(session) ?? new Map<string, number>()
    this.recent.set(session, recent)
    const surface = session.deriveMessages().map(message => blocksText(message.content)).join('\n')
    const choice = chooseProactiveHit({ prompt, result, surface, minMatches: this.config.proactiveMinMatches })
    if ('skip' in choice) return undefined
    const hit = choice.hit
    if ((recent.get(hit.message.shadowId) ?? Number.NEGATIVE_INFINITY) > turn - this.config.proactiveWindowTurns) return undefined
    // the page starts at the matching passage of the hit itself, so the match is what fits
    const text = proactiveText(hit, this.config.proactiveTokens)
    const ids = [hit.message.shadowId]
    recent.set(hit.message.shadowId, turn)
    await store.recordRecall({ sessionId: session.id, kind: 'proactive', time: Date.now(), query: cutPrefix(prompt, 200), shadowIds: ids, checkpointIds: hit.message.elidedBy === null ? [] : [hit.message.elidedBy] })
    const source: ShadowContextRecallSource = { kind: 'shadow-context', form: 'recall', shadowIds: ids, query: cutPrefix(prompt, 200) }
    return createUserMessage({ content: [{ type: 'text', text }], source })
  }
}
