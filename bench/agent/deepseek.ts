/**
 * `bench:agent --model deepseek`: DeepSeek answers the turns that have needs, through dsh's own
 * DeepSeek adapter (`@deepseek-ai/dsh-llm-deepseek` rc.8, constructed directly: no settings, no
 * credential store, nothing written to a dsh home); the scripted model plays every other turn.
 * A real, billed run: it needs DEEPSEEK_API_KEY and is not part of CI.
 */
import { randomUUID } from 'node:crypto'
import { register } from 'node:module'
import type { DeepSeekAdapterOptions } from '@deepseek-ai/dsh-llm-deepseek'
import type { TurnDelegate } from '@dsh-shadow/testing'

/** Why a DeepSeek run cannot start (no key). Nothing is sent and nothing is run. */
export class DeepSeekRunError extends Error {
  override readonly name = 'DeepSeekRunError'
  readonly code: 'MISSING_CREDENTIAL'
  constructor(code: DeepSeekRunError['code'], message: string) {
    super(message)
    this.code = code
  }
}

export const DEEPSEEK_KEY_ENV = 'DEEPSEEK_API_KEY'
/** Wire model the need turns go to unless DEEPSEEK_MODEL says otherwise. */
export const DEFAULT_DEEPSEEK_MODEL = 'deepseek-v4-flash'
/** Requests one need turn may send to DeepSeek (a bound on cost if the model loops). */
export const DEEPSEEK_TURN_REQUESTS = 8

/** Output cap per DeepSeek request: an answer or a few tool calls, never a runaway bill. */
export const DEEPSEEK_MAX_OUTPUT = 4_096

/** Appended to a need turn's prompt, so the exact-fact check on the answer measures recall, not style. */
export const QUOTE_INSTRUCTION = 'When your answer relies on something from earlier in this session (a value, id, path, decision, open item or file line), quote the original line or sentence exactly, in backticks. If it was never discussed, say so.'

export async function deepseekDelegate(env: NodeJS.ProcessEnv = process.env): Promise<TurnDelegate> {
  const key = env[DEEPSEEK_KEY_ENV]?.trim()
  if (key === undefined || key.length === 0) {
    throw new DeepSeekRunError('MISSING_CREDENTIAL', `--model deepseek needs ${DEEPSEEK_KEY_ENV} in the environment (a real, billed DeepSeek run of the turns with needs; see bench/README.md). Nothing was run.`)
  }
  // loaded only for a real run, with third-party "source" exports ignored (see node-modules-resolve.mjs)
  register(new URL('./node-modules-resolve.mjs', import.meta.url))
  const { DeepSeekAdapter, resolveAdapterOptions } = await import('@deepseek-ai/dsh-llm-deepseek')
  // thinking off: the need turns are lookups, and reasoning tokens would dominate the bill
  const connection = resolveAdapterOptions({ apiKeyEnv: DEEPSEEK_KEY_ENV, reasoningEffort: 'off', maxTokens: DEEPSEEK_MAX_OUTPUT, ...(env['DEEPSEEK_BASE_URL'] === undefined ? {} : { baseURL: env['DEEPSEEK_BASE_URL'] }) })
  const userId = randomUUID() as ReturnType<DeepSeekAdapterOptions['resolveUserId']>
  const adapter = new DeepSeekAdapter({ options: () => connection, resolveApiKey: () => Promise.resolve(key), resolveUserId: () => userId })
  return { adapter, model: env['DEEPSEEK_MODEL'] ?? DEFAULT_DEEPSEEK_MODEL, maxRequests: DEEPSEEK_TURN_REQUESTS, instruction: QUOTE_INSTRUCTION }
}
