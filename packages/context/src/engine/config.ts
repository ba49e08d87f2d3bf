/** Configuration of the Shadow Context compaction engine, with every default in one place. */
import z from '@deepseek-ai/schemastery'
import { refuseUnknownKeys } from '../config-keys.ts'

export interface ShadowEngineConfig {
  /** Compact when request pressure reaches this share of the context window. */
  thresholdRatio?: number
  /** Recent surface kept verbatim, as a share of the window (or `retainTokens`). */
  retainRatio?: number
  /** Recent surface kept verbatim, in tokens; overrides `retainRatio`. */
  retainTokens?: number
  /**
   * A pass must elide at least this share of the window, or it waits for more history. Every pass
   * costs a cache miss on its new checkpoint and the retained tail, so fewer, larger passes are
   * cheaper: on bench:agent's dev seeds 0.1 cost no more than 0.05 under any price sheet (less under two) at equal success.
   */
  minRegionRatio?: number
  /**
   * Pressure keeps the running turn whole while it is at most this share of the threshold (the
   * model is working on it); a larger turn is cut like any other history.
   */
  currentTurnRatio?: number
  /**
   * At a pressure pass, tool steps behind the new checkpoint (older than the retained tail) whose
   * outputs reach this many tokens become pointer stubs; their words stay. 0 = off. Free for the
   * prompt cache (all of it misses after the new checkpoint anyway); on bench:agent's dev seeds it
   * cost 1–1.5% less than off under every sheet and budget, at equal needs (150 measured the same).
   */
  maskTokens?: number
  /**
   * Price of a cached input token relative to a miss on your provider. Above 0, the engine also
   * masks between passes when the cached tokens it saves outweigh the suffix it makes miss once.
   * 0 = mask only inside passes (free for the cache).
   */
  maskHitRatio?: number
  /** Ceiling of one checkpoint's digest, in tokens (the pointer footer comes on top). */
  digestTokens?: number
  /**
   * When the frozen checkpoints together exceed this share of the window, the oldest ones are
   * rolled up into one index node (their pointers stay). 0 disables rollups.
   */
  rollupRatio?: number
  /** `digest`: deterministic, no LLM call. `llm`: prose summary through ctx.llm, plus the footer. */
  summary?: 'digest' | 'llm'
  /** Provider for `summary: llm`; default the session's own route. */
  summarizationProvider?: string
  summarizationModel?: string
  /** Output cap of the `llm` summary call. */
  maxTokens?: number
  /** Consecutive failed recoveries after which automatic compaction stops until a request succeeds. */
  breakerThreshold?: number
  /**
   * Keep one mutable "state" checkpoint after the frozen ones (the upstream proposal): each pass
   * rewrites it from all checkpoints so far, and folds the previous one into its digest. Off by
   * default (bench:agent can measure it with --shadow).
   */
  stateCheckpoint?: boolean
  /** Ceiling of the state checkpoint, tokens. */
  stateTokens?: number
  /** Register the pressure and overflow listeners. Default true. */
  auto?: boolean
}

export const ShadowEngineConfigSchema: z<ShadowEngineConfig> = z.object({
  thresholdRatio: z.number().min(0.05).max(1).default(0.25).description('compact at this share of the context window'),
  retainRatio: z.number().min(0).max(0.9).default(0.05).description('recent surface kept verbatim, share of the window'),
  retainTokens: z.natural().description('recent surface kept verbatim, tokens (overrides retainRatio)'),
  minRegionRatio: z.number().min(0).max(0.9).default(0.1).description('smallest useful pass, share of the window'),
  currentTurnRatio: z.number().min(0).max(1).default(0.5).description('the running turn is kept whole up to this share of the threshold'),
  maskTokens: z.natural().default(300).description('tool steps with this many output tokens are masked behind a pass; 0 = off'),
  maskHitRatio: z.number().min(0).max(1).default(0).description('cache-hit price / miss price; > 0 also masks between passes when that pays'),
  digestTokens: z.natural().min(64).default(220).description('ceiling of one digest, tokens'),
  rollupRatio: z.number().min(0).max(0.9).default(0.06).description('frozen checkpoints above this share of the window are rolled up; 0 = never'),
  summary: z.union(['digest', 'llm']).default('digest').description('checkpoint content: deterministic digest or LLM prose'),
  summarizationProvider: z.string().description('provider for summary: llm'),
  summarizationModel: z.string().description('model for summary: llm'),
  maxTokens: z.natural().default(2048).description('output cap of the llm summary call'),
  breakerThreshold: z.natural().min(1).default(3).description('consecutive failed recoveries before automatic compaction pauses'),
  stateCheckpoint: z.boolean().default(false).description('keep one mutable state checkpoint after the frozen ones'),
  stateTokens: z.natural().min(64).default(300).description('ceiling of the state checkpoint, tokens'),
  auto: z.boolean().default(true).description('register pressure and overflow listeners'),
})

export interface ResolvedEngineConfig {
  readonly thresholdRatio: number
  readonly retainRatio: number
  readonly retainTokens: number | undefined
  readonly minRegionRatio: number
  readonly currentTurnRatio: number
  readonly maskTokens: number
  readonly maskHitRatio: number
  readonly digestTokens: number
  readonly rollupRatio: number
  readonly summary: 'digest' | 'llm'
  readonly summarizationProvider: string | undefined
  readonly summarizationModel: string | undefined
  readonly maxTokens: number
  readonly breakerThreshold: number
  readonly stateCheckpoint: boolean
  readonly stateTokens: number
  readonly auto: boolean
}

export function resolveEngineConfig(input: ShadowEngineConfig = {}): ResolvedEngineConfig {
  refuseUnknownKeys('ShadowEngineConfig', input, ShadowEngineConfigSchema)
  const config = ShadowEngineConfigSchema(input)
  const resolved: ResolvedEngineConfig = {
    thresholdRatio: config.thresholdRatio ?? 0.25,
    retainRatio: config.retainRatio ?? 0.05,
    retainTokens: config.retainTokens,
    minRegionRatio: config.minRegionRatio ?? 0.1,
    currentTurnRatio: config.currentTurnRatio ?? 0.5,
    maskTokens: config.maskTokens ?? 300,
    maskHitRatio: config.maskHitRatio ?? 0,
    digestTokens: config.digestTokens ?? 220,
    rollupRatio: config.rollupRatio ?? 0.06,
    summary: config.summary ?? 'digest',
    summarizationProvider: config.summarizationProvider,
    summarizationModel: config.summarizationModel,
    maxTokens: config.maxTokens ?? 2048,
    breakerThreshold: config.breakerThreshold ?? 3,
    stateCheckpoint: config.stateCheckpoint ?? false,
    stateTokens: config.stateTokens ?? 300,
    auto: config.auto ?? true,
  }
  // schemastery's range checks let NaN through (YAML's .nan): a NaN threshold made every step a pass
  for (const key of ['thresholdRatio', 'retainRatio', 'minRegionRatio', 'currentTurnRatio', 'maskHitRatio', 'rollupRatio'] as const) {
    if (Number.isNaN(resolved[key])) throw new TypeError(`ShadowEngineConfig: ${key} must be a number, not NaN`)
  }
  if (resolved.retainRatio >= resolved.thresholdRatio) {
    throw new Error(`ShadowEngineConfig: retainRatio (${resolved.retainRatio}) must be below thresholdRatio (${resolved.thresholdRatio})`)
  }
  if ((resolved.summarizationProvider === undefined) !== (resolved.summarizationModel === undefined)) {
    throw new Error('ShadowEngineConfig: summarizationProvider and summarizationModel go together')
  }
  return resolved
}

/** Token budgets for one routed model. */
export interface EngineBudget {
  readonly contextWindow: number
  readonly thresholdTokens: number
  readonly retainTokens: number
  readonly minRegionTokens: number
  readonly rollupTokens: number
  /** The running turn is kept whole up to this size. */
  readonly currentTurnTokens: number
}

export function budgetFor(config: ResolvedEngineConfig, contextWindow: number): EngineBudget {
  const thresholdTokens = Math.floor(contextWindow * config.thresholdRatio)
  const retainTokens = Math.min(config.retainTokens ?? Math.floor(contextWindow * config.retainRatio), Math.max(0, thresholdTokens - 1))
  return {
    contextWindow,
    thresholdTokens,
    retainTokens,
    minRegionTokens: Math.floor(contextWindow * config.minRegionRatio),
    rollupTokens: config.rollupRatio === 0 ? Number.POSITIVE_INFINITY : Math.floor(contextWindow * config.rollupRatio),
    currentTurnTokens: Math.floor(thresholdTokens * config.currentTurnRatio),
  }
}
