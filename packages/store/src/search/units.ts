/** Search units: a tool call and its result rank as one, looked up for the leading candidates. */
import type { IndexHit, MessageFilter, ShadowBackend } from '../backend.ts'
import { parseShadowId } from '../ids.ts'
import { SHORT_REPLY_CHARS } from './values.ts'
import type { LineageSegment, ShadowMessage } from '../types.ts'
import type { RankedCandidate } from './ranking.ts'

export interface SearchUnit {
  readonly message: ShadowMessage
  readonly call?: ShadowMessage
  /** The question a short reply answers (the unit is represented by the reply). */
  readonly question?: ShadowMessage
  /** What coverage and the snippet are computed on (call and result together for a unit). */
  readonly text: string
  readonly score: number
}

export function messageKey(message: Pick<ShadowMessage, 'sessionId' | 'seq'>): string {
  return `${message.sessionId}\u0000${message.seq}`
}

/**
 * Fold each tool call into its result: the call's arguments and the result's output answer a
 * question together ("what did grep find in server.ts"), so they rank as one unit, represented
 * by the result and scored by the better of the two. Calls whose result is not stored (or
 * messages with several calls) stay single; so do calls when a role filter leaves results out.
 */
export async function callUnits(backend: ShadowBackend, fused: ReadonlyArray<RankedCandidate<IndexHit>>, segments: readonly LineageSegment[], foldCalls: boolean, pairable: ReadonlySet<string>): Promise<SearchUnit[]> {
  const units = new Map<string, SearchUnit>()
  const add = (unit: SearchUnit): void => {
    const key = messageKey(unit.message)
    const existing = units.get(key)
    if (existing === undefined || unit.score > existing.score) units.set(key, existing === undefined ? unit : { ...unit, score: Math.max(unit.score, existing.score) })
  }
  const single = (message: ShadowMessage): boolean => message.callId !== null && !message.callId.includes(' ')
  // every partner in one indexed lookup: (session, call id) of single-call messages and results
  const keys = new Map<string, { sessionId: string; callId: string }>()
  for (const { key, item: { message } } of fused) {
    if (pairable.has(key) && single(message) && (message.role === 'tool' || (foldCalls && message.role === 'assistant'))) keys.set(`${message.sessionId}\u0000${message.callId}`, { sessionId: message.sessionId, callId: message.callId! })
  }
  const byCall = new Map<string, ShadowMessage[]>()
  for (const row of await backend.callRows([...keys.values()])) {
    for (const callId of row.callId?.split(' ') ?? []) {
      const key = `${row.sessionId}\u0000${callId}`
      if (keys.has(key)) byCall.set(key, [...(byCall.get(key) ?? []), row])
    }
  }
  const bound = (sessionId: string): number => segments.find(segment => segment.sessionId === sessionId)?.belowSeq ?? Number.POSITIVE_INFINITY
  for (const entry of fused) {
    const message = entry.item.message
    const sameCall = single(message) ? byCall.get(`${message.sessionId}\u0000${message.callId}`) ?? [] : []
    if (foldCalls && message.role === 'assistant' && single(message)) {
      const result = sameCall.filter(row => row.role === 'tool' && row.seq > message.seq && row.seq < bound(row.sessionId)).toSorted((a, b) => a.seq - b.seq)[0]
      if (result !== undefined) {
        add({ message: result, call: message, text: `${message.text}\n${result.text}`, score: entry.score })
        continue
      }
    }
    if (message.role === 'tool' && message.callId !== null) {
      const call = sameCall.filter(row => row.role === 'assistant' && row.seq < message.seq).toSorted((a, b) => b.seq - a.seq)[0]
      if (call !== undefined) {
        add({ message, call, text: `${call.text}\n${message.text}`, score: entry.score })
        continue
      }
    }
    add({ message, text: message.text, score: entry.score })
  }
  return [...units.values()]
}

const QUESTION = /[?？]|吗|呢/u

/**
 * Fold a question into the short reply that answers it: "what timeout should the client use?" →
 * "make it 45". The reply holds the answer but none of the question's words, so alone it would
 * never be found; together they rank as one unit, represented by the reply. Looked up for the
 * leading user and assistant candidates that ask something; the reply is the next message of
 * the other speaker within two messages, if it is short.
 */
export async function answerUnits(backend: ShadowBackend, units: readonly SearchUnit[], segments: readonly LineageSegment[], filter: MessageFilter, pairable: ReadonlySet<string>): Promise<SearchUnit[]> {
  const asking = (unit: SearchUnit): LineageSegment | undefined => {
    const message = unit.message
    const asks = unit.call === undefined && (message.role === 'user' || message.role === 'assistant') && pairable.has(messageKey(message)) && QUESTION.test(message.text)
    if (!asks) return undefined
    // a session of a wide scope is not named: it is in scope (its row was found there), whole
    return segments.find(candidate => candidate.sessionId === message.sessionId)
      ?? (filter.wide === undefined ? undefined : { sessionId: message.sessionId, tag: parseShadowId(message.shadowId).tag, belowSeq: Number.POSITIVE_INFINITY })
  }
  // each reply is read from its asker's own segment: not the wide scope
  const { wide: _wide, ...named } = filter
  // every asker's reply looked up at once (independent reads: a network backend answers them
  // together instead of one round trip after another); folded in candidate order below
  const replies = await Promise.all(units.map(async unit => {
    const segment = asking(unit)
    if (segment === undefined) return undefined
    const message = unit.message
    const next = await backend.readMessages({
      ...named,
      segments: [segment],
      fromSeq: message.seq + 1,
      toSeq: message.seq + 2,
      roles: [message.role === 'user' ? 'assistant' : 'user'],
      limit: 1,
    })
    return { reply: next[0] }
  }))
  const out: SearchUnit[] = []
  const taken = new Set(units.map(unit => messageKey(unit.message)))
  for (const [index, unit] of units.entries()) {
    const reply = replies[index]?.reply
    if (reply === undefined || reply.callId !== null || reply.text.length > SHORT_REPLY_CHARS || reply.text.trim().length === 0 || taken.has(messageKey(reply))) {
      out.push(unit)
      continue
    }
    const message = unit.message
    taken.add(messageKey(reply))
    out.push({ message: reply, question: message, text: `${message.text}\n${reply.text}`, score: unit.score })
  }
  return out
}
