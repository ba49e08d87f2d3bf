/**
 * A real dsh 0.1.0-rc.8 composition for tests, benchmarks and the offline demo: the published
 * llm, session, tools, system-prompt, agent, agent-loop, token-meter, session-projection and
 * JSONL persistence packages in one Cordis tree, dsh's invariant registry with the companions of
 * every mounted package, the scripted model on `ctx.llm`, and whatever plugins the caller adds.
 */
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import AgentRegistry, { type Agent, type AgentHandle } from '@deepseek-ai/dsh-agent'
import * as AgentInvariant from '@deepseek-ai/dsh-agent/invariant'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import * as AgentLoopInvariant from '@deepseek-ai/dsh-agent-loop/invariant'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import * as CompactionBasicInvariant from '@deepseek-ai/dsh-compaction-basic/invariant'
import * as CompactionInvariant from '@deepseek-ai/dsh-compaction/invariant'
import Loader, { Group } from '@deepseek-ai/cordis-plugin-loader'
import Include from '@deepseek-ai/cordis-plugin-include'
import AgentPresets from '@deepseek-ai/dsh-agent-presets'
import * as AgentPresetsInvariant from '@deepseek-ai/dsh-agent-presets/invariant'
import * as CommandCompact from '@deepseek-ai/dsh-command-compact'
import CommandRuntime from '@deepseek-ai/dsh-commands'
import * as CommandCompactInvariant from '@deepseek-ai/dsh-command-compact/invariant'
import InvariantRegistry from '@deepseek-ai/dsh-invariants'
import LlmRuntime, { createUserMessage, type UserMessage } from '@deepseek-ai/dsh-llm'
import * as LlmInvariant from '@deepseek-ai/dsh-llm/invariant'
import SessionStore, { SessionId, type Session, type SessionEvent } from '@deepseek-ai/dsh-session'
import * as SessionInvariant from '@deepseek-ai/dsh-session/invariant'
import * as SessionCheckpointPolicy from '@deepseek-ai/dsh-session-checkpoint-policy'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'
import * as JsonlInvariant from '@deepseek-ai/dsh-session-persistence-jsonl/invariant'
import SessionProjectionRegistry from '@deepseek-ai/dsh-session-projection'
import * as SessionProjectionInvariant from '@deepseek-ai/dsh-session-projection/invariant'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import * as SystemPromptInvariant from '@deepseek-ai/dsh-system-prompt/invariant'
import TokenMeter from '@deepseek-ai/dsh-token-meter'
import * as TokenMeterInvariant from '@deepseek-ai/dsh-token-meter/invariant'
import ToolRuntime, { defineTool, type ToolDefinition } from '@deepseek-ai/dsh-tools'
import * as ToolsInvariant from '@deepseek-ai/dsh-tools/invariant'
import type { ScenarioTurn } from './scenario.ts'
import { ScriptedModel } from './scripted-model.ts'

export const SCRIPTED_PROVIDER = 'scripted'
export const SCRIPTED_MODEL = 'scripted-coder'

/** A Cordis plugin with its config, mounted after dsh's own packages. */
export interface PluginMount {
  readonly plugin: unknown
  readonly config?: unknown
}

/** A test tool: its output is whatever `run` returns for the arguments. */
export interface ScriptedTool {
  readonly name: string
  readonly description: string
  run(args: Record<string, unknown>): string | Promise<string>
}

export interface DshHarnessOptions {
  /** dsh home for this process: sessions are persisted under `<home>/sessions`. Default: a new temp dir. */
  readonly home?: string
  readonly model?: ScriptedModel
  /**
   * Where agents' requests go. Default: the scripted model. Another route (e.g. DeepSeek through
   * dsh's own adapter, mounted as a plugin) makes this a live composition; the scripted model then
   * only stays registered, unused.
   */
  readonly route?: { readonly provider: string; readonly model: string }
  /** Which compaction engine fills the `compaction` seam. Default 'none'. */
  readonly compaction?: 'none' | { readonly basic: Record<string, unknown> } | PluginMount
  /** Mount dsh's `/compact` command beside the engine. Default false. */
  readonly commandCompact?: boolean
  /** Our plugins (capture, engine, recall, projection), mounted after the core packages; a function receives the dsh home. */
  readonly plugins?: readonly PluginMount[] | ((home: string) => readonly PluginMount[])
  /** Mount dsh's session checkpoint policy (flush before each request, as shipped compositions do). Default true. */
  readonly checkpointPolicy?: boolean
  /** Mount dsh's invariant registry and companions. Default true. */
  readonly invariants?: boolean
  /** More invariant companions (e.g. `dsh-shadow-context/invariant`), mounted after the plugins when invariants are on. */
  readonly invariantCompanions?: readonly unknown[]
  /** Tools registered at host level. Default: `shell`, `read_file`, `write_file` echo tools. */
  readonly tools?: readonly ScriptedTool[]
  /** A system-prompt section, so requests carry a realistic system prompt. */
  readonly systemPrompt?: string
  /**
   * Mount dsh's agent presets (the web roster's mechanism) over these preset roots. Bare row names
   * in a preset resolve from `baseUrl` (a file URL inside a package that can import them).
   */
  readonly presets?: { readonly roots: readonly string[]; readonly default: string; readonly baseUrl: string }
}

/** One line the composition logged (warnings and errors are what tests look at). */
export interface LogLine {
  readonly level: 'error' | 'info' | 'warn' | 'debug'
  readonly name: string
  readonly text: string
}

const DEFAULT_SYSTEM_PROMPT = 'You are a careful coding agent working in a TypeScript repository. Use tools to inspect and change files.'

export const DEFAULT_TOOLS: readonly ScriptedTool[] = [
  { name: 'shell', description: 'Run a shell command and return its output.', run: args => `$ ${String(args['command'])}\n(ok)` },
  { name: 'read_file', description: 'Read a file from the workspace.', run: args => `// ${String(args['path'])}\n` },
  { name: 'write_file', description: 'Write a file in the workspace.', run: args => `wrote ${String(args['path'])}` },
]

function toToolDefinition(tool: ScriptedTool): ToolDefinition {
  return defineTool({
    name: tool.name,
    description: tool.description,
    parameters: {
      command: { type: 'string', description: 'shell command' },
      path: { type: 'string', description: 'workspace path' },
      content: { type: 'string', description: 'file content' },
    },
    output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
    execute: async args => tool.run(args as Record<string, unknown>),
  })
}

export function userMessage(text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } })
}

export class DshHarness {
  readonly ctx: Context
  readonly home: string
  readonly sessionsRoot: string
  readonly model: ScriptedModel
  readonly route: { readonly provider: string; readonly model: string }
  readonly logs: LogLine[] = []
  private readonly ownsHome: boolean
  private readonly handles = new Set<AgentHandle>()
  /** Every plugin fiber this harness mounted, in mount order (disposed in reverse). */
  private readonly fibers: Array<{ dispose(): Promise<void> }> = []
  private disposed = false
  /** DSH_HOME before this harness set its own (rows that take no `home`, e.g. a preset's, read it). */
  private readonly previousDshHome: string | undefined

  private constructor(ctx: Context, home: string, ownsHome: boolean, model: ScriptedModel, route: { provider: string; model: string }) {
    this.ctx = ctx
    this.route = route
    this.home = home
    this.ownsHome = ownsHome
    // What the dsh launcher gives its plugins: DSH_HOME names this home, so no row falls back to ~/.dsh.
    this.previousDshHome = process.env['DSH_HOME']
    process.env['DSH_HOME'] = home
    this.sessionsRoot = join(home, 'sessions')
    this.model = model
  }

  static async create(options: DshHarnessOptions = {}): Promise<DshHarness> {
    const ownsHome = options.home === undefined
    const home = options.home ?? mkdtempSync(join(tmpdir(), 'dsh-shadow-home-'))
    mkdirSync(join(home, 'sessions'), { recursive: true, mode: 0o700 })
    const model = options.model ?? new ScriptedModel()
    const ctx = new Context()
    const harness = new DshHarness(ctx, home, ownsHome, model, options.route ?? { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL })
    ctx.logger.exporter({
      colors: 0,
      levels: { default: 3 }, // every level, warnings included
      export: (message: { type: LogLine['level']; name: string; args: unknown[] }) => {
        harness.logs.push({ level: message.type, name: message.name, text: formatLog(message.args) })
      },
    })
    const invariants = options.invariants ?? true
    const mount = async (plugin: unknown, config?: unknown): Promise<void> => {
      const fiber = (ctx.plugin as (plugin: unknown, config?: unknown) => PromiseLike<unknown> & { dispose(): Promise<void> })(plugin, config)
      harness.fibers.push(fiber)
      await fiber
    }
    if (invariants) await mount(InvariantRegistry)
    await mount(LlmRuntime)
    await mount(SessionStore)
    await mount(SystemPrompt, {})
    await mount(ToolRuntime, {})
    await mount(AgentRegistry)
    await mount(JsonlSessionPersistence, { root: harness.sessionsRoot })
    await mount(AgentLoop, { agents: [] })
    if (options.checkpointPolicy ?? true) await mount(SessionCheckpointPolicy)
    await mount(TokenMeter)
    await mount(SessionProjectionRegistry)
    if (invariants) {
      for (const companion of [
        LlmInvariant, SessionInvariant, SystemPromptInvariant, ToolsInvariant, AgentInvariant, AgentLoopInvariant,
        JsonlInvariant, TokenMeterInvariant, SessionProjectionInvariant, CompactionInvariant,
      ]) await mount(companion)
    }
    ctx.llm.registerAdapter([SCRIPTED_PROVIDER], model)
    ctx.systemPrompt.section({ name: 'scripted-role', order: 0, text: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT })
    for (const tool of options.tools ?? DEFAULT_TOOLS) ctx.tools.register(toToolDefinition(tool))

    if (options.presets !== undefined) {
      // What dsh's app boot provides to presets: a loader with the include and group builtins,
      // and the host command registry /compact registers into.
      const withBase = ctx as unknown as { baseUrl: string; loader: { builtins: Record<string, unknown> } }
      withBase.baseUrl = options.presets.baseUrl
      await mount(Loader)
      withBase.loader.builtins['include'] = Include
      withBase.loader.builtins['group'] = Group
      await mount(CommandRuntime)
      await mount(AgentPresets, { default: options.presets.default, roots: options.presets.roots.map(path => ({ path, trust: 'user' })), includeUserRoot: false })
      if (invariants) await mount(AgentPresetsInvariant)
    }
    const plugins = typeof options.plugins === 'function' ? options.plugins(home) : options.plugins ?? []
    for (const plugin of plugins) await mount(plugin.plugin, plugin.config)
    if (invariants) for (const companion of options.invariantCompanions ?? []) await mount(companion)
    // The engine comes after our plugins: ours injects the capture service they provide.
    const compaction = options.compaction ?? 'none'
    if (compaction !== 'none') {
      if ('basic' in compaction) {
        await mount(BasicCompactionEngine, compaction.basic)
        if (invariants) await mount(CompactionBasicInvariant)
      } else {
        await mount(compaction.plugin, compaction.config)
      }
      if (options.commandCompact === true) {
        await mount(CommandRuntime)
        await mount(CommandCompact)
        if (invariants) await mount(CommandCompactInvariant)
      }
    }

    return harness
  }

  /** Create a new agent (and session) routed to the scripted model, optionally joined to a preset. */
  async createAgent(options: { sessionId?: string; cwd?: string; preset?: string } = {}): Promise<Agent> {
    const preset = options.preset
    const handle = await this.ctx.agents.create({
      sessionId: SessionId(options.sessionId ?? `s-${Math.random().toString(36).slice(2, 10)}`),
      meta: { cwd: options.cwd ?? this.home, ...(preset === undefined ? {} : { agentPreset: preset }) },
      agentOptions: { provider: this.route.provider, model: this.route.model },
      ...(preset === undefined ? {} : { setup: async (agentCtx: unknown) => { await this.joinPreset(agentCtx, preset) } }),
    })
    this.handles.add(handle)
    return handle.agent
  }

  /** Resume a persisted session in this process (the session must not be live here). */
  async resume(sessionId: string, options: { preset?: string } = {}): Promise<Agent> {
    const preset = options.preset
    const handle = await this.ctx.agents.resume({
      resumeSessionId: SessionId(sessionId),
      agentOptions: { provider: this.route.provider, model: this.route.model },
      ...(preset === undefined ? {} : { setup: async (agentCtx: unknown) => { await this.joinPreset(agentCtx, preset) } }),
    })
    this.handles.add(handle)
    return handle.agent
  }

  private async joinPreset(agentCtx: unknown, preset: string): Promise<void> {
    const presets = (this.ctx as unknown as { agentPresets: { mount(ctx: unknown, id: string): Promise<unknown> } }).agentPresets
    await presets.mount(agentCtx, preset)
  }

  /** A service as an agent sees it through its preset (its realm), e.g. `compaction`. */
  presetService<T>(agent: Agent, name: string): T | undefined {
    const presets = (this.ctx as unknown as { agentPresets: { serviceFor(agent: Agent, name: string): unknown } }).agentPresets
    return presets.serviceFor(agent, name) as T | undefined
  }

  /** Send one user prompt as a new turn and wait until that turn has ended. */
  async send(agent: Agent, text: string | UserMessage): Promise<SessionEvent<'turn/end'>> {
    const ended = this.nextTurnEnd(agent.session)
    agent.followup(typeof text === 'string' ? userMessage(text) : text)
    const event = await ended
    await agent.whenIdle()
    return event
  }

  /** Play scripted turns: queue each turn's model replies, send its prompt, wait for the turn to end. */
  async play(agent: Agent, turns: readonly ScenarioTurn[], onTurn?: (index: number, end: SessionEvent<'turn/end'>) => void | Promise<void>): Promise<void> {
    for (const [index, turn] of turns.entries()) {
      this.model.enqueue(...turn.steps)
      const end = await this.send(agent, turn.prompt)
      await onTurn?.(index, end)
    }
  }

  /** Resolve with the next `turn/end` event appended to this session. */
  nextTurnEnd(session: Session): Promise<SessionEvent<'turn/end'>> {
    return new Promise(resolve => {
      const dispose = this.ctx.on('session/event', (subject, event) => {
        if (subject !== session || event.type !== 'turn/end') return
        dispose()
        resolve(event as SessionEvent<'turn/end'>)
      })
    })
  }

  /** Flush a session's log to disk through dsh's persistence. */
  async flush(session: Session): Promise<void> {
    await this.ctx.sessions.flush(session)
  }

  /** Warnings and errors logged so far (what a healthy run should not have). */
  problems(): LogLine[] {
    return this.logs.filter(line => line.level === 'warn' || line.level === 'error')
  }

  /** Invariant failures any dsh companion reported (thrown violations are logged by Cordis). */
  invariantFailures(): LogLine[] {
    return this.logs.filter(line => /invariant violated/i.test(line.text))
  }

  /** Dispose agents (flushing their sessions), then the whole tree; removes an owned temp home. */
  async dispose(options: { keepHome?: boolean } = {}): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    for (const handle of this.handles) {
      try {
        await this.ctx.sessions.flush(handle.agent.session)
      } catch {
        // a session disposed earlier has nothing left to flush
      }
      await handle.dispose()
    }
    this.handles.clear()
    // Unmount in reverse order, so every plugin's disposers run (capture flushes its last batch).
    for (const fiber of this.fibers.splice(0).toReversed()) {
      try {
        await fiber.dispose()
      } catch (error) {
        this.logs.push({ level: 'error', name: 'harness', text: `dispose: ${error instanceof Error ? error.message : String(error)}` })
      }
    }
    if (process.env['DSH_HOME'] === this.home) {
      if (this.previousDshHome === undefined) delete process.env['DSH_HOME']
      else process.env['DSH_HOME'] = this.previousDshHome
    }
    if (this.ownsHome && options.keepHome !== true) rmSync(this.home, { recursive: true, force: true })
  }
}

function formatLog(args: unknown[]): string {
  return args.map(arg => {
    if (arg instanceof Error) return arg.stack ?? arg.message
    if (typeof arg === 'string') return arg
    try {
      return JSON.stringify(arg)
    } catch {
      return String(arg)
    }
  }).join(' ')
}
