/**
 * The scripted model's part in the demo's last turn: an agent that, for each old fact it needs,
 * searches its shadowed history, reads the best hit, and finally answers by quoting what came
 * back. Everything it "knows" comes out of real tool results.
 */
import type { ScriptStep, ScriptedReply, ScriptedRequest } from '@dsh-shadow/testing'

export interface Lookup {
  readonly query: string
  /** What the answer is about, for the final sentence. */
  readonly topic: string
}

export interface Found {
  readonly topic: string
  readonly shadowId: string | undefined
  /** The line of the original that best matches the query. */
  readonly line: string | undefined
}

/** The line of a transcript that shares the most words with the query. */
export function bestLine(text: string, query: string): string | undefined {
  const terms = query.toLowerCase().split(/\s+/).filter(term => term.length > 1)
  let best: { line: string; score: number } | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line.length === 0 || line.startsWith('── ') || line.startsWith('shadow_read') || line === '[end]' || line.startsWith('More:')) continue
    const lower = line.toLowerCase()
    const score = terms.filter(term => lower.includes(term)).length
    if (score > 0 && (best === undefined || score > best.score)) best = { line, score }
  }
  return best?.line
}

/** Steps for one turn: search → read, for each lookup, then the answer built from what came back. */
export function recallTurn(lookups: readonly Lookup[], answer: (found: readonly Found[]) => string): { steps: ScriptStep[]; found: Found[] } {
  const found: Found[] = []
  let reading: { topic: string; query: string; shadowId: string | undefined } | undefined
  /** Record what the previous read brought back (it is the last message of this request). */
  const settle = (request: ScriptedRequest): void => {
    if (reading === undefined) return
    found.push({ topic: reading.topic, shadowId: reading.shadowId, line: reading.shadowId === undefined ? undefined : bestLine(request.lastText(), reading.query) })
    reading = undefined
  }
  const steps: ScriptStep[] = []
  for (const lookup of lookups) {
    steps.push((request): ScriptedReply => {
      settle(request)
      const calls = [{ name: 'shadow_search', args: { query: lookup.query, limit: 3 } }]
      return found.length === 0 ? { kind: 'tools', text: 'Those were decided long ago; let me look them up in the shadowed history.', calls } : { kind: 'tools', calls }
    })
    steps.push((request): ScriptedReply => {
      const top = /^1\. (\S+) ·/m.exec(request.lastText())?.[1]
      reading = { topic: lookup.topic, query: lookup.query, shadowId: top }
      return { kind: 'tools', calls: [{ name: 'shadow_read', args: top === undefined ? { since: '1m ago' } : { id: top, before: 0, after: 0 } }] }
    })
  }
  steps.push((request): ScriptedReply => {
    settle(request)
    return { kind: 'text', text: answer(found) }
  })
  return { steps, found }
}
