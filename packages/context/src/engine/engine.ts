/// <reference types="@deepseek-ai/dsh-agent" />
/// <reference types="@deepseek-ai/dsh-token-meter" />
/**
 * ShadowCompactionEngine: dsh's `compaction` seam, lossless. A pass replaces the oldest
 * not-yet-compacted run of the surface (after every earlier checkpoint, before a retained tail)
 * with one frozen checkpoint: a deterministic digest plus a code-composed pointer footer into the
 * shadow store. Nothing is elided until the store has confirmed every original (write-ahead);
 * committed checkpoints are never rewritten, so the request prefix up to them stays
 * byte-identical from pass to pass. Overflow is recovered with one bounded compact-and-retry per
 * request, behind a per-session breaker.
 */
import type { Context } from '@deepseek-ai/cordis'
import {
  CompactionEngine,
  CompactionId,
  ManualCompactionError,
  compactCheckpointSource,
  isCompactCheckpointSource,
  toolPairingBalancedAfter,
  toolPairingBalancedBefore,
  type CompactionAgentContext,
  type CompactionResult,
  type CompactionTrigger,
  type ManualCompactAgentContext,
} from '@deepseek-ai/dsh-compaction'
import type { CommandId } from '@deepseek-ai/dsh-commands/brand'
import { BlockAssembler, CONTEXT_WINDOW_EXCEEDED_CODE, createUserMessage, errorChain, type ContentBlock, type TokenUsage } from '@deepseek-ai/dsh-llm'
import type { Session } from '@deepseek-ai/dsh-session'
import { checkpointId as makeCheckpointId, failpoint, parseCheckpointTag, sessionTag } from '@dsh-shadow/store'
import { SHADOW_ENGINE } from '../capture/checkpoints.ts'
import { budgetFor, resolveEngineConfig, ShadowEngineConfigSchema, type EngineBudget, type ResolvedEngineConfig, type ShadowEngineConfig } from './config.ts'
import { composeDigest, composeFooter, composeRollup, composeState, STATE_MARKER, type DigestMessage } from './digest.ts'
import { LogIndexRegistry, type LogIndexWork } from './log-index.ts'
import { composeMask, MASK_MARKER } from './mask.ts'
import { frozenEnd, selectMasks, selectRegion, selectRollup, stateSplit, type PolicyNode, type RegionChoice, type RegionMode } from './region.ts'

/** Model name written on our `compaction/summary` events. */
export const DIGEST_MODEL = 'digest-v1'
export const ROLLUP_MODEL = 'rollup-v1'
export const STATE_MODEL = 'state-v1'
export const MASK_MODEL = 'mask-v1'
/** About what one mask stub costs (its header, a line per call, the footer). */
const MASK_STUB_TOKENS = 80

/** Why a pass did not commit, in words that end up in the log and the projection. */
export class CompactionRefused extends Error {
  override readonly name = 'CompactionRefused'
}

interface SessionState {
  /** Consecutive failed overflow recoveries. */
  failures: number
  /** The request (turn:step) already retried after an overflow. */
  retried: string | undefined
  breakerOpen: boolean
  lastWarning: string | undefined
  /** A refusal for the current store outage is already in this session's log. */
  outageRecorded: boolean
  /** Request size at the previous pressure check, and the mean growth per request (masking's horizon). */
  lastTotal: number
  growth: number
}

interface Prepared {
  readonly session: Session
  readonly region: RegionChoice
  readonly nodes: readonly PolicyNode[]
  readonly shadowedSeqs: number[]
  readonly shadowedTokens: number
  readonly kind: 'digest' | 'rollup' | 'state' | 'mask'
}

interface Built {
  readonly content: ContentBlock[]
  readonly footer: string
  readonly provider: string
  readonly model: string
  readonly maxTokens?: number
  readonly usage?: TokenUsage
  readonly rawOutput?: ContentBlock[]
}

function routedTarget(agent: CompactionAgentContext): { provider: string; model: string } | undefined {
  const config = agent.session.requestHeader()?.config
  if (config !== undefined && config.provider.length > 0 && config.model.length > 0) return { provider: config.provider, model: config.model }
  const { provider, model } = agent.options
  return provider !== undefined && provider.length > 0 && model !== undefined && model.length > 0 ? { provider, model } : undefined
}

export class ShadowCompactionEngine extends CompactionEngine {
  static inject = ['llm', 'tokenMeter', 'sessions', 'shadowCapture']
  static Config = ShadowEngineConfigSchema

  readonly config: ResolvedEngineConfig
  private readonly states = new WeakMap<Session, SessionState>()
  private readonly warnedWindow = new Set<string>()
  private readonly logs = new LogIndexRegistry()

  constructor(ctx: Context, config: ShadowEngineConfig = {}) {
    super(ctx)
    this.config = resolveEngineConfig(config)
    ctx.on('session/event', (session, event) => this.logs.observe(session, event))
    if (this.config.auto) this.registerAutomaticCompaction()
  }

  /** Log events passes have indexed and visited so far (a pass must not grow with the log). */
  get work(): Readonly<LogIndexWork> {
    return { ...this.logs.work }
  }

  private state(session: Session): SessionState {
    let state = this.states.get(session)
    if (state === undefined) {
      state = { failures: 0, retried: undefined, breakerOpen: false, lastWarning: undefined, outageRecorded: false, lastTotal: 0, growth: 0 }
      this.states.set(session, state)
    }
    return state
  }

  private registerAutomaticCompaction(): void {
    const { ctx } = this
    ctx.on('agent/pre-step', async ({ agent, signal }, next) => {
      if (!signal.aborted) {
        try {
          await this.compactIfNeeded(agent, 'pressure', signal)
        } catch (error) {
          this.warnOnce(agent.session, `Shadow Context: pressure compaction did not commit (${error instanceof Error ? error.message : String(error)}); the turn continues`)
        }
      }
      return next()
    })
    ctx.on('session/event', (session, event) => {
      if (event.type !== 'assistant/message') return
      const state = this.states.get(session)
      if (state === undefined) return
      // a request went through: the recovery worked, close the breaker
      state.failures = 0
      state.retried = undefined
      state.breakerOpen = false
    })
    ctx.on('agent/request-error', async ({ agent, failure, turn, step, signal }, next) => {
      if (failure.code !== CONTEXT_WINDOW_EXCEEDED_CODE || signal.aborted) return next()
      const session = agent.session
      const state = this.state(session)
      const key = `${turn}:${step}`
      if (state.breakerOpen) {
        this.warnOnce(session, `Shadow Context: automatic compaction is paused for session ${session.id} after ${this.config.breakerThreshold} failed recoveries; the request fails with the provider's error. Run /compact or start a new turn with less input.`)
        return next()
      }
      if (state.retried === key) {
        // this request was already compacted and retried once: never loop
        this.recordFailure(agent, 'the request still exceeds the context window after one compact-and-retry')
        return next()
      }
      const generation = session.surface.replaceGeneration
      try {
        await this.compactIfNeeded(agent, 'context-overflow', signal)
      } catch (error) {
        if (!signal.aborted && session.surface.replaceGeneration > generation) {
          state.retried = key
          return { kind: 'retry' }
        }
        this.recordFailure(agent, `overflow recovery could not compact: ${error instanceof Error ? error.message : String(error)}`)
        return next()
      }
      if (signal.aborted || session.surface.replaceGeneration <= generation) {
        this.recordFailure(agent, 'overflow recovery found nothing it could compact (the newest unit alone exceeds the window)')
        return next()
      }
      state.retried = key
      return { kind: 'retry' }
    })
  }

  private warnOnce(session: Session, message: string): void {
    const state = this.state(session)
    if (state.lastWarning === message) return
    state.lastWarning = message
    this.ctx.logger.warn(message)
  }

  /** Count one failed recovery; at the threshold, open the breaker and say so in the log. */
  private recordFailure(agent: CompactionAgentContext, reason: string): void {
    const state = this.state(agent.session)
    state.failures += 1
    this.ctx.logger.warn(`Shadow Context: ${reason} (${state.failures} consecutive failure${state.failures > 1 ? 's' : ''}, session ${agent.session.id})`)
    if (state.failures < this.config.breakerThreshold || state.breakerOpen) return
    state.breakerOpen = true
    const message = `circuit breaker open after ${state.failures} consecutive failed overflow recoveries; automatic compaction paused until a request succeeds or /compact runs`
    this.ctx.logger.warn(`Shadow Context: ${message} (session ${agent.session.id})`)
    // Record it in the session log, so UIs, replay and the projection show why the turn failed.
    const { openTurn, locked } = this.logs.for(agent.session).entryState()
    if (locked) return
    try {
      const compactionId = CompactionId(this.nextId(agent.session))
      agent.session.append('compaction/start', { compactionId, turn: openTurn })
      agent.session.append('compaction/end', { compactionId, turn: openTurn, error: `Shadow Context: ${message}` })
    } catch (error) {
      this.ctx.logger.warn(`Shadow Context: could not record the breaker in the log: ${errorChain(error)}`)
    }
  }

  /** Breaker and failure counters of a session (for tests and the projection). */
  recoveryState(session: Session): Readonly<SessionState> {
    return { ...this.state(session) }
  }

  private async budget(agent: CompactionAgentContext, signal?: AbortSignal): Promise<EngineBudget | undefined> {
    const target = routedTarget(agent)
    if (target === undefined) return undefined
    const info = await this.ctx.llm.resolveModelInfo(target.provider, target.model, signal)
    const window = info.context?.contextWindow
    if (window === undefined || !Number.isInteger(window) || window <= 0) {
      const key = `${target.provider}/${target.model}`
      if (!this.warnedWindow.has(key)) {
        this.warnedWindow.add(key)
        this.ctx.logger.warn(`Shadow Context: no context window known for ${key}; pressure compaction is off for it (overflow recovery still works)`)
      }
      return undefined
    }
    return budgetFor(this.config, window)
  }

  /** The surface as the policy sees it. */
  private policyNodes(session: Session): { nodes: PolicyNode[]; balancedAtEnd: boolean } {
    const log = this.logs.for(session)
    // dsh's meter and pairing helpers get the session view: theirs copy session.events otherwise
    const view = log.view()
    const measurement = this.ctx.tokenMeter.measure(view)
    const surface = session.surface.nodes
    if (measurement.nodes.length !== surface.length) throw new CompactionRefused('token meter and session surface disagree')
    const nodes = surface.map((seq, index): PolicyNode => {
      const event = log.event(seq)
      const checkpoint = event.type === 'user/message' && isCompactCheckpointSource(event.data.source)
      const first = checkpoint && event.type === 'user/message' ? event.data.content[0] : undefined
      return {
        seq,
        tokens: measurement.nodes[index]!.tokens,
        checkpoint,
        // the state checkpoint and mask stubs are folded by the next pass
        mutable: first?.type === 'text' && (first.text.startsWith(STATE_MARKER) || first.text.startsWith(MASK_MARKER)),
        role: event.type === 'assistant/message' ? 'assistant' : event.type === 'tool/result' ? 'tool' : 'user',
        // a node starts a turn when a turn/start lies between it and the previous surface node
        turnStart: log.turnStartBetween(index === 0 ? -1 : surface[index - 1]!, seq),
        balancedBefore: toolPairingBalancedBefore(view, seq),
      }
    })
    const last = surface.at(-1)
    return { nodes, balancedAtEnd: last === undefined ? true : toolPairingBalancedAfter(view, last) }
  }

  async compactIfNeeded(agent: CompactionAgentContext, trigger: CompactionTrigger, signal: AbortSignal): Promise<CompactionResult | null> {
    const session = agent.session
    const budget = await this.budget(agent, signal)
    if (trigger === 'pressure') {
      if (budget === undefined) return null
      const total = this.ctx.tokenMeter.measure(this.logs.for(session).view()).totalTokens
      const state = this.state(session)
      if (total > state.lastTotal) state.growth = state.growth === 0 ? total - state.lastTotal : 0.7 * state.growth + 0.3 * (total - state.lastTotal)
      state.lastTotal = total
      if (total < budget.thresholdTokens) {
        if (this.config.maskTokens === 0 || this.config.maskHitRatio === 0 || !this.ctx.shadowCapture.healthy) return null
        return this.maskIfWorth(agent, budget, total, state.growth, signal)
      }
      if (this.ctx.shadowCapture.healthy) state.outageRecorded = false
      else if (state.outageRecorded) {
        // Fail closed without a bracket per step: this outage's refusal is in the log already.
        this.warnOnce(session, `Shadow Context: the shadow store is failing (${this.ctx.shadowCapture.health.lastFailure?.message ?? 'unknown'}); compaction waits, nothing is elided`)
        return null
      } else state.outageRecorded = true
    }
    const { nodes, balancedAtEnd } = this.policyNodes(session)
    const mode: RegionMode = trigger === 'context-overflow' ? 'overflow' : 'pressure'
    const region = selectRegion(nodes, {
      mode,
      retainTokens: budget?.retainTokens ?? 0,
      minRegionTokens: budget?.minRegionTokens ?? 0,
      balancedAtEnd,
      ...(budget === undefined ? {} : { currentTurnTokens: budget.currentTurnTokens }),
    })
    let result: CompactionResult | null = null
    const split = region === null || !this.config.stateCheckpoint ? undefined : stateSplit(nodes, region)
    if (region !== null && split !== undefined) {
      // Frozen digest for the older part, then the state checkpoint over the trailing slice.
      const older: RegionChoice = { startIdx: region.startIdx, endIdx: split - 1, tokens: nodes.slice(region.startIdx, split).reduce((sum, node) => sum + node.tokens, 0) }
      const trailing = nodes.slice(split, region.endIdx + 1).map(node => node.seq)
      result = await this.commit(agent, { session, region: older, nodes, kind: 'digest' }, { owner: 'turn', trigger }, signal)
      const now = this.policyNodes(session).nodes
      const startIdx = now.findIndex(node => node.seq === trailing[0])
      const endIdx = now.findIndex(node => node.seq === trailing.at(-1))
      if (startIdx !== -1 && endIdx >= startIdx) {
        const tokens = now.slice(startIdx, endIdx + 1).reduce((sum, node) => sum + node.tokens, 0)
        result = (await this.commit(agent, { session, region: { startIdx, endIdx, tokens }, nodes: now, kind: 'state' }, { owner: 'turn', trigger: 'state' }, signal)) ?? result
      }
    } else if (region !== null) result = await this.commit(agent, { session, region, nodes, kind: 'digest' }, { owner: 'turn', trigger }, signal)
    if (result !== null && mode === 'pressure' && budget !== undefined && this.config.maskTokens > 0) result = (await this.maskBehind(agent, budget, signal)) ?? result
    // The provider refused the request already, so the prompt cache is no argument here: bulky steps
    // of the current turn are masked too. Otherwise one tool output bigger than the window fails the turn.
    if (mode === 'overflow' && this.config.maskTokens > 0) result = (await this.maskAll(agent, budget, signal)) ?? result
    // Digests that outgrew their budget are rolled up in the same pass (one cache miss, not two).
    if (budget !== undefined) {
      const after = result === null ? nodes : this.policyNodes(session).nodes
      const rollup = selectRollup(after, budget.rollupTokens)
      if (rollup !== null) result = (await this.commit(agent, { session, region: rollup, nodes: after, kind: 'rollup' }, { owner: 'turn', trigger: 'index' }, signal)) ?? result
    }
    return result
  }

  /**
   * Observation masking behind the checkpoint this pass just wrote: the next request misses the
   * prompt cache from that checkpoint on anyway, so stubs there cost no extra miss.
   */
  private async maskBehind(agent: CompactionAgentContext, budget: EngineBudget, signal: AbortSignal): Promise<CompactionResult | null> {
    const { nodes, balancedAtEnd } = this.policyNodes(agent.session)
    const runs = selectMasks(nodes, { from: frozenEnd(nodes), minTokens: this.config.maskTokens, keepTokens: budget.retainTokens, balancedAtEnd })
    return this.commitMasks(agent, nodes, runs, signal)
  }

  /**
   * Overflow recovery: bulky steps after the frozen checkpoints, the newest included, biggest first,
   * until the surface is back under the compaction threshold (all of them when the window is unknown).
   * When the digest alone got there, the turn's outputs stay as the model was reading them.
   */
  private async maskAll(agent: CompactionAgentContext, budget: EngineBudget | undefined, signal: AbortSignal): Promise<CompactionResult | null> {
    const { nodes, balancedAtEnd } = this.policyNodes(agent.session)
    const runs = selectMasks(nodes, { from: frozenEnd(nodes), minTokens: this.config.maskTokens, keepTokens: 0, balancedAtEnd }).toSorted((a, b) => b.tokens - a.tokens)
    if (budget === undefined) return this.commitMasks(agent, nodes, runs, signal)
    let result: CompactionResult | null = null
    for (const run of runs) {
      if (this.ctx.tokenMeter.measure(this.logs.for(agent.session).view()).totalTokens <= budget.thresholdTokens) break
      result = (await this.commitMasks(agent, nodes, [run], signal)) ?? result
    }
    return result
  }

  /**
   * Masking between passes, only when it pays under the configured cache price: a rewrite makes
   * everything after its first stub miss once, (1 − hit) × (suffix − removed); it saves
   * hit × removed on each request until the next rewrite (estimated from the growth per request),
   * so it waits until a batch worth the miss has piled up.
   */
  private async maskIfWorth(agent: CompactionAgentContext, budget: EngineBudget, total: number, growth: number, signal: AbortSignal): Promise<CompactionResult | null> {
    const { nodes, balancedAtEnd } = this.policyNodes(agent.session)
    const runs = selectMasks(nodes, { from: frozenEnd(nodes), minTokens: this.config.maskTokens, keepTokens: budget.retainTokens, balancedAtEnd })
    if (runs.length === 0) return null
    const suffix = nodes.slice(runs[0]!.startIdx).reduce((sum, node) => sum + node.tokens, 0)
    const removed = runs.reduce((sum, run) => sum + Math.max(0, run.tokens - MASK_STUB_TOKENS), 0)
    // The saving lasts until the next rewrite: the next pass, or the next mask once as much has grown again.
    const horizon = Math.max(1, Math.min(removed, budget.thresholdTokens - total) / Math.max(1, growth))
    const hit = this.config.maskHitRatio
    if (hit * removed * horizon <= (1 - hit) * Math.max(0, suffix - removed)) return null
    return this.commitMasks(agent, nodes, runs, signal)
  }

  private async commitMasks(agent: CompactionAgentContext, nodes: readonly PolicyNode[], runs: readonly RegionChoice[], signal: AbortSignal): Promise<CompactionResult | null> {
    const session = agent.session
    const targets = runs.map(run => ({ start: nodes[run.startIdx]!.seq, end: nodes[run.endIdx]!.seq }))
    let result: CompactionResult | null = null
    for (const target of targets) {
      if (signal.aborted) break
      const now = this.policyNodes(session).nodes
      const startIdx = now.findIndex(node => node.seq === target.start)
      const endIdx = now.findIndex(node => node.seq === target.end)
      if (startIdx === -1 || endIdx < startIdx) continue
      const tokens = now.slice(startIdx, endIdx + 1).reduce((total, node) => total + node.tokens, 0)
      result = (await this.commit(agent, { session, region: { startIdx, endIdx, tokens }, nodes: now, kind: 'mask' }, { owner: 'turn', trigger: 'mask' }, signal)) ?? result
    }
    return result
  }

  compactNow(agent: ManualCompactAgentContext, signal: AbortSignal, sourceCommandId?: CommandId): Promise<CompactionResult | null> {
    signal.throwIfAborted()
    try {
      return agent.runMaintenance(async agentSignal => {
        const operation = AbortSignal.any([agentSignal, signal])
        const { nodes, balancedAtEnd } = this.policyNodes(agent.session)
        // The agent is idle: like dsh's own /compact, everything not yet checkpointed may go.
        const region = selectRegion(nodes, { mode: 'manual', retainTokens: 0, minRegionTokens: 0, balancedAtEnd })
        if (region === null) return null
        try {
          const result = await this.commit(agent, { session: agent.session, region, nodes, kind: 'digest' }, {
            owner: null, trigger: 'manual', ...(sourceCommandId === undefined ? {} : { sourceCommandId }),
          }, operation)
          const state = this.state(agent.session)
          state.failures = 0
          state.breakerOpen = false
          await this.ctx.sessions.flush(agent.session)
          return result
        } catch (error) {
          if (error instanceof ManualCompactionError) throw error
          throw new ManualCompactionError('commit', `Shadow Context compaction did not commit: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
        }
      })
    } catch (error) {
      throw new ManualCompactionError('busy', 'manual compaction needs an idle agent', { cause: error })
    }
  }

  async compactRegion(start: number, end: number, agent: CompactionAgentContext, signal?: AbortSignal): Promise<CompactionResult> {
    const { nodes } = this.policyNodes(agent.session)
    const startIdx = nodes.findIndex(node => node.seq === start)
    const endIdx = nodes.findIndex(node => node.seq === end)
    if (startIdx === -1) throw new Error(`compactRegion: start seq ${start} not found in surface`)
    if (endIdx === -1) throw new Error(`compactRegion: end seq ${end} not found in surface`)
    if (startIdx > endIdx) throw new Error(`compactRegion: start seq ${start} is after end seq ${end} on the surface`)
    if (nodes.slice(startIdx, endIdx + 1).some(node => node.checkpoint)) throw new Error('compactRegion: the range contains a committed checkpoint; checkpoints are frozen')
    const view = this.logs.for(agent.session).view()
    if (!toolPairingBalancedBefore(view, start)) throw new Error(`compactRegion: start seq ${start} is not a balanced boundary`)
    if (!toolPairingBalancedAfter(view, end)) throw new Error(`compactRegion: end seq ${end} is not a balanced boundary`)
    const tokens = nodes.slice(startIdx, endIdx + 1).reduce((total, node) => total + node.tokens, 0)
    const result = await this.commit(agent, { session: agent.session, region: { startIdx, endIdx, tokens }, nodes, kind: 'digest' }, { owner: 'turn', trigger: 'region' }, signal)
    if (result === null) throw new Error('compactRegion: the pass did not commit')
    return result
  }

  /** The next checkpoint id; the tag is the store's (it may be longer after a tag collision). */
  private nextId(session: Session, tag: string = this.ctx.shadowCapture.knownTag(session.id)): string {
    return makeCheckpointId(tag, this.logs.for(session).compactionCount() + 1)
  }

  /**
   * One transaction: start bracket → content → write-ahead confirm → inflation guard →
   * summary + replacement → end. Any refusal closes the bracket with the reason and elides nothing.
   */
  private async commit(
    agent: CompactionAgentContext,
    prepared: Omit<Prepared, 'shadowedSeqs' | 'shadowedTokens'>,
    options: { owner: 'turn' | null; trigger: string; sourceCommandId?: CommandId },
    signal?: AbortSignal,
  ): Promise<CompactionResult | null> {
    const { session, region, nodes } = prepared
    const shadowedSeqs = nodes.slice(region.startIdx, region.endIdx + 1).map(node => node.seq)
    const shadowedTokens = region.tokens
    const { openTurn, locked } = this.logs.for(session).entryState()
    if (locked) throw new ManualCompactionError('busy', 'compaction already in progress for this session')
    let owner: number | null
    if (options.owner === null) {
      if (openTurn !== null) throw new ManualCompactionError('busy', 'manual compaction: the session has an open turn')
      owner = null
    } else {
      if (openTurn === null) throw new Error('automatic compaction needs an open turn')
      owner = openTurn
    }
    const compactionId = CompactionId(this.nextId(session, await this.ctx.shadowCapture.tag(session.id)))
    const lifecycle = { compactionId, turn: owner, ...(options.sourceCommandId === undefined ? {} : { sourceCommandId: options.sourceCommandId }) }
    const surfaceBefore = session.surface.nodes.join(',')
    // A digest or rollup is pure code: build it first, and skip a pass that would not shrink
    // anything without writing a bracket. An llm summary is made inside the bracket (the lock).
    const deterministic = prepared.kind !== 'digest' || this.config.summary === 'digest'
    let built = deterministic ? await this.build(agent, { ...prepared, shadowedSeqs, shadowedTokens }, compactionId, signal) : undefined
    if (built !== undefined && this.checkpointTokens(built, compactionId, options.sourceCommandId) >= shadowedTokens) return null
    const startEvent = session.append('compaction/start', lifecycle)
    try {
      built ??= await this.build(agent, { ...prepared, shadowedSeqs, shadowedTokens }, compactionId, signal)
      const checkpointMessage = createUserMessage({ content: built.content, source: compactCheckpointSource(compactionId, options.sourceCommandId) })
      const checkpointTokens = this.ctx.tokenMeter.estimateMessage(checkpointMessage)
      if (checkpointTokens >= shadowedTokens) throw new CompactionRefused(`the checkpoint (${checkpointTokens} tokens) would not be smaller than what it replaces (${shadowedTokens})`)
      // Write-ahead: every original must be durably in the shadow store before it leaves the surface.
      const log = this.logs.for(session)
      const confirmed = await this.ctx.shadowCapture.confirm(session, shadowedSeqs, seq => log.event(seq))
      if (!confirmed.ok) {
        throw new CompactionRefused(`the shadow store could not confirm ${confirmed.missing.length + confirmed.mismatched.length} of ${shadowedSeqs.length} originals; nothing was elided`)
      }
      failpoint('engine.after-confirm')
      signal?.throwIfAborted()
      if (session.surface.nodes.join(',') !== surfaceBefore) throw new CompactionRefused('the surface changed while the checkpoint was prepared')
      const summaryData = {
        compactionId,
        ...(options.sourceCommandId === undefined ? {} : { sourceCommandId: options.sourceCommandId }),
        summary: built.content,
        shadowedRange: { start: shadowedSeqs[0]!, end: shadowedSeqs.at(-1)! },
        shadowedSeqs,
        shadowedTokenCount: shadowedTokens,
        provider: built.provider,
        model: built.model,
        ...(built.maxTokens === undefined ? {} : { maxTokens: built.maxTokens }),
        ...(built.usage === undefined ? {} : { usage: built.usage }),
      }
      // An llm summary names its one ctx.llm.stream() call; a digest made no call at all.
      const summaryEvent = built.rawOutput === undefined
        ? session.append('compaction/summary', summaryData)
        : session.append('compaction/summary', { ...summaryData, rawOutput: built.rawOutput, llmStreamCall: true })
      failpoint('engine.before-replace')
      const replacement = session.append('user/message', checkpointMessage, {
        surfaceOp: { op: 'replace', start: shadowedSeqs[0]!, end: shadowedSeqs.at(-1)! },
        sourceEventSeqs: [startEvent.seq, summaryEvent.seq, ...shadowedSeqs],
      })
      failpoint('engine.after-replace')
      const endEvent = session.append('compaction/end', lifecycle)
      this.ctx.shadowCapture.noteCheckpoint({
        checkpointId: compactionId,
        sessionId: session.id,
        engine: SHADOW_ENGINE,
        status: 'committed',
        trigger: options.trigger,
        startSeq: startEvent.seq,
        summarySeq: summaryEvent.seq,
        replaceSeq: replacement.seq,
        shadowedSeqs,
        shadowedTokens,
        summaryTokens: checkpointTokens,
        footer: built.footer,
        createdAt: endEvent.time,
      })
      this.ctx.logger.info(`Shadow Context ${compactionId} (${options.trigger}): ${shadowedSeqs.length} nodes, ~${shadowedTokens} → ${checkpointTokens} tokens`)
      return {
        compactionId,
        ...(options.sourceCommandId === undefined ? {} : { sourceCommandId: options.sourceCommandId }),
        startSeq: startEvent.seq,
        summarySeq: summaryEvent.seq,
        endSeq: endEvent.seq,
        summary: built.content,
        shadowedRange: { start: shadowedSeqs[0]!, end: shadowedSeqs.at(-1)! },
        shadowedSeqs,
        shadowedTokenCount: shadowedTokens,
      }
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      try {
        session.append('compaction/end', { ...lifecycle, error: `Shadow Context: ${reason}` })
      } catch (closeError) {
        this.ctx.logger.warn(`Shadow Context: could not close compaction ${compactionId}: ${errorChain(closeError)}`)
      }
      if (error instanceof CompactionRefused) {
        this.ctx.shadowCapture.reportFailure(session, { time: Date.now(), code: 'REFUSED', message: reason })
      }
      throw error
    }
  }

  private checkpointTokens(built: Built, compactionId: CompactionId, sourceCommandId: CommandId | undefined): number {
    return this.ctx.tokenMeter.estimateMessage(createUserMessage({ content: built.content, source: compactCheckpointSource(compactionId, sourceCommandId) }))
  }

  /** The checkpoint content: a digest (or an index rollup), or LLM prose; always the code footer. */
  private async build(agent: CompactionAgentContext, prepared: Prepared, compactionId: string, signal?: AbortSignal): Promise<Built> {
    const { session } = prepared
    const log = this.logs.for(session)
    const tag = parseCheckpointTag(compactionId) ?? sessionTag(session.id)
    // everything a checkpoint says is derived from text as the store keeps it (redacted when on)
    const redact = (text: string): string => this.ctx.shadowCapture.redactText(text)
    if (prepared.kind === 'rollup') {
      const folded = prepared.shadowedSeqs.map(seq => {
        const event = log.event(seq)
        const source = event.type === 'user/message' ? event.data.source : undefined
        const id = source !== undefined && isCompactCheckpointSource(source) ? String((source as { compactionId?: unknown }).compactionId) : `seq ${seq}`
        const text = event.type === 'user/message' ? event.data.content.map(block => (block.type === 'text' ? block.text : '')).join('\n') : ''
        return { checkpointId: id, text: redact(text) }
      })
      const text = composeRollup({ checkpointId: compactionId, folded })
      return { content: [{ type: 'text', text }], footer: text.slice(text.lastIndexOf('\n') + 1), provider: SHADOW_ENGINE, model: ROLLUP_MODEL }
    }
    const positions = log.positionsOf(prepared.shadowedSeqs)
    const messages: DigestMessage[] = prepared.shadowedSeqs.map(seq => positions.get(seq)!).map(message => ({ ...message, event: this.ctx.shadowCapture.redactEvent(message.event) }))
    if (prepared.kind === 'mask') {
      const mask = composeMask({ checkpointId: compactionId, tag, messages })
      return { content: [{ type: 'text', text: mask.text }], footer: mask.footer, provider: SHADOW_ENGINE, model: MASK_MODEL }
    }
    if (prepared.kind === 'state') {
      const checkpoints = prepared.nodes.filter(node => node.checkpoint && node.mutable !== true).map(node => {
        const event = log.event(node.seq)
        return redact(event.type === 'user/message' ? event.data.content.map(block => (block.type === 'text' ? block.text : '')).join('\n') : '')
      })
      const state = composeState({ checkpointId: compactionId, tag, messages, checkpoints, maxTokens: this.config.stateTokens })
      return { content: [{ type: 'text', text: state.text }], footer: state.footer, provider: SHADOW_ENGINE, model: STATE_MODEL }
    }
    if (this.config.summary === 'digest') {
      const digest = composeDigest({ checkpointId: compactionId, tag, messages, maxTokens: this.config.digestTokens })
      return { content: [{ type: 'text', text: digest.text }], footer: digest.footer, provider: SHADOW_ENGINE, model: DIGEST_MODEL }
    }
    return this.summarizeWithLlm(agent, prepared, compactionId, messages, signal)
  }

  private async summarizeWithLlm(agent: CompactionAgentContext, prepared: Prepared, compactionId: string, messages: readonly DigestMessage[], signal?: AbortSignal): Promise<Built> {
    const session = prepared.session
    const header = session.requestHeader()
    const target = this.config.summarizationProvider !== undefined && this.config.summarizationModel !== undefined
      ? { provider: this.config.summarizationProvider, model: this.config.summarizationModel }
      : routedTarget(agent)
    if (target === undefined) throw new CompactionRefused('no provider/model to write an llm summary with')
    const log = this.logs.for(session)
    // the summarizer reads the originals as the store keeps them (redacted when on): a configured
    // summarizationProvider may be another provider than the one the conversation runs on
    const derived = prepared.shadowedSeqs.map(seq => session.deriveEventMessage(this.ctx.shadowCapture.redactEvent(log.event(seq)))).filter(message => message !== null)
    const instruction = createUserMessage({
      content: [{ type: 'text', text: 'Summarize the conversation above for your own later use: goals, decisions and their reasons, files and identifiers, errors and fixes, open work. Terse bullets. Preserve exact paths, commands, numbers and error strings. Output only the summary.' }],
      source: { kind: 'plugin', plugin: SHADOW_ENGINE },
    })
    const assembler = new BlockAssembler()
    for await (const chunk of this.ctx.llm.stream({
      provider: target.provider,
      model: target.model,
      messages: [...derived, instruction],
      ...(header?.system === undefined ? {} : { system: header.system }),
      ...(header?.tools === undefined ? {} : { tools: [...header.tools] }),
      maxTokens: this.config.maxTokens,
      sessionId: session.id,
      purpose: 'compaction',
      ...(signal === undefined ? {} : { signal }),
    })) assembler.push(chunk)
    const finish = assembler.finish
    if (finish.kind === 'error' || finish.kind === 'aborted') throw new CompactionRefused(`llm summary failed: ${finish.failure.message}`)
    if (finish.kind === 'max-tokens') throw new CompactionRefused('llm summary hit its token cap')
    // the raw output goes into the compaction/summary event beside the checkpoint: redacted alike
    const rawOutput = this.ctx.shadowCapture.redactValue(assembler.blocks())
    const prose = this.ctx.shadowCapture.redactText(rawOutput.filter(block => block.type === 'text').map(block => block.text).join('\n').trim())
    if (prose.length === 0) throw new CompactionRefused('llm summary was empty')
    const footer = composeFooter({ checkpointId: compactionId, tag: parseCheckpointTag(compactionId) ?? sessionTag(session.id), messages })
    const text = `[Shadow Context checkpoint ${compactionId}]\n${prose}\n${footer}`
    return {
      content: [{ type: 'text', text }],
      footer,
      provider: target.provider,
      model: target.model,
      maxTokens: this.config.maxTokens,
      ...(assembler.usage === undefined ? {} : { usage: assembler.usage }),
      rawOutput,
    }
  }
}
