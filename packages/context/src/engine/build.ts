/// <reference types="@deepseek-ai/dsh-agent" />
/**
 * What a checkpoint says: a deterministic digest, an index rollup, a state checkpoint or a mask
 * stub, composed by code from the originals as the store keeps them (redacted when redaction is
 * on), or LLM prose when configured; every kind ends with the code-composed pointer footer.
 * Plain functions over the session's log index: the engine decides when and what, this says it.
 */
import type { Context } from '@deepseek-ai/cordis'
import { isCompactCheckpointSource, type CompactionAgentContext } from '@deepseek-ai/dsh-compaction'
import { BlockAssembler, createUserMessage, type ContentBlock, type TokenUsage } from '@deepseek-ai/dsh-llm'
import type { Session } from '@deepseek-ai/dsh-session'
import { parseCheckpointTag, sessionTag } from '@dsh-shadow/store'
import { SHADOW_ENGINE } from '../capture/checkpoints.ts'
import type { ShadowCapture } from '../capture/service.ts'
import type { ResolvedEngineConfig } from './config.ts'
import { composeDigest, composeFooter, composeRollup, composeState, type DigestMessage } from './digest.ts'
import type { SessionLogIndex } from './log-index.ts'
import { composeMask } from './mask.ts'
import type { PolicyNode, RegionChoice } from './region.ts'

/** Model name written on our `compaction/summary` events. */
export const DIGEST_MODEL = 'digest-v1'
export const ROLLUP_MODEL = 'rollup-v1'
export const STATE_MODEL = 'state-v1'
export const MASK_MODEL = 'mask-v1'

/** Why a pass did not commit, in words that end up in the log and the projection. */
export class CompactionRefused extends Error {
  override readonly name = 'CompactionRefused'
}

/** A pass's region, ready to be written. */
export interface Prepared {
  readonly session: Session
  readonly region: RegionChoice
  readonly nodes: readonly PolicyNode[]
  readonly shadowedSeqs: number[]
  readonly shadowedTokens: number
  readonly kind: 'digest' | 'rollup' | 'state' | 'mask'
}

/** A checkpoint's content and what made it. */
export interface Built {
  readonly content: ContentBlock[]
  readonly footer: string
  readonly provider: string
  readonly model: string
  readonly maxTokens?: number
  readonly usage?: TokenUsage
  readonly rawOutput?: ContentBlock[]
}

/** What building needs of the engine: its config, the session's log index, capture's redaction, and the model (llm summaries only). */
export interface BuildDeps {
  readonly config: ResolvedEngineConfig
  readonly log: SessionLogIndex
  readonly capture: Pick<ShadowCapture, 'redactText' | 'redactEvent' | 'redactValue'>
  readonly llm: Context['llm']
}

/** The provider and model the session's requests go to (the request header's, else the agent's options). */
export function routedTarget(agent: CompactionAgentContext): { provider: string; model: string } | undefined {
  const config = agent.session.requestHeader()?.config
  if (config !== undefined && config.provider.length > 0 && config.model.length > 0) return { provider: config.provider, model: config.model }
  const { provider, model } = agent.options
  return provider !== undefined && provider.length > 0 && model !== undefined && model.length > 0 ? { provider, model } : undefined
}

/** The checkpoint content: a digest (or an index rollup), or LLM prose; always the code footer. */
export async function buildCheckpoint(deps: BuildDeps, agent: CompactionAgentContext, prepared: Prepared, compactionId: string, signal?: AbortSignal): Promise<Built> {
  const { session } = prepared
  const log = deps.log
  const tag = parseCheckpointTag(compactionId) ?? sessionTag(session.id)
  // everything a checkpoint says is derived from text as the store keeps it (redacted when on)
  const redact = (text: string): string => deps.capture.redactText(text)
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
  const messages: DigestMessage[] = prepared.shadowedSeqs.map(seq => positions.get(seq)!).map(message => ({ ...message, event: deps.capture.redactEvent(message.event) }))
  if (prepared.kind === 'mask') {
    const mask = composeMask({ checkpointId: compactionId, tag, messages })
    return { content: [{ type: 'text', text: mask.text }], footer: mask.footer, provider: SHADOW_ENGINE, model: MASK_MODEL }
  }
  if (prepared.kind === 'state') {
    const checkpoints = prepared.nodes.filter(node => node.checkpoint && node.mutable !== true).map(node => {
      const event = log.event(node.seq)
      return redact(event.type === 'user/message' ? event.data.content.map(block => (block.type === 'text' ? block.text : '')).join('\n') : '')
    })
    const state = composeState({ checkpointId: compactionId, tag, messages, checkpoints, maxTokens: deps.config.stateTokens })
    return { content: [{ type: 'text', text: state.text }], footer: state.footer, provider: SHADOW_ENGINE, model: STATE_MODEL }
  }
  if (deps.config.summary === 'digest') {
    const digest = composeDigest({ checkpointId: compactionId, tag, messages, maxTokens: deps.config.digestTokens })
    return { content: [{ type: 'text', text: digest.text }], footer: digest.footer, provider: SHADOW_ENGINE, model: DIGEST_MODEL }
  }
  return summarizeWithLlm(deps, agent, prepared, compactionId, messages, signal)
}

async function summarizeWithLlm(deps: BuildDeps, agent: CompactionAgentContext, prepared: Prepared, compactionId: string, messages: readonly DigestMessage[], signal?: AbortSignal): Promise<Built> {
  const session = prepared.session
  const header = session.requestHeader()
  const target = deps.config.summarizationProvider !== undefined && deps.config.summarizationModel !== undefined
    ? { provider: deps.config.summarizationProvider, model: deps.config.summarizationModel }
    : routedTarget(agent)
  if (target === undefined) throw new CompactionRefused('no provider/model to write an llm summary with')
  const log = deps.log
  // the summarizer reads the originals as the store keeps them (redacted when on): a configured
  // summarizationProvider may be another provider than the one the conversation runs on
  const derived = prepared.shadowedSeqs.map(seq => session.deriveEventMessage(deps.capture.redactEvent(log.event(seq)))).filter(message => message !== null)
  const instruction = createUserMessage({
    content: [{ type: 'text', text: 'Summarize the conversation above for your own later use: goals, decisions and their reasons, files and identifiers, errors and fixes, open work. Terse bullets. Preserve exact paths, commands, numbers and error strings. Output only the summary.' }],
    source: { kind: 'plugin', plugin: SHADOW_ENGINE },
  })
  const assembler = new BlockAssembler()
  for await (const chunk of deps.llm.stream({
    provider: target.provider,
    model: target.model,
    messages: [...derived, instruction],
    ...(header?.system === undefined ? {} : { system: header.system }),
    ...(header?.tools === undefined ? {} : { tools: [...header.tools] }),
    maxTokens: deps.config.maxTokens,
    sessionId: session.id,
    purpose: 'compaction',
    ...(signal === undefined ? {} : { signal }),
  })) assembler.push(chunk)
  const finish = assembler.finish
  if (finish.kind === 'error' || finish.kind === 'aborted') throw new CompactionRefused(`llm summary failed: ${finish.failure.message}`)
  if (finish.kind === 'max-tokens') throw new CompactionRefused('llm summary hit its token cap')
  // the raw output goes into the compaction/summary event beside the checkpoint: redacted alike
  const rawOutput = deps.capture.redactValue(assembler.blocks())
  const prose = deps.capture.redactText(rawOutput.filter(block => block.type === 'text').map(block => block.text).join('\n').trim())
  if (prose.length === 0) throw new CompactionRefused('llm summary was empty')
  const footer = composeFooter({ checkpointId: compactionId, tag: parseCheckpointTag(compactionId) ?? sessionTag(session.id), messages })
  const text = `[Shadow Context checkpoint ${compactionId}]\n${prose}\n${footer}`
  return {
    content: [{ type: 'text', text }],
    footer,
    provider: target.provider,
    model: target.model,
    maxTokens: deps.config.maxTokens,
    ...(assembler.usage === undefined ? {} : { usage: assembler.usage }),
    rawOutput,
  }
}
