/**
 * Request pricing as DeepSeek bills it: input cache miss, input cache hit, output. A request's
 * cached part is its longest common prefix with the previous accepted request, unit by unit
 * (system prompt, tool schemas, then each message; the first differing unit contributes its common
 * character prefix). Token counts come from dsh's estimator (`ctx.tokenMeter.estimateMessage`;
 * ceil(chars/4) for system and tools). Requests the provider refused cost nothing and cache nothing.
 */
import type { Message } from '@deepseek-ai/dsh-llm'
import type { DshHarness, ScriptedRequest } from '@dsh-shadow/testing'

/** Prices relative to one input cache-miss token. */
export interface PriceSheet {
  readonly name: string
  /** Cache-hit price / miss price. */
  readonly hit: number
  /** Output price / miss price. */
  readonly output: number
}

/** The three sheets the headline is reported under (issue 10): per 1M tokens as DeepSeek listed them. */
export const PRICE_SHEETS: readonly PriceSheet[] = [
  { name: 'chat (0.07/0.27/1.10)', hit: 0.26, output: 4.07 },
  { name: 'v3.2 (0.028/0.28/0.42)', hit: 0.1, output: 1.5 },
  { name: 'v4.1-flash (0.004/0.2/0.8)', hit: 0.02, output: 4.0 },
]

export interface TokenBill {
  readonly miss: number
  readonly hit: number
  readonly output: number
  readonly requests: number
}

export const addBills = (a: TokenBill, b: TokenBill): TokenBill => ({ miss: a.miss + b.miss, hit: a.hit + b.hit, output: a.output + b.output, requests: a.requests + b.requests })

export const costOf = (bill: TokenBill, sheet: PriceSheet): number => bill.miss + sheet.hit * bill.hit + sheet.output * bill.output

export interface Unit { readonly key: string; readonly tokens: number }

export function units(harness: DshHarness, request: ScriptedRequest): Unit[] {
  const out: Unit[] = []
  const { system, tools, messages } = request.options
  if (system !== undefined) out.push({ key: `system:${system}`, tokens: Math.ceil(system.length / 4) })
  if (tools !== undefined && tools.length > 0) {
    const json = JSON.stringify(tools)
    out.push({ key: `tools:${json}`, tokens: Math.ceil(json.length / 4) })
  }
  for (const message of messages as Message[]) {
    out.push({ key: JSON.stringify({ role: message.role, content: message.content }), tokens: harness.ctx.tokenMeter.estimateMessage(message) })
  }
  return out
}

export function commonChars(a: string, b: string): number {
  const limit = Math.min(a.length, b.length)
  let index = 0
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index += 1
  return index
}

export interface PricedRequest {
  readonly request: ScriptedRequest
  readonly total: number
  readonly hit: number
}

/** Input tokens of each accepted request and how many of them were a cache hit, in order. */
export function priceInputs(harness: DshHarness, requests: readonly ScriptedRequest[]): PricedRequest[] {
  let previous: Unit[] = []
  const priced: PricedRequest[] = []
  for (const request of requests) {
    if (request.rejected) continue
    const current = units(harness, request)
    const total = current.reduce((sum, unit) => sum + unit.tokens, 0)
    let hit = 0
    for (let index = 0; index < current.length; index += 1) {
      const unit = current[index]!
      const before = previous[index]
      if (before === undefined) break
      if (before.key === unit.key) {
        hit += unit.tokens
        continue
      }
      hit += Math.min(unit.tokens, Math.floor(commonChars(before.key, unit.key) / 4))
      break
    }
    priced.push({ request, total, hit })
    previous = current
  }
  return priced
}

/**
 * Tokens of every distinct unit (system, tool schemas, message) the requests carried, each once:
 * what reading everything uncached exactly once would cost — a floor for misses that no engine
 * (with this content) goes below.
 */
export function distinctTokens(harness: DshHarness, requests: readonly ScriptedRequest[]): number {
  const seen = new Set<string>()
  let total = 0
  for (const request of requests) {
    if (request.rejected) continue
    for (const unit of units(harness, request)) {
      if (seen.has(unit.key)) continue
      seen.add(unit.key)
      total += unit.tokens
    }
  }
  return total
}

/** The bill of a set of priced requests, with their output tokens. */
export function billOf(priced: readonly PricedRequest[], outputTokens: ReadonlyMap<number, number>): TokenBill {
  let miss = 0
  let hit = 0
  let output = 0
  for (const entry of priced) {
    miss += entry.total - entry.hit
    hit += entry.hit
    output += outputTokens.get(entry.request.index) ?? 0
  }
  return { miss, hit, output, requests: priced.length }
}
