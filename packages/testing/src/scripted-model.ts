/**
 * The scripted model: the one fake this project allows. It is a real `LlmAdapter` registered on
 * `ctx.llm`, so dsh's loop, compaction and token meter talk to it exactly as they talk to DeepSeek:
 * streamed blocks, tool calls, usage figures, a context window, and the provider's
 * context-window-exceeded error (raised on demand, or whenever a request does not fit the window).
 *
 * Test support only. The demo also uses it as its offline default.
 */
import { randomBytes } from 'node:crypto'
import {
  CONTEXT_WINDOW_EXCEEDED_CODE,
  CallId,
  LlmAdapter,
  LlmError,
  type ContentBlock,
  type GenerateOptions,
  type LlmResolvedModelInfo,
  type Message,
  type StreamChunk,
} from '@deepseek-ai/dsh-llm'
import { validateRequest } from './request-validator.ts'

/** One tool call the script asks the loop to run. `args` is JSON-encoded unless already a string. */
export interface ScriptedToolCall {
  readonly name: string
  readonly args: unknown
}

/** What the scripted model answers to one conversation request. */
export type ScriptedReply =
  | { readonly kind: 'text'; readonly text: string; readonly reasoning?: string }
  | { readonly kind: 'tools'; readonly text?: string; readonly reasoning?: string; readonly calls: readonly ScriptedToolCall[] }
  | { readonly kind: 'overflow'; readonly message?: string }
  | { readonly kind: 'error'; readonly code: string; readonly message: string }

/** A read-only view of one request the adapter received. */
export interface ScriptedRequest {
  readonly index: number
  readonly purpose: 'conversation' | 'compaction' | 'session-title'
  readonly options: GenerateOptions
  /** Heuristic input size, the same shape as dsh's token meter (chars/4 + per-block overhead). */
  readonly inputTokens: number
  /** All text of the request's messages, in order. */
  text(): string
  /** Text of the last message (the newest user input or tool result). */
  lastText(): string
  /** Whether the provider refused it (context window exceeded or a scripted error): nothing was billed or cached. */
  readonly rejected: boolean
}

export type ScriptStep = ScriptedReply | ((request: ScriptedRequest) => ScriptedReply)

export interface ScriptedModelOptions {
  /** Context window advertised through `resolveModel` and enforced on every request. Default 32 000. */
  readonly contextWindow?: number
  /** Raise context-window-exceeded when a request's estimated input exceeds the window. Default true. */
  readonly enforceWindow?: boolean
  /** Answer when the script queue is empty. Default: a short text reply. */
  readonly fallback?: ScriptStep
  /**
   * Summary text for `purpose: 'compaction'` requests (dsh's compaction-basic summarizer).
   * Default: a digest of the request's lines, about 8% of the input, at most 2 000 tokens.
   */
  readonly summarize?: (request: ScriptedRequest) => string
  /** Size of streamed text deltas in characters. Default 64. */
  readonly deltaChars?: number
  /**
   * Refuse, as DeepSeek's API does with HTTP 400, any request it would refuse (see
   * request-validator.ts); every refusal is also tallied for the test run. Default true.
   */
  readonly validate?: boolean
}

/** Heuristic token price of a text, matching dsh's estimator (ceil(chars / 4)). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 4)
}

/** Heuristic input price of a request: system, tool schemas, and each message block. */
export function estimateRequestTokens(options: Pick<GenerateOptions, 'system' | 'tools' | 'messages'>): number {
  let total = 0
  if (options.system !== undefined) total += estimateTextTokens(options.system) + 4
  if (options.tools !== undefined && options.tools.length > 0) total += estimateTextTokens(JSON.stringify(options.tools))
  for (const message of options.messages) total += estimateMessageTokens(message)
  return total
}

function estimateMessageTokens(message: Message): number {
  let total = 4
  for (const block of message.content) total += estimateTextTokens(blockText(block)) + 4
  return total
}

/** Plain text of one content block (tool calls as name + arguments, results recursively). */
export function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      return block.text
    case 'tool-call':
      return `${block.name} ${block.arguments}`
    case 'tool-result':
      return block.content.map(blockText).join('\n')
    case 'image':
      return ''
  }
}

export function messageText(message: Message): string {
  return message.content.map(blockText).join('\n')
}

function defaultSummary(request: ScriptedRequest): string {
  const lines = request.text().split('\n').map(line => line.trim()).filter(line => line.length > 0)
  const budgetChars = Math.min(8_000, Math.max(400, Math.floor(request.inputTokens * 4 * 0.08)))
  const picked: string[] = ['## Summary of the earlier conversation']
  let used = picked[0]!.length
  const stride = Math.max(1, Math.floor(lines.length / 60))
  for (let index = 0; index < lines.length && used < budgetChars; index += stride) {
    const line = `- ${lines[index]!.slice(0, 160)}`
    picked.push(line)
    used += line.length + 1
  }
  return picked.join('\n')
}

/**
 * A programmable model. Conversation requests consume the script in order; compaction requests
 * (dsh's summarizer) are answered by `summarize`. Every request is recorded.
 */
export class ScriptedModel extends LlmAdapter {
  readonly contextWindow: number
  readonly requests: ScriptedRequest[] = []
  private readonly queue: ScriptStep[] = []
  private readonly enforceWindow: boolean
  private readonly fallback: ScriptStep
  private readonly summarize: (request: ScriptedRequest) => string
  private readonly deltaChars: number
  private readonly salt = randomBytes(3).toString('hex')
  private callCounter = 0
  private forcedOverflows = 0
  private readonly validate: boolean
  /** Reasoning streamed with each call's assistant message (DeepSeek wants it back within the turn). */
  private readonly reasoningByCall = new Map<string, string>()

  constructor(options: ScriptedModelOptions = {}) {
    super()
    this.contextWindow = options.contextWindow ?? 32_000
    this.enforceWindow = options.enforceWindow ?? true
    this.fallback = options.fallback ?? { kind: 'text', text: 'Done.' }
    this.summarize = options.summarize ?? defaultSummary
    this.deltaChars = options.deltaChars ?? 64
    this.validate = options.validate ?? true
  }

  /** Queue replies for the next conversation requests. */
  enqueue(...steps: ScriptStep[]): this {
    this.queue.push(...steps)
    return this
  }

  /** Drop replies still queued (a scripted agent that finished early). */
  clearQueue(): this {
    this.queue.length = 0
    return this
  }

  /** Replies still queued. */
  get pending(): number {
    return this.queue.length
  }

  /** Make the next `count` conversation requests fail with context-window-exceeded. */
  overflowNext(count = 1): this {
    this.forcedOverflows += count
    return this
  }

  /** Forced overflows still queued. */
  get pendingOverflows(): number {
    return this.forcedOverflows
  }

  /** Drop any forced overflows still queued. */
  clearOverflows(): this {
    this.forcedOverflows = 0
    return this
  }

  /** Conversation requests only (what the loop sent, excluding compaction summaries). */
  conversationRequests(): ScriptedRequest[] {
    return this.requests.filter(request => request.purpose === 'conversation')
  }

  override resolveModel(provider: string, model: string): Promise<LlmResolvedModelInfo> {
    return Promise.resolve({ provider, id: model, name: model, context: { contextWindow: this.contextWindow } })
  }

  override async * stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const request = this.record(options)
    if (this.validate) {
      const problems = validateRequest(request.purpose, options.messages, { reasoningFor: id => this.reasoningByCall.get(id) })
      if (problems.length > 0) {
        request.rejected = true
        throw new LlmError(`scripted provider: HTTP 400, DeepSeek would refuse this request: ${problems.join('; ')}`, 'INVALID_REQUEST')
      }
    }
    if (request.purpose === 'compaction' || request.purpose === 'session-title') {
      const text = request.purpose === 'compaction' ? this.summarize(request) : 'Scripted session'
      yield * this.emitText(text, undefined)
      yield * this.finish(request, text.length, 'stop')
      return
    }
    if (this.forcedOverflows > 0) {
      this.forcedOverflows -= 1
      request.rejected = true
      throw new LlmError(`scripted provider: request of ~${request.inputTokens} tokens rejected (forced overflow)`, CONTEXT_WINDOW_EXCEEDED_CODE)
    }
    if (this.enforceWindow && request.inputTokens > this.contextWindow) {
      request.rejected = true
      throw new LlmError(`scripted provider: request of ~${request.inputTokens} tokens exceeds the ${this.contextWindow}-token context window`, CONTEXT_WINDOW_EXCEEDED_CODE)
    }
    const step = this.queue.shift() ?? this.fallback
    const reply = typeof step === 'function' ? step(request) : step
    if (reply.kind === 'overflow' || reply.kind === 'error') request.rejected = true
    switch (reply.kind) {
      case 'overflow':
        throw new LlmError(reply.message ?? 'scripted provider: context window exceeded', CONTEXT_WINDOW_EXCEEDED_CODE)
      case 'error':
        throw new LlmError(reply.message, reply.code)
      case 'text':
        yield * this.emitText(reply.text, reply.reasoning)
        yield * this.finish(request, reply.text.length, 'stop')
        return
      case 'tools': {
        let index = 0
        let outputChars = 0
        if (reply.reasoning !== undefined && reply.reasoning.length > 0) {
          yield * this.emitReasoningBlock(index++, reply.reasoning)
          outputChars += reply.reasoning.length
        }
        if (reply.text !== undefined && reply.text.length > 0) {
          yield * this.emitTextBlock(index++, reply.text)
          outputChars += reply.text.length
        }
        for (const call of reply.calls) {
          const id = CallId(`call_${this.salt}_${++this.callCounter}`)
          if (reply.reasoning !== undefined && reply.reasoning.length > 0) this.reasoningByCall.set(id, reply.reasoning)
          const args = typeof call.args === 'string' ? call.args : JSON.stringify(call.args)
          yield { type: 'block-start', index, blockType: 'tool-call' }
          yield { type: 'tool-call-delta', index, id, name: call.name, argumentsDelta: args }
          yield { type: 'block-end', index, block: { type: 'tool-call', id, name: call.name, arguments: args } }
          outputChars += call.name.length + args.length
          index += 1
        }
        yield * this.finish(request, outputChars, 'tool-calls')
      }
    }
  }

  protected record(options: GenerateOptions): ScriptedRequest & { rejected: boolean } {
    const purpose = options.purpose ?? 'conversation'
    const request: ScriptedRequest & { rejected: boolean } = {
      rejected: false,
      index: this.requests.length,
      purpose,
      options,
      inputTokens: estimateRequestTokens(options),
      text: () => options.messages.map(messageText).join('\n'),
      lastText: () => {
        const last = options.messages.at(-1)
        return last === undefined ? '' : messageText(last)
      },
    }
    this.requests.push(request)
    return request
  }

  private * emitText(text: string, reasoning: string | undefined): Iterable<StreamChunk> {
    let index = 0
    if (reasoning !== undefined) yield * this.emitReasoningBlock(index++, reasoning)
    yield * this.emitTextBlock(index, text)
  }

  private * emitReasoningBlock(index: number, text: string): Iterable<StreamChunk> {
    yield { type: 'block-start', index, blockType: 'reasoning' }
    yield { type: 'reasoning-delta', index, text }
    yield { type: 'block-end', index, block: { type: 'reasoning', text } }
  }

  private * emitTextBlock(index: number, text: string): Iterable<StreamChunk> {
    yield { type: 'block-start', index, blockType: 'text' }
    for (let offset = 0; offset < text.length; offset += this.deltaChars) {
      yield { type: 'text-delta', index, text: text.slice(offset, offset + this.deltaChars) }
    }
    yield { type: 'block-end', index, block: { type: 'text', text } }
  }

  private * finish(request: ScriptedRequest, outputChars: number, kind: 'stop' | 'tool-calls'): Iterable<StreamChunk> {
    yield { type: 'usage', usage: { inputTokens: request.inputTokens, outputTokens: Math.ceil(outputChars / 4) } }
    yield { type: 'finish', reason: { kind } }
  }
}
