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
import type { ContentBlock, GenerateOptions, Message, StreamChunk } from '@deepseek-ai/dsh-llm'
import { judgeDelegatedTurn, type DelegatedVia, type TurnDelegate } from './needs/delegate.ts'
import type { AbsentQuestion, AgentScenario, Need } from './needs/schema.ts'
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
  /**
   * How it was met: surface, proactive (only in this turn's proactive recall message), search (the
   * hit list itself showed it), read, rerun; or why it failed.
   */
  readonly via: 'surface' | 'proactive' | 'search' | 'read' | 'rerun' | 'not-found' | 'not-rerunnable' | 'no-recall-tool' | 'turn-failed' | DelegatedVia
  /** Recovery tool calls spent on it (0 from the surface). */
  readonly calls: number
}

/** How a never-discussed question went. */
export interface AbsentOutcome {
  readonly question: AbsentQuestion
  /** The search said outright that the term occurs nowhere (or in no hit): the model stops after one call. */
  readonly explicit: boolean
  readonly calls: number
  /** A proactive recall message came before the question (a false positive: there is nothing to recall). */
  readonly proactive: boolean
  /** The term came back in a tool result or recall message (the scenario's absence label would be wrong). */
  readonly contradicted: boolean
}

/** A proactive recall message that arrived at the start of a turn. */
export interface ProactiveFiring {
  readonly turn: number
  readonly tokens: number
  /** It holds the exact fact of a need of this turn. */
  readonly heldFact: boolean
  /** The turn asks a never-discussed question. */
  readonly neverDiscussed: boolean
}

export interface NeedsModelOptions {
  readonly scenario: AgentScenario
  readonly toolbox: ScenarioToolbox
  readonly recovery: Recovery
  readonly contextWindow?: number
  /** compaction-basic's summary output cap, tokens (its `maxTokens`, default 8 192). */
  readonly summaryCapTokens?: number
  /** A real model that answers the turns with needs (judged on its answer); the script plays the rest. */
  readonly delegate?: TurnDelegate
}

/** Hit ids of a shadow_search result, best first. */
export function searchHitIds(text: string): string[] {
  return searchHits(text).map(hit => hit.id)
}

/** A hit line of a shadow_search result: its id, its passage start, whether it is on the surface. */
export interface ListedHit {
  readonly id: string
  /** Start of the matching passage of a long message (0: read from the start). */
  readonly at: number
  readonly onSurface: boolean
  /** A tool result whose call (arguments included) is another message: read the call with it. */
  readonly hasCall: boolean
}

export function searchHits(text: string): ListedHit[] {
  return [...text.matchAll(/^\d+\. (\S+) ·(.*)$/gm)].map(match => {
    const rest = match[2]!
    const passage = /· chars (\d+)–\d+ of/.exec(rest)
    return { id: match[1]!, at: passage === null ? 0 : Number(passage[1]), onSurface: rest.includes('· on your surface now'), hasCall: rest.includes(' (called in ') }
  })
}

/** First line of a proactive recall message (see ShadowRecall). */
export const PROACTIVE_PREFIX = '[Shadow Context recall'

/**
 * What a recall tool result shows once the search's echo of the query is removed and its `**…**`
 * match marks are read through: a fact counts only if it came back, not because the question held it.
 */
export function recalledText(result: string, query: string | undefined): string {
  const body = query === undefined ? result : result.replaceAll(JSON.stringify(query), '')
  return body.replaceAll('**', '')
}

interface Pending {
  readonly need: Need
  calls: number
  candidates: ListedHit[]
  /** Position of this need's call in the last recovery step. */
  slot: number
}

interface PendingAbsent {
  readonly question: AbsentQuestion
  calls: number
  candidates: ListedHit[]
  slot: number
  explicit: boolean
  contradicted: boolean
  readonly proactive: boolean
}

/** Messages of the newest turn's input: after the last assistant message. */
function turnInput(messages: readonly Message[]): Message[] {
  const last = messages.findLastIndex(message => message.role === 'assistant')
  return messages.slice(last + 1)
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

/**
 * The read a hit suggests: at its passage for a long message; a tool result with its call (what was
 * written or run is in the call's arguments); the message alone otherwise.
 */
function readCall(hit: ListedHit): ScriptedToolCall {
  if (hit.at > 0) return { name: READ_TOOL_NAME, args: { id: hit.id, at: hit.at, before: 0, after: 0 } }
  return { name: READ_TOOL_NAME, args: { id: hit.id, before: hit.hasCall ? 1 : 0, after: 0 } }
}

export class NeedsModel extends ScriptedModel {
  readonly scenario: AgentScenario
  readonly outcomes: NeedOutcome[] = []
  /** Output tokens of each request the model answered, by request index (reasoning included). */
  readonly outputTokens = new Map<number, number>()
  /** Indexes of the requests that were recovery steps. */
  readonly recoveryRequests = new Set<number>()
  readonly absentOutcomes: AbsentOutcome[] = []
  readonly proactiveFirings: ProactiveFiring[] = []
  /** Indexes of the requests the delegate (a real model) answered. */
  readonly delegatedRequests = new Set<number>()
  private readonly delegate: TurnDelegate | undefined
  private readonly toolbox: ScenarioToolbox
  private readonly recovery: Recovery
  private readonly summaryCap: number
  private turn: { index: number; step: number; checked: boolean; pending: Pending[]; absent: PendingAbsent[]; used: string[]; missed: string[]; delegated: number } | undefined

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
    this.delegate = options.delegate
  }

  /** Whether the delegate answers this turn (0-based): it has needs. */
  private delegates(index: number): boolean {
    return this.delegate !== undefined && this.scenario.needs.some(need => need.turn === index + 1)
  }

  /** The prompt the driver sends for this turn (0-based): with the delegate's instruction on its turns. */
  promptFor(index: number): string {
    const prompt = this.scenario.turns[index]!.prompt
    return this.delegates(index) ? `${prompt}\n\n${this.delegate!.instruction}` : prompt
  }

  override async * stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const turn = this.turn
    const delegate = this.delegate
    if (delegate === undefined || turn === undefined || (options.purpose ?? 'conversation') !== 'conversation' || !this.delegates(turn.index) || turn.delegated >= delegate.maxRequests) {
      yield * super.stream(options)
      return
    }
    turn.delegated += 1
    turn.checked = true // the script does not play this turn
    const request = this.record(options)
    this.delegatedRequests.add(request.index)
    let answer = ''
    let finish: string | undefined
    try {
      for await (const chunk of delegate.adapter.stream({ ...options, model: delegate.model })) {
        if (chunk.type === 'usage') this.outputTokens.set(request.index, chunk.usage.outputTokens)
        if (chunk.type === 'block-end' && chunk.block.type === 'text') answer += chunk.block.text
        if (chunk.type === 'finish') finish = chunk.reason.kind
        yield chunk
      }
    } catch (error) {
      request.rejected = true
      throw error
    }
    if (finish !== 'stop') return
    const needs = this.scenario.needs.filter(need => need.turn === turn.index + 1 && !this.outcomes.some(outcome => outcome.need.id === need.id))
    for (const judged of judgeDelegatedTurn(needs, options.messages, answer, [SEARCH_TOOL_NAME, READ_TOOL_NAME])) {
      this.outcomes.push({ need: judged.need, satisfied: judged.satisfied, fromSurface: judged.satisfied && judged.calls === 0, via: judged.via, calls: judged.calls })
    }
  }

  /** Start the scenario turn with this 0-based index (the driver sends its prompt next). */
  beginTurn(index: number): void {
    this.finishTurn()
    this.turn = { index, step: 0, checked: false, pending: [], absent: [], used: [], missed: [], delegated: 0 }
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
    for (const pending of turn.absent) this.settleAbsent(pending)
    this.turn = undefined
  }

  private settleAbsent(pending: PendingAbsent): void {
    const turn = this.turn!
    turn.absent.splice(turn.absent.indexOf(pending), 1)
    this.absentOutcomes.push({ question: pending.question, explicit: pending.explicit, calls: pending.calls, proactive: pending.proactive, contradicted: pending.contradicted })
    if (!pending.contradicted) turn.missed.push(`${pending.question.term}: never discussed`)
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
    // the delegate spent this turn's request cap: close the turn (its needs fail as turn-failed)
    if (turn.delegated > 0) return { kind: 'text', text: 'Stopping here: the request cap of this turn is spent.' }
    const script = this.scenario.turns[turn.index]!
    if (!turn.checked) {
      turn.checked = true
      this.check(turn, request)
    } else if (turn.pending.length > 0 || turn.absent.length > 0) {
      const results = lastStepResults(request.options.messages)
      this.absorb(turn, results)
      this.absorbAbsent(turn, results)
    }
    if (turn.pending.length > 0 || turn.absent.length > 0) {
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

  /**
   * The turn's first request: which needs the surface answers (a proactive recall message of this
   * turn counts apart), which proactive message arrived, which never-discussed questions are asked.
   */
  private check(turn: NonNullable<NeedsModel['turn']>, request: ScriptedRequest): void {
    const number = turn.index + 1
    const proactive = turnInput(request.options.messages).map(messageText).filter(text => text.startsWith(PROACTIVE_PREFIX))
    const surface = request.options.messages.map(messageText).filter(text => !proactive.includes(text)).join('\n')
    const needs = this.scenario.needs.filter(need => need.turn === number)
    const questions = (this.scenario.absent ?? []).filter(question => question.turn === number)
    for (const text of proactive) {
      this.proactiveFirings.push({ turn: number, tokens: Math.ceil(text.length / 4), heldFact: needs.some(need => text.includes(need.fact)), neverDiscussed: questions.length > 0 })
    }
    for (const need of needs) {
      if (surface.includes(need.fact)) this.settle(need, { satisfied: true, fromSurface: true, via: 'surface', calls: 0 })
      else if (proactive.some(text => text.includes(need.fact))) this.settle(need, { satisfied: true, fromSurface: true, via: 'proactive', calls: 0 })
      else turn.pending.push({ need, calls: 0, candidates: [], slot: -1 })
    }
    for (const question of questions) {
      const term = question.term.toLowerCase()
      // the asking prompt names the term; anything else in the turn's input that does contradicts the label
      const contradicted = proactive.some(text => text.toLowerCase().includes(term))
      const pending: PendingAbsent = { question, calls: 0, candidates: [], slot: -1, explicit: false, contradicted, proactive: proactive.length > 0 }
      if (this.recovery === 'recall' && !contradicted) turn.absent.push(pending)
      else this.absentOutcomes.push({ question, explicit: false, calls: 0, proactive: pending.proactive, contradicted })
    }
  }

  /** Read the results of the last recovery step: which needs came back. */
  private absorb(turn: NonNullable<NeedsModel['turn']>, results: readonly string[]): void {
    for (const pending of turn.pending.slice()) { // a copy: settled needs leave the list
      const lastWasSearch = pending.calls === 1 && this.recovery === 'recall'
      const text = results[pending.slot] ?? ''
      // the exact fact, in this need's own result, not in the echo of its query
      const found = recalledText(text, lastWasSearch ? pending.need.query : undefined).includes(pending.need.fact)
      if (found) {
        turn.pending.splice(turn.pending.indexOf(pending), 1)
        this.settle(pending.need, { satisfied: true, fromSurface: false, via: this.recovery === 'rerun' ? 'rerun' : lastWasSearch ? 'search' : 'read', calls: pending.calls })
        continue
      }
      // a diligent model reads what it cannot see, at the passage the hit names
      if (lastWasSearch) pending.candidates = searchHits(text).filter(hit => !hit.onSurface).slice(0, MAX_RECALL_CALLS - 1)
    }
  }

  /**
   * A never-discussed question: an explicit absence line naming the term ends the search after one
   * call, as the prompt section tells the model; otherwise the model reads the top hits to be sure.
   */
  private absorbAbsent(turn: NonNullable<NeedsModel['turn']>, results: readonly string[]): void {
    for (const pending of turn.absent.slice()) {
      const text = results[pending.slot] ?? ''
      const term = pending.question.term.toLowerCase()
      const first = pending.calls === 1
      const shown = recalledText(text, first ? pending.question.query : undefined)
      if (first) {
        const absence = shown.split('\n').filter(line => line.startsWith('No message in') || line.startsWith('No hit contains') || line.startsWith('No match'))
        pending.explicit = absence.some(line => line.startsWith('No match') || line.toLowerCase().includes(`\`${term}\``))
        // the absence line itself names the term; only the hits may not
        const hits = shown.split('\n').filter(line => !absence.includes(line)).join('\n')
        if (hits.toLowerCase().includes(term)) pending.contradicted = true
        pending.candidates = searchHits(text).filter(hit => !hit.onSurface).slice(0, MAX_RECALL_CALLS - 1)
      } else if (shown.toLowerCase().includes(term)) pending.contradicted = true
      if (pending.explicit || pending.contradicted || pending.candidates.length === 0 || pending.calls >= MAX_RECALL_CALLS) this.settleAbsent(pending)
    }
  }

  /** The next call of every pending need and question; needs with nothing left to try fail here. */
  private recoveryCalls(turn: NonNullable<NeedsModel['turn']>, request: ScriptedRequest): ScriptedToolCall[] {
    const calls: ScriptedToolCall[] = []
    const hasSearch = request.options.tools?.some(tool => tool.name === SEARCH_TOOL_NAME) ?? false
    for (const pending of turn.absent.slice()) {
      if (!hasSearch) {
        this.settleAbsent(pending)
        continue
      }
      const call = pending.calls === 0 ? { name: SEARCH_TOOL_NAME, args: { query: pending.question.query } } : readCall(pending.candidates.shift()!)
      pending.calls += 1
      pending.slot = calls.length
      calls.push(call)
    }
    for (const pending of turn.pending.slice()) { // a copy: settled needs leave the list
      let call: ScriptedToolCall | undefined
      let reason: NeedOutcome['via'] = 'not-found'
      if (this.recovery === 'recall') {
        if (!hasSearch) reason = 'no-recall-tool'
        else if (pending.calls === 0) call = { name: SEARCH_TOOL_NAME, args: { query: pending.need.query } }
        else if (pending.calls < MAX_RECALL_CALLS && pending.candidates.length > 0) call = readCall(pending.candidates.shift()!)
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
