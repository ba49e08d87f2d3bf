/**
 * A real model for the turns that have needs (`bench:agent --model deepseek`): NeedsModel forwards
 * those turns' conversation requests to another LlmAdapter (dsh's own DeepSeek adapter in the bench)
 * and judges the model's final answer by the same exact-fact check; the scripted model plays the rest.
 */
import type { LlmAdapter, Message } from '@deepseek-ai/dsh-llm'
import { messageText } from '../scripted-model.ts'
import type { Need } from './schema.ts'

export interface TurnDelegate {
  readonly adapter: LlmAdapter
  /** Wire model id sent in place of the scripted one. */
  readonly model: string
  /** Requests one turn may send to it; then the scripted model closes the turn and its needs fail. */
  readonly maxRequests: number
  /** Appended to the prompt of a turn with needs (e.g. "quote what you rely on exactly"). */
  readonly instruction: string
}

export type DelegatedVia = 'model-answer' | 'model-unquoted' | 'model-missed'

export interface DelegatedJudgement {
  readonly need: Need
  readonly satisfied: boolean
  readonly via: DelegatedVia
  /** Recall tool calls the model made in this turn. */
  readonly calls: number
}

/**
 * Judge a delegated turn: a need is met only if its exact fact is in the model's final answer;
 * `model-unquoted` records that the fact did reach the model (surface or its tool results) but its
 * answer did not carry it.
 */
export function judgeDelegatedTurn(needs: readonly Need[], messages: readonly Message[], answer: string, recallTools: readonly string[]): DelegatedJudgement[] {
  // the turn starts at the last user message that is not a tool result (results are user messages too)
  const prompt = messages.findLastIndex(message => message.role === 'user' && !message.content.some(block => block.type === 'tool-result'))
  let calls = 0
  for (const message of messages.slice(prompt + 1)) {
    if (message.role !== 'assistant') continue
    calls += message.content.filter(block => block.type === 'tool-call' && recallTools.includes(block.name)).length
  }
  const context = messages.map(messageText).join('\n').replaceAll('**', '')
  return needs.map(need => {
    if (answer.includes(need.fact)) return { need, satisfied: true, via: 'model-answer', calls }
    return { need, satisfied: false, via: context.includes(need.fact) ? 'model-unquoted' : 'model-missed', calls }
  })
}
