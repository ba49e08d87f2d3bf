/**
 * The whole Shadow Context mode as one loader row, for an agent preset: capture, the compaction
 * engine, the recall tools and dsh's `/compact`. One row rather than a `cordis:group`, because in
 * rc.8 a preset audits its rows right after mounting and a group's children may not have started
 * yet. The row publishes `compaction` and `shadowCapture`, so it needs
 * `isolate: { compaction: true, shadowCapture: true }` (see presets/shadow-context/agent.cordis.yml).
 */
import type { Context } from '@deepseek-ai/cordis'
import * as CommandCompact from '@deepseek-ai/dsh-command-compact'
import z from '@deepseek-ai/schemastery'
import { refuseUnknownKeys } from '../config-keys.ts'
import { ShadowCapture, ShadowCaptureConfigSchema, type ShadowCaptureConfig } from '../capture/service.ts'
import { ShadowEngineConfigSchema, type ShadowEngineConfig } from '../engine/config.ts'
import { ShadowCompactionEngine } from '../engine/engine.ts'
import { ShadowRecall, ShadowRecallConfigSchema, type ShadowRecallConfig } from '../recall/plugin.ts'

export const name = 'shadow-context'
/** The host services the rows need; listing them lets the preset mount check them up front. */
export const inject = ['llm', 'tokenMeter', 'sessions', 'tools', 'systemPrompt', 'commands']

export interface Config {
  capture?: ShadowCaptureConfig
  engine?: ShadowEngineConfig
  recall?: ShadowRecallConfig
  /** Mount dsh's `/compact` command on this engine. Default true. */
  commandCompact?: boolean
}

export const Config: z<Config> = z.object({
  capture: ShadowCaptureConfigSchema,
  engine: ShadowEngineConfigSchema,
  recall: ShadowRecallConfigSchema,
  commandCompact: z.boolean().default(true),
})

export function apply(ctx: Context, config: Config = {}): void {
  refuseUnknownKeys('shadow-context preset row', config, Config)
  // Called on ctx itself (never a detached ctx.plugin): the rows must land in this preset's scope.
  ctx.plugin(ShadowCapture, config.capture ?? {})
  ctx.plugin(ShadowCompactionEngine, config.engine ?? {})
  ctx.plugin(ShadowRecall, config.recall ?? {})
  if (config.commandCompact !== false) ctx.plugin(CommandCompact)
}

export default { name, inject, Config, apply }
