/**
 * Cost decomposition of one run: where the input and output tokens of every request came from.
 * Same unit walk and cache model as pricing.ts (longest common prefix with the previous accepted
 * request). Each missed input token is either *new* (the unit — system prompt, tool schemas, one
 * message — was never in an earlier request: the floor, reading it once) or *re-missed* (it was
 * cached before, but something earlier in the request changed — a compaction rewrote the surface —
 * so the prefix broke there). Units are labelled by source: prompt (system + tool schemas),
 * checkpoint (our checkpoints and indexes, basic's summaries), recall (recovery calls and their
 * results), tool (other tool outputs), talk (user prompts, assistant text and calls).
 */
import type { Message } from '@deepseek-ai/dsh-llm'
import type { DshHarness, ScriptedRequest } from '@dsh-shadow/testing'
import { printTable } from '../report.ts'
import { commonChars, units, type PriceSheet } from './pricing.ts'

export const SOURCES = ['prompt', 'checkpoint', 'recall', 'tool', 'talk'] as const
export type Source = (typeof SOURCES)[number]
export const KINDS = ['conversation', 'recovery', 'compaction'] as const
export type RequestKind = (typeof KINDS)[number]

type BySource = Record<Source, number>
interface KindTotals { requests: number; miss: number; hit: number; output: number }

export interface Breakdown {
  readonly newMiss: BySource
  readonly reMiss: BySource
  readonly hit: BySource
  readonly byKind: Record<RequestKind, KindTotals>
  /** Requests whose prefix broke before their last unit that was already known (a rewrite). */
  readonly breaks: number
  /** Prompt (system + tool schemas) tokens of one conversation request, the last one seen. */
  readonly promptTokens: number
}

const zero = (): BySource => ({ prompt: 0, checkpoint: 0, recall: 0, tool: 0, talk: 0 })
const kindZero = (): Record<RequestKind, KindTotals> => ({
  conversation: { requests: 0, miss: 0, hit: 0, output: 0 },
  recovery: { requests: 0, miss: 0, hit: 0, output: 0 },
  compaction: { requests: 0, miss: 0, hit: 0, output: 0 },
})

const RECOVERY_TEXT = 'Checking earlier context'

function textOf(message: Message): string {
  return message.content.map(block => (block.type === 'text' ? block.text : '')).join('')
}

/** The source of each unit of a request, aligned with pricing.ts's `units`. */
function sourcesOf(request: ScriptedRequest, recallCalls: Set<string>): Source[] {
  const out: Source[] = []
  const { system, tools, messages } = request.options
  if (system !== undefined) out.push('prompt')
  if (tools !== undefined && tools.length > 0) out.push('prompt')
  for (const message of messages as Message[]) {
    if (message.role === 'assistant') {
      const recovery = textOf(message).startsWith(RECOVERY_TEXT)
      for (const block of message.content) if (block.type === 'tool-call' && recovery) recallCalls.add(block.id)
      out.push(recovery ? 'recall' : 'talk')
    } else if (message.content.some(block => block.type === 'tool-result')) {
      const ids = message.content.flatMap(block => (block.type === 'tool-result' ? [block.toolCallId] : []))
      out.push(ids.some(id => recallCalls.has(id)) ? 'recall' : 'tool')
    } else {
      const text = textOf(message)
      out.push(text.startsWith('[Shadow Context') || text.includes('<compacted-summary>') ? 'checkpoint' : 'talk')
    }
  }
  return out
}

export function breakdownOf(harness: DshHarness, requests: readonly ScriptedRequest[], outputTokens: ReadonlyMap<number, number>, recoveryRequests: ReadonlySet<number>): Breakdown {
  const newMiss = zero()
  const reMiss = zero()
  const hit = zero()
  const byKind = kindZero()
  const seen = new Set<string>()
  const recallCalls = new Set<string>()
  let previous: string[] = []
  let breaks = 0
  let promptTokens = 0
  for (const request of requests) {
    if (request.rejected || request.purpose === 'session-title') continue
    const current = units(harness, request)
    const sources = sourcesOf(request, recallCalls)
    const kind: RequestKind = request.purpose === 'compaction' ? 'compaction' : recoveryRequests.has(request.index) ? 'recovery' : 'conversation'
    const totals = byKind[kind]
    totals.requests += 1
    totals.output += outputTokens.get(request.index) ?? 0
    if (kind === 'conversation') promptTokens = current.reduce((sum, unit, index) => sum + (sources[index] === 'prompt' ? unit.tokens : 0), 0)
    let broken = false
    let rewrote = false
    for (const [index, unit] of current.entries()) {
      const source = sources[index]!
      let cached = 0
      if (!broken) {
        const before = previous[index]
        if (before === unit.key) cached = unit.tokens
        else {
          broken = true
          if (before !== undefined) cached = Math.min(unit.tokens, Math.floor(commonChars(before, unit.key) / 4))
        }
      }
      const missed = unit.tokens - cached
      hit[source] += cached
      totals.hit += cached
      totals.miss += missed
      if (seen.has(unit.key)) {
        reMiss[source] += missed
        if (missed > 0) rewrote = true
      } else newMiss[source] += missed
      seen.add(unit.key)
    }
    if (rewrote) breaks += 1
    previous = current.map(unit => unit.key)
  }
  return { newMiss, reMiss, hit, byKind, breaks, promptTokens }
}

export function addBreakdowns(a: Breakdown, b: Breakdown): Breakdown {
  const add = (x: BySource, y: BySource): BySource => Object.fromEntries(SOURCES.map(source => [source, x[source] + y[source]])) as BySource
  const byKind = kindZero()
  for (const kind of KINDS) for (const key of ['requests', 'miss', 'hit', 'output'] as const) byKind[kind][key] = a.byKind[kind][key] + b.byKind[kind][key]
  return { newMiss: add(a.newMiss, b.newMiss), reMiss: add(a.reMiss, b.reMiss), hit: add(a.hit, b.hit), byKind, breaks: a.breaks + b.breaks, promptTokens: Math.max(a.promptTokens, b.promptTokens) }
}

export interface BreakdownRow {
  readonly label: string
  readonly breakdown: Breakdown
  readonly passes: number
}

const k = (tokens: number): string => (tokens / 1000).toFixed(0)
const total = (values: BySource): number => SOURCES.reduce((sum, source) => sum + values[source], 0)

/** The decomposition tables: input tokens by miss kind and source, then by request kind, then cost shares. */
export function printBreakdown(rows: readonly BreakdownRow[], sheets: readonly PriceSheet[]): void {
  printTable('\ncost decomposition: input tokens (k) — new miss (floor) / re-missed after a rewrite / cache hit, by source', [
    'run', 'new miss', ...SOURCES.map(source => `new ${source}`), 're-miss', ...SOURCES.map(source => `re ${source}`), 'rewrites', 'passes', 're-miss/pass', 'hit', ...SOURCES.map(source => `hit ${source}`), 'prompt tok/req',
  ], rows.map(({ label, breakdown: b, passes }) => [
    label, k(total(b.newMiss)), ...SOURCES.map(source => k(b.newMiss[source])), k(total(b.reMiss)), ...SOURCES.map(source => k(b.reMiss[source])),
    b.breaks, passes, passes === 0 ? '-' : Math.round(total(b.reMiss) / passes), k(total(b.hit)), ...SOURCES.map(source => k(b.hit[source])), b.promptTokens,
  ]))
  printTable('cost decomposition: by request kind (k tokens; requests)', [
    'run', ...KINDS.flatMap(kind => [`${kind} req`, `${kind} miss`, `${kind} hit`, `${kind} out`]),
  ], rows.map(({ label, breakdown: b }) => [label, ...KINDS.flatMap(kind => [b.byKind[kind].requests, k(b.byKind[kind].miss), k(b.byKind[kind].hit), k(b.byKind[kind].output)])]))
  printTable('cost decomposition: share of each sheet\'s cost (k miss-token equivalents)', [
    'run', ...sheets.flatMap(sheet => {
      const name = sheet.name.split(' ')[0]
      return [`${name} floor`, `${name} re-miss`, `${name} hits`, `${name} talk out`, `${name} recall out`, `${name} summary out`]
    }),
  ], rows.map(({ label, breakdown: b }) => [label, ...sheets.flatMap(sheet => [
    k(total(b.newMiss)), k(total(b.reMiss)), k(sheet.hit * total(b.hit)),
    k(sheet.output * b.byKind.conversation.output), k(sheet.output * b.byKind.recovery.output), k(sheet.output * b.byKind.compaction.output),
  ])]))
}
