/**
 * The deterministic checkpoint digest: what happened in a compacted region, composed by code from
 * the log with no LLM call. Same region in, same bytes out.
 *
 * Per turn one line (who asked what, which tools ran on what, errors, how it ended), then the
 * files, identifiers, errors and literal anchors the region touched, then the pointer footer that
 * says exactly where the originals are and how to read them back.
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { renderBlocks, shadowId } from '@dsh-shadow/store'

export interface DigestMessage {
  readonly event: SessionEvent
  /** Turn the event belongs to (null outside turns). */
  readonly turn: number | null
  /** Tool name, for a tool result. */
  readonly toolName: string | null
}

export interface DigestInput {
  readonly checkpointId: string
  readonly tag: string
  /** The region's surface messages, in surface order. */
  readonly messages: readonly DigestMessage[]
  /** Ceiling for the digest body (the footer is always complete, on top). */
  readonly maxTokens: number
}

export interface Digest {
  readonly text: string
  readonly footer: string
  readonly body: string
  readonly turns: { readonly first: number | null; readonly last: number | null }
}

/** Same estimator as dsh's token meter: ceil(chars / 4). */
export function tokensOf(text: string): number {
  return Math.ceil(text.length / 4)
}

const PATH = /(?:\.{0,2}\/)?(?:[\w@.-]+\/)+[\w@.-]+\.[A-Za-z0-9]{1,8}\b|\b[\w-]+\.(?:ts|tsx|js|mjs|cjs|json|ya?ml|sql|md|py|go|rs|java|toml|sh|css|html)\b/g
const IDENTIFIER = /\b(?:[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z0-9]+(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b/g
const ERROR_LINE = /(?:^|\s)(?:[A-Z][A-Za-z]*Error\b[^\n]{0,100}|E[A-Z]{3,}[^\n]{0,60}|(?:error|failed|failure|exception|panic)[:!][^\n]{0,100}|× [^\n]{0,100}|→ [^\n]{0,100})/g
/** Literal anchors: numbers of 3+ digits, key=value, header-like names, versions, hashes. */
const ANCHOR = /\b(?:[A-Za-z][\w.-]*=[\w.:/-]+|X-[A-Za-z-]+|v?\d+\.\d+\.\d+\b|\d{3,}|[0-9a-f]{7,40})\b/g

const clip = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(1, max - 1))}…`
}

function formatTime(time: number): string {
  return new Date(time).toISOString().replace('T', ' ').slice(0, 19)
}

function messageText(event: SessionEvent): string {
  switch (event.type) {
    case 'user/message':
      return renderBlocks(event.data.content)
    case 'assistant/message':
      return renderBlocks(event.data.message.content.filter(block => block.type === 'text'))
    case 'tool/result':
      return renderBlocks(event.data.message.content)
    default:
      return ''
  }
}

interface ToolUse {
  readonly name: string
  readonly gist: string
}

function argumentGist(args: string): string {
  try {
    const parsed = JSON.parse(args) as Record<string, unknown>
    const value = parsed['path'] ?? parsed['command'] ?? parsed['query'] ?? parsed['file'] ?? parsed['url'] ?? Object.values(parsed)[0]
    return typeof value === 'string' ? value : JSON.stringify(value ?? '')
  } catch {
    return args
  }
}

interface TurnSummary {
  readonly turn: number | null
  time: number
  ask: string
  tools: ToolUse[]
  errors: number
  answer: string
  context: number
}

/** Count tokens by frequency, keep the first-seen order for ties (deterministic). */
function ranked(values: Iterable<string>, limit: number, prefer: (value: string) => number = () => 0): string[] {
  const counts = new Map<string, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return [...counts.entries()]
    .map(([value, count], order) => ({ value, count, order, weight: prefer(value) }))
    .toSorted((a, b) => b.weight - a.weight || b.count - a.count || a.order - b.order)
    .slice(0, limit)
    .map(entry => entry.value)
}

/** The pointer footer: exact, code-composed, the same bytes forever. */
export function composeFooter(input: { checkpointId: string; tag: string; messages: readonly DigestMessage[] }): string {
  const events = input.messages.map(message => message.event)
  const seqs = events.map(event => event.seq)
  const first = Math.min(...seqs)
  const last = Math.max(...seqs)
  const times = events.map(event => event.time)
  const by = (type: string): number => events.filter(event => event.type === type).length
  const counts = [`${by('user/message')} user`, `${by('assistant/message')} assistant`, `${by('tool/result')} tool`].join(', ')
  return [
    `[shadow ${input.checkpointId}] ${events.length} messages (${counts}) · shadow ids ${shadowId(input.tag, first)} … ${shadowId(input.tag, last)} · seqs ${first}–${last} · ${formatTime(Math.min(...times))} → ${formatTime(Math.max(...times))} UTC`,
    `Originals are stored verbatim. Read: shadow_read {"checkpoint":"${input.checkpointId}"} · Search: shadow_search {"query":"…","checkpoint":"${input.checkpointId}"}`,
  ].join('\n')
}

export function composeDigest(input: DigestInput): Digest {
  const turns: TurnSummary[] = []
  const byTurn = new Map<number | null, TurnSummary>()
  const paths: string[] = []
  const identifiers: string[] = []
  const errors: string[] = []
  const anchors: string[] = []
  const callNames = new Map<string, string>()

  for (const message of input.messages) {
    const { event } = message
    let summary = byTurn.get(message.turn)
    if (summary === undefined) {
      summary = { turn: message.turn, time: event.time, ask: '', tools: [], errors: 0, answer: '', context: 0 }
      byTurn.set(message.turn, summary)
      turns.push(summary)
    }
    const text = messageText(event)
    for (const match of text.matchAll(PATH)) paths.push(match[0])
    for (const match of text.matchAll(IDENTIFIER)) identifiers.push(match[0])
    for (const match of text.matchAll(ANCHOR)) anchors.push(match[0])
    if (event.type === 'user/message') {
      if (event.data.source.kind === 'user' && summary.ask === '') summary.ask = text
      else summary.context += 1
    } else if (event.type === 'assistant/message') {
      for (const block of event.data.message.content) {
        if (block.type !== 'tool-call') continue
        const gist = argumentGist(block.arguments)
        callNames.set(block.id, block.name)
        summary.tools.push({ name: block.name, gist })
        for (const match of gist.matchAll(PATH)) paths.push(match[0])
      }
      if (text.trim().length > 0) summary.answer = text
    } else if (event.type === 'tool/result') {
      const result = event.data.message.content[0]
      if (result?.isError === true) summary.errors += 1
      for (const match of text.matchAll(ERROR_LINE)) {
        errors.push(clip(match[0], 110))
        summary.errors += 1
      }
    }
  }

  const first = turns.find(turn => turn.turn !== null)?.turn ?? null
  const last = turns.findLast(turn => turn.turn !== null)?.turn ?? null
  const header = `[Shadow Context checkpoint ${input.checkpointId}${first === null ? '' : ` · turn${first === last ? ` ${first}` : `s ${first}–${last}`}`}]`

  const toolList = (tools: readonly ToolUse[], gistChars: number): string => {
    const grouped = new Map<string, number>()
    for (const tool of tools) {
      const key = `${tool.name} ${clip(tool.gist, gistChars)}`
      grouped.set(key, (grouped.get(key) ?? 0) + 1)
    }
    return [...grouped.entries()].map(([key, count]) => (count > 1 ? `${key} ×${count}` : key)).join('; ')
  }
  const turnLine = (turn: TurnSummary, quote: number): string => {
    const parts = [`- ${turn.turn === null ? '·' : `t${turn.turn}`} ${formatTime(turn.time).slice(11, 16)}`]
    if (turn.ask !== '') parts.push(`user: "${clip(turn.ask, quote)}"`)
    else if (turn.context > 0) parts.push(`context ×${turn.context}`)
    if (turn.tools.length > 0) parts.push(`→ ${toolList(turn.tools, Math.max(16, Math.floor(quote / 2)))}${turn.errors > 0 ? ` (${turn.errors} error${turn.errors > 1 ? 's' : ''})` : ''}`)
    if (turn.answer !== '') parts.push(`→ "${clip(turn.answer, quote)}"`)
    return parts.join(' ')
  }
  const pathPreference = (value: string): number => (value.includes('/') ? 1 : 0)
  const lists = (limit: number): string[] => {
    const out: string[] = []
    const files = ranked(paths, limit, pathPreference)
    if (files.length > 0) out.push(`Files: ${files.join(', ')}`)
    const names = ranked(identifiers, limit)
    if (names.length > 0) out.push(`Identifiers: ${names.join(', ')}`)
    const failures = ranked(errors, Math.max(2, Math.floor(limit / 3)))
    if (failures.length > 0) out.push(`Errors: ${failures.join(' | ')}`)
    const literals = ranked(anchors.filter(anchor => !/^\d{3}$/.test(anchor) || anchor !== '200'), limit)
    if (literals.length > 0) out.push(`Anchors: ${literals.join(', ')}`)
    return out
  }

  const footer = composeFooter(input)
  // Shrink deterministically until the body fits: shorter quotes, fewer list items, then elide
  // middle turns (their lines are in the originals).
  const budget = Math.max(16, input.maxTokens)
  let body = ''
  outer: for (const quote of [110, 70, 40, 24]) {
    for (const limit of [10, 6, 4]) {
      const lines = [header, ...turns.map(turn => turnLine(turn, quote)), ...lists(limit)]
      body = lines.join('\n')
      if (tokensOf(body) <= budget) break outer
    }
  }
  if (tokensOf(body) > budget) {
    const lists4 = lists(3)
    let keepHead = 2
    let keepTail = Math.min(4, turns.length)
    for (;;) {
      const middle = turns.length - keepHead - keepTail
      const lines = [
        header,
        ...turns.slice(0, keepHead).map(turn => turnLine(turn, 24)),
        ...(middle > 0 ? [`- … ${middle} more turn${middle > 1 ? 's' : ''} (${turns.slice(keepHead, turns.length - keepTail).reduce((n, turn) => n + turn.tools.length, 0)} tool calls) — in the originals`] : []),
        ...turns.slice(turns.length - keepTail).map(turn => turnLine(turn, 24)),
        ...lists4,
      ]
      body = lines.join('\n')
      if (tokensOf(body) <= budget || (keepHead === 0 && keepTail === 0)) break
      if (keepTail > 1) keepTail -= 1
      else if (keepHead > 0) keepHead -= 1
      else keepTail = 0
    }
    if (tokensOf(body) > budget) body = clip(body, budget * 4)
  }
  return { text: `${body}\n${footer}`, body, footer, turns: { first, last } }
}

/** An index rollup: one pointer line per folded checkpoint, from their own headers and footers. */
export function composeRollup(input: { checkpointId: string; folded: ReadonlyArray<{ checkpointId: string; text: string }> }): string {
  const lines = [`[Shadow Context index ${input.checkpointId} · ${input.folded.length} earlier checkpoints]`]
  for (const entry of input.folded) {
    const textLines = entry.text.split('\n')
    if (textLines[0]?.startsWith('[Shadow Context index ') === true) {
      // an earlier index: keep its pointer lines as they are
      lines.push(...textLines.filter(line => line.startsWith('- ')))
      continue
    }
    const headline = textLines.find(line => line.startsWith('[shadow ')) ?? textLines[0] ?? entry.checkpointId
    const anchors = textLines.find(line => line.startsWith('Files: ') || line.startsWith('Anchors: ')) ?? ''
    lines.push(`- ${headline}${anchors === '' ? '' : ` · ${clip(anchors, 120)}`}`)
  }
  lines.push('Each line points at a checkpoint whose originals are stored verbatim: shadow_read {"checkpoint":"<id>"}.')
  return lines.join('\n')
}
