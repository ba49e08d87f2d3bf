/**
 * NeedsModel: the scripted model playing an agent scenario that needs its past. Still the one fake
 * and still a real `LlmAdapter` (it extends ScriptedModel): every reply, recovery call included, is
 * a real request through dsh's loop.
 *
 * At the first request of a turn with needs it checks whether each need's exact fact is in the
 * request it received. If not, it recovers as a diligent model would with what the composition
 * offers: `recall` — shadow_search with the need's description, then shadow_read on the hits, at
 * most 3 calls per need, success only if the exact fact came back in a tool result; `rerun` —
 * re-run the tool that produced the fact when the scenario says it is re-runnable, else fail.
 * Recovery calls of several needs go out in parallel in one step. Then the turn's scripted steps run.
 *
 * Compaction requests (dsh's compaction-basic summarizer) get a generous stand-in summary: within
 * the output cap it keeps every fact the scenario marks important that the summarized input holds,
 * most recent first, then a digest of the rest.
 */
import type { ContentBlock, Message } from '@deepseek-ai/dsh-llm'
import type { AgentScenario, Need } from './needs/schema.ts'
import type { ScenarioToolbox } from './needs/toolbox.ts'
import { blockText, messageText, ScriptedModel, type ScriptedReply, type ScriptedRequest, type ScriptedToolCall } from './scripted-model.ts'

export type Recovery = 'recall' | 'rerun' | 'none'

export const SEARCH_TOOL_NAME = 'shadow_search'
export const READ_TOOL_NAME = 'shadow_read'
/** Tool calls one need may spend on recall. */
export const MAX_RECALL_CALLS = 3

export interface NeedOutcome {
  readonly need: Need
  readonly satisfied: boolean
  /** Visible in the request without any tool call. */
  readonly fromSurface: boolean
  /** How it was met: surface, search (the snippet), read, rerun; or why it failed. */
  readonly via: 'surface' | 'search' | 'read' | 'rerun' | 'not-found' | 'not-rerunnable' | 'no-recall-tool' | 'turn-failed'
  readonly calls: number
}

export interface NeedsModelOptions {
  readonly scenario: AgentScenario
  readonly toolbox: ScenarioToolbox
  readonly recovery: Recovery
  readonly contextWindow?: number
  /** compaction-basic's summary output cap, tokens (its `maxTokens`, default 8 192). */
  readonly summaryCapTokens?: number
}

/** Hit ids of a shadow_search result, best first. */
export function searchHitIds(text: string): string[] {
  return [...text.matchAll(/^\d+\. (\S+) ·/gm)].map(match => match[1]!)
}

interface Pending {
  readonly need: Need
  calls: number
  candidates: string[]
  /** Position of this need's call in the last recovery step. */
  slot: number
}

/** Text of the results of the newest assistant step's calls, in call order. */
function lastStepResults(messages: readonly Message[]): string[] {
  let assistant = -1
  for (let index = messages.length - 1; index >= 0; index -= 1) if (messages[index]!.role === 'assistant') { assistant = index; break }
  if (assistant === -1) return []
  const calls = messages[assistant]!.content.filter((block): block is Extract<ContentBlock, { type: 'tool-call' }> => block.type === 'tool-call')
  const results = new Map<string, string>()
  for (const message of messages.slice(assistant + 1)) {
    for (const block of message.content) if (block.type === 'tool-result') results.set(block.toolCallId, blockText(block))
  }
  return calls.map(call => results.get(call.id) ?? '')
}

export class NeedsModel extends ScriptedModel {
  readonly scenario: AgentScenario
  readonly outcomes: NeedOutcome[] = []
  /** Output tokens of each request the model answered, by request index (reasoning included). */
  readonly outputTokens = new Map<number, number>()
  /** Indexes of the requests that were recovery steps. */
  readonly recoveryRequests = new Set<number>()
  private readonly toolbox: ScenarioToolbox
  private readonly recovery: Recovery
  private readonly summaryCap: number
  private turn: { index: number; step: number; checked: boolean; pending: Pending[]; used: string[]; missed: string[] } | undefined

  constructor(options: NeedsModelOptions) {
    const box: { model?: NeedsModel } = {}
    super({
      ...(options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow }),
      fallback: request => box.model!.reply(request),
      summarize: request => box.model!.summary(request),
    })
    box.model = this
    this.scenario = options.scenario
    this.toolbox = options.toolbox
    this.recovery = options.recovery
    this.summaryCap = options.summaryCapTokens ?? 8_192
  }

  /** Start the scenario turn with this 0-based index (the driver sends its prompt next). */
  beginTurn(index: number): void {
    this.finishTurn()
    this.turn = { index, step: 0, checked: false, pending: [], used: [], missed: [] }
  }

  /** Close the current turn: needs it never got to (the turn failed) count as failed. */
  finishTurn(): void {
    const turn = this.turn
    if (turn === undefined) return
    const number = turn.index + 1
    const decided = new Set(this.outcomes.filter(outcome => outcome.need.turn === number).map(outcome => outcome.need.id))
    for (const need of this.scenario.needs) {
      if (need.turn === number && !decided.has(need.id)) this.outcomes.push({ need, satisfied: false, fromSurface: false, via: 'turn-failed', calls: 0 })
    }
    this.turn = undefined
  }

  private settle(need: Need, outcome: Omit<NeedOutcome, 'need'>): void {
    this.outcomes.push({ need, ...outcome })
    if (outcome.satisfied) this.turn!.used.push(need.fact)
    else this.turn!.missed.push(need.query)
  }

  private reply(request: ScriptedRequest): ScriptedReply {
    const reply = this.decide(request)
    let chars = 0
    if (reply.kind === 'text') chars = reply.text.length + (reply.reasoning?.length ?? 0)
    if (reply.kind === 'tools') chars = (reply.text?.length ?? 0) + reply.calls.reduce((sum, call) => sum + call.name.length + JSON.stringify(call.args).length, 0)
    this.outputTokens.set(request.index, Math.ceil(chars / 4))
    return reply
  }

  private decide(request: ScriptedRequest): ScriptedReply {
    const turn = this.turn
    if (turn === undefined) return { kind: 'text', text: 'Done.' }
    const script = this.scenario.turns[turn.index]!
    if (!turn.checked) {
      turn.checked = true
      const visible = request.text()
      for (const need of this.scenario.needs) {
        if (need.turn !== turn.index + 1) continue
        if (visible.includes(need.fact)) this.settle(need, { satisfied: true, fromSurface: true, via: 'surface', calls: 0 })
        else turn.pending.push({ need, calls: 0, candidates: [], slot: -1 })
      }
    } else if (turn.pending.length > 0) {
      this.absorb(turn, lastStepResults(request.options.messages))
    }
    if (turn.pending.length > 0) {
      const calls = this.recoveryCalls(turn, request)
      if (calls.length > 0) {
        this.recoveryRequests.add(request.index)
        return { kind: 'tools', text: 'Checking earlier context for what this needs.', calls }
      }
    }
    const step = script.steps[Math.min(turn.step, script.steps.length - 1)]!
    turn.step += 1
    if (step.calls === undefined) {
      const notes = [
        ...(turn.used.length > 0 ? [`(used: ${turn.used.join('; ')})`] : []),
        ...(turn.missed.length > 0 ? [`(could not find: ${turn.missed.join('; ')})`] : []),
      ]
      return { kind: 'text', text: [step.text ?? 'Done.', ...notes].join(' '), ...(step.reasoning === undefined ? {} : { reasoning: step.reasoning }) }
    }
    return { kind: 'tools', ...(step.text === undefined ? {} : { text: step.text }), calls: step.calls.map(call => ({ name: call.name, args: call.args })) }
  }

  /** Read the results of the last recovery step: which needs came back. */
  private absorb(turn: NonNullable<NeedsModel['turn']>, results: readonly string[]): void {
    for (const pending of turn.pending.slice()) { // a copy: settled needs leave the list
      const text = results[pending.slot] ?? ''
      // Search snippets mark matched words with **…**; the model reads through the marks.
      const found = text.replaceAll('**', '').includes(pending.need.fact)
      const lastWasSearch = pending.calls === 1 && this.recovery === 'recall'
      if (found) {
        turn.pending.splice(turn.pending.indexOf(pending), 1)
        this.settle(pending.need, { satisfied: true, fromSurface: false, via: this.recovery === 'rerun' ? 'rerun' : lastWasSearch ? 'search' : 'read', calls: pending.calls })
        continue
      }
      if (lastWasSearch) pending.candidates = searchHitIds(text).slice(0, MAX_RECALL_CALLS - 1)
    }
  }

  /** The next call of every pending need; needs with nothing left to try fail here. */
  private recoveryCalls(turn: NonNullable<NeedsModel['turn']>, request: ScriptedRequest): ScriptedToolCall[] {
    const calls: ScriptedToolCall[] = []
    const hasSearch = request.options.tools?.some(tool => tool.name === SEARCH_TOOL_NAME) ?? false
    for (const pending of turn.pending.slice()) { // a copy: settled needs leave the list
      let call: ScriptedToolCall | undefined
      let reason: NeedOutcome['via'] = 'not-found'
      if (this.recovery === 'recall') {
        if (!hasSearch) reason = 'no-recall-tool'
        else if (pending.calls === 0) call = { name: SEARCH_TOOL_NAME, args: { query: pending.need.query } }
        else if (pending.calls < MAX_RECALL_CALLS && pending.candidates.length > 0) call = { name: READ_TOOL_NAME, args: { id: pending.candidates.shift()!, before: 0, after: 0 } }
      } else if (this.recovery === 'rerun') {
        if (pending.need.rerun === undefined) reason = 'not-rerunnable'
        else if (pending.calls === 0) {
          this.toolbox.prime(pending.need.rerun)
          call = { name: pending.need.rerun.name, args: pending.need.rerun.args }
        }
      } else reason = 'not-found'
      if (call === undefined) {
        turn.pending.splice(turn.pending.indexOf(pending), 1)
        this.settle(pending.need, { satisfied: false, fromSurface: false, via: reason, calls: pending.calls })
        continue
      }
      pending.calls += 1
      pending.slot = calls.length
      calls.push(call)
    }
    return calls
  }

  /** The generous stand-in for compaction-basic's summarizer. */
  private summary(request: ScriptedRequest): string {
    const input = request.text()
    const budgetChars = this.summaryCap * 4
    const kept = this.scenario.needs
      .filter(need => need.important && input.includes(need.fact))
      .map(need => ({ fact: need.fact, at: input.lastIndexOf(need.fact) }))
      .toSorted((a, b) => b.at - a.at)
    const lines = ['## Primary Request and Intent', '- Continue the coding tasks the user gave, in order.', '', '## Critical Context']
    const seen = new Set<string>()
    let used = lines.join('\n').length
    for (const { fact } of kept) {
      if (seen.has(fact)) continue
      const line = `- ${fact}`
      if (used + line.length + 1 > budgetChars) break
      seen.add(fact)
      lines.push(line)
      used += line.length + 1
    }
    // The rest of a realistic summary: lines sampled across the input, about 8% of it, capped.
    const filler = Math.min(budgetChars - used, Math.min(8_000, Math.max(400, Math.floor(input.length * 0.08))))
    lines.push('', '## Current Work')
    // (the last message is basic's own instruction, not conversation)
    const source = request.options.messages.slice(0, -1).map(messageText).join('\n').split('\n').map(line => line.trim()).filter(line => line.length > 0)
    const stride = Math.max(1, Math.floor(source.length / 60))
    let added = 0
    for (let index = source.length - 1; index >= 0 && added < filler; index -= stride) {
      const line = `- ${source[index]!.slice(0, 160)}`
      lines.push(line)
      added += line.length + 1
    }
    const text = lines.join('\n')
    this.outputTokens.set(request.index, Math.ceil(text.length / 4))
    return text
  }
}
