/**
 * Loader row `dsh-shadow-context/rows/try-model`: an offline model for trying Shadow Context in a
 * real dsh without a provider key (`dsh-shadow try` mounts it with a `--patch` overlay). It answers
 * the route `scripted` with a fixed coding-agent script: `steps` tool steps (`todo_write`, padded
 * so the history grows past the compaction threshold), then one `shadow_search` for something said
 * in the first step — by then compacted off the surface — and a final answer quoting what came back.
 * Duck-typed against dsh-llm's adapter shape, so the launcher's own dsh-llm stays the only copy.
 */
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { refuseUnknownKeys } from '../config-keys.ts'

export const name = 'shadow-try-model'
export const inject = ['llm']

export interface Config {
  /** Context window the route reports; small, so compaction happens within a few steps. */
  contextWindow?: number
  /** Tool steps before the recall. */
  steps?: number
  /** How many times each step's note repeats its filler sentence (history per step). */
  padRepeat?: number
}

export const Config: z<Config> = z.object({
  contextWindow: z.natural().min(2_000).default(16_000),
  steps: z.natural().min(2).max(200).default(14),
  padRepeat: z.natural().max(1_000).default(30),
})

type Chunk = Record<string, unknown>
interface StreamOptions { readonly purpose?: string; readonly sessionId?: string; readonly system?: string; readonly tools?: unknown; readonly messages?: readonly unknown[] }

/** The answer prefix the final step starts with (tests and the try command look for it). */
export const TRY_DONE = 'SHADOW-TRY-DONE'

function estimate(options: StreamOptions): number {
  return Math.ceil(((options.system ?? '').length + JSON.stringify(options.tools ?? []).length + JSON.stringify(options.messages ?? []).length) / 4)
}

function* textChunks(index: number, value: string): Generator<Chunk> {
  yield { type: 'block-start', index, blockType: 'text' }
  yield { type: 'text-delta', index, text: value }
  yield { type: 'block-end', index, block: { type: 'text', text: value } }
}

function* answer(value: string, usage: Chunk): Generator<Chunk> {
  yield* textChunks(0, value)
  yield { type: 'usage', usage }
  yield { type: 'finish', reason: { kind: 'stop' } }
}

function* toolCall(id: string, tool: string, args: unknown, usage: Chunk, note: string): Generator<Chunk> {
  const json = JSON.stringify(args)
  yield* textChunks(0, note)
  yield { type: 'block-start', index: 1, blockType: 'tool-call' }
  yield { type: 'tool-call-delta', index: 1, id, name: tool, argumentsDelta: json }
  yield { type: 'block-end', index: 1, block: { type: 'tool-call', id, name: tool, arguments: json } }
  yield { type: 'usage', usage }
  yield { type: 'finish', reason: { kind: 'tool-calls' } }
}

/** Every text string inside a message, in order (the shape differs per role; only `text` fields matter). */
function texts(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) texts(item, out)
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if ((key === 'text' || key === 'content') && typeof item === 'string') out.push(item)
      else texts(item, out)
    }
  }
  return out
}

export function apply(ctx: Context, config: Config = {}): void {
  refuseUnknownKeys(`${name} row`, config, Config)
  const window = config.contextWindow ?? 16_000
  const steps = config.steps ?? 14
  const pad = 'the build cache lives under /var/cache/ci and must be pruned weekly; '.repeat(config.padRepeat ?? 30)
  // Where the script is, per session: requests so far (compaction removes old tool results from the request).
  const progress = new Map<string, number>()
  const stream = async function* (options: StreamOptions): AsyncGenerator<Chunk> {
    const usage = { inputTokens: estimate(options), outputTokens: 40 }
    if ((options.purpose ?? 'conversation') !== 'conversation') {
      yield* answer('a short summary', usage)
      return
    }
    const messages = options.messages ?? []
    const session = options.sessionId ?? ''
    const done = progress.get(session) ?? 0
    progress.set(session, done + 1)
    if (done < steps) {
      const note = done === 0 ? 'step 0: the staging database listens on port 5433 (pg-staging). ' : `step ${done}: `
      yield* toolCall(`try-${done}`, 'todo_write', { todos: [{ content: `item ${done}: prune cache ${done}`, status: 'pending' }] }, usage, `${note}${pad}`)
    } else if (done === steps) {
      yield* toolCall(`try-${done}`, 'shadow_search', { query: 'staging database port' }, usage, 'Which port did step 0 say? It is no longer in my context; searching the shadow.')
    } else {
      // answer from what the recall returned, not from the script: the port is only in the shadow now
      // the search result, not whatever dsh put after it (a runtime-context snapshot may follow the tool result)
      const all = messages.map(message => texts(message).join(' ').replace(/\s+/g, ' ').trim())
      const found = all.findLast(text => text.includes('shadow_search "')) ?? all.at(-1) ?? ''
      const port = /port\W*(\d{2,5})/.exec(found)?.[1] // the hit's snippet marks matched words: **port** 5433
      yield* answer(`${TRY_DONE}: ${steps} cache steps done. ${port === undefined ? `The recall did not find the port: ${found.slice(0, 120)}` : `The staging database uses port ${port}: step 0 said so, and shadow_search brought it back from the shadow store after compaction had taken it off my context.`}`, usage)
    }
  }
  const adapter = {
    providerInfo: (provider: string) => ({ id: provider, name: provider }),
    providerRetryPolicy: () => undefined,
    listModels: () => Promise.resolve([]),
    resolveModel: (provider: string, model: string) => Promise.resolve({ provider, id: model, name: model, context: { contextWindow: window } }),
    stream,
  }
  const llm = (ctx as unknown as { llm: { registerAdapter(providers: string[], adapter: unknown): () => void } }).llm
  ctx.effect(() => llm.registerAdapter(['scripted'], adapter), 'Shadow Context try model')
}

export default { name, inject, Config, apply }
