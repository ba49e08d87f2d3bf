/**
 * The deterministic checkpoint digest: what happened in a compacted region, composed by code from
 * the log with no LLM call. Same region in, same bytes out.
 *
 * Per turn one line (who asked what, which tools ran on what, errors, how it ended), then the
 * files, identifiers, errors and literal anchors the region touched, then the pointer footer that
 * says exactly where the originals are and how to read them back.
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { charBoundary, extent, formatUtc, renderBlocks, shadowId } from '@dsh-shadow/store'
import { clip, cutPrefix } from '../text.ts'

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

// Every pattern below starts only where a run begins (lookbehind or \b) and bounds each repeat, so a
// tool output of one huge token costs linear time, not a rescan of the rest from every start.
const PATH = /(?<![\w@./-])(?:\.{0,2}\/)?(?:[\w@.-]{1,96}\/){1,24}[\w@-]{1,96}(?:\.[\w@-]{1,32}){0,4}\.[A-Za-z0-9]{1,8}\b|(?<![\w.-])[\w-]{1,96}\.(?:ts|tsx|js|mjs|cjs|json|ya?ml|sql|md|py|go|rs|java|toml|sh|css|html)\b/g
const IDENTIFIER = /\b(?:[a-z]{1,64}(?:[A-Z][a-z0-9]{0,64}){1,16}|[A-Z][a-z0-9]{1,64}(?:[A-Z][a-z0-9]{0,64}){1,16}|[a-z0-9]{1,64}(?:_[a-z0-9]{1,64}){1,16}|[A-Z][A-Z0-9]{0,64}(?:_[A-Z0-9]{1,64}){1,16})\b/g
// `u`: the bounded tail counts characters, so it never ends between the halves of a surrogate pair
const ERROR_LINE = /(?:\b[A-Z][A-Za-z]{0,60}Error\b[^\n]{0,100}|\bE[A-Z]{3,32}\b[^\n]{0,60}|\b(?:error|failed|failure|exception|panic)[:!][^\n]{0,100})/gu
/**
 * Literal anchors: key=value, header names, versions and addresses, ids with digits, and (in the
 * conversation's own words) numbers of 3+ digits.
 */
const ANCHOR = /\b(?:[A-Za-z][\w.-]{0,63}=[\w.:/-]{1,128}|X-[A-Za-z-]{1,64}|\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?|v?\d{1,9}\.\d{1,9}\.\d{1,9}|[A-Za-z]{1,64}[-_]?\d[\w-]{0,64}|\d{3,32})\b/g
// An id anchor (letters, a digit, more) must hold a second digit after its first; checked here so the pattern stays unambiguous.
const ID_FORM = /^[A-Za-z]+[-_]?\d([\w-]*)$/
const isAnchor = (value: string): boolean => {
  const id = ID_FORM.exec(value)
  return id === null || /\d/.test(id[1] ?? '')
}
const BARE_NUMBER = /^\d+$/

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

/**
 * What the extraction patterns read of one message: all of it up to SCAN_HEAD + SCAN_TAIL
 * characters, else its head and its tail (where a log states what failed). A digest names a handful
 * of files, identifiers and anchors; scanning a whole 50 MB tool output took seconds and half a
 * gigabyte of matches on the pass, for nothing the head and tail do not already show.
 */
const SCAN_HEAD = 96_000
const SCAN_TAIL = 32_000

function scanned(text: string): string {
  if (text.length <= SCAN_HEAD + SCAN_TAIL) return text
  return `${cutPrefix(text, SCAN_HEAD)}\n${text.slice(charBoundary(text, text.length - SCAN_TAIL))}`
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
  ask: string
  readonly tools: string[]
  errors: number
  answer: string
  context: number
}

interface Weighted {
  readonly value: string
  /** Higher first. */
  readonly weight: number
}

/** Rank by weight, then frequency, then first appearance (deterministic). */
function ranked(values: Iterable<Weighted>, limit: number, rare = false): string[] {
  const entries = new Map<string, { count: number; weight: number; order: number }>()
  let order = 0
  for (const { value, weight } of values) {
    const entry = entries.get(value)
    if (entry === undefined) entries.set(value, { count: 1, weight, order: order++ })
    else {
      entry.count += 1
      entry.weight = Math.max(entry.weight, weight)
    }
  }
  return [...entries.entries()]
    // for anchors, a value repeated all over a region (a status code, a counter) is noise
    .filter(([, entry]) => !rare || entry.count <= 3)
    .toSorted(([, a], [, b]) => b.weight - a.weight || (rare ? a.count - b.count : b.count - a.count) || a.order - b.order)
    .slice(0, limit)
    .map(([value]) => value)
}

/** The pointer footer: exact, code-composed, the same bytes forever. */
export function composeFooter(input: { checkpointId: string; tag: string; messages: readonly DigestMessage[] }): string {
  const events = input.messages.map(message => message.event)
  const seqs = events.map(event => event.seq)
  const { min: first, max: last } = extent(seqs) ?? { min: 0, max: 0 }
  const times = extent(events.map(event => event.time)) ?? { min: 0, max: 0 }
  const by = (type: string): number => events.filter(event => event.type === type).length
  const counts = [`${by('user/message')} user`, `${by('assistant/message')} assistant`, `${by('tool/result')} tool`].join(', ')
  return [
    `[shadow ${input.checkpointId}] ${events.length} messages (${counts}) · shadow ids ${shadowId(input.tag, first)} … ${shadowId(input.tag, last)} · seqs ${first}–${last} · ${formatUtc(times.min)} → ${formatUtc(times.max)} UTC`,
    `Originals are stored verbatim. Read: shadow_read {"checkpoint":"${input.checkpointId}"} · Search: shadow_search {"query":"…","checkpoint":"${input.checkpointId}"}`,
  ].join('\n')
}

export function composeDigest(input: DigestInput): Digest {
  const turns: TurnSummary[] = []
  const byTurn = new Map<number | null, TurnSummary>()
  const paths: Weighted[] = []
  const identifiers: Weighted[] = []
  const errors: Weighted[] = []
  const anchors: Weighted[] = []

  for (const message of input.messages) {
    const { event } = message
    let summary = byTurn.get(message.turn)
    if (summary === undefined) {
      summary = { turn: message.turn, ask: '', tools: [], errors: 0, answer: '', context: 0 }
      byTurn.set(message.turn, summary)
      turns.push(summary)
    }
    const text = messageText(event)
    const scan = scanned(text)
    // The conversation's own words (user, assistant) weigh more than tool output.
    const prose = event.type !== 'tool/result'
    const weight = prose ? 1 : 0
    for (const match of scan.matchAll(PATH)) paths.push({ value: match[0], weight: match[0].includes('/') ? 1 : 0 })
    for (const match of scan.matchAll(IDENTIFIER)) identifiers.push({ value: match[0], weight })
    for (const match of scan.matchAll(ANCHOR)) {
      if (!isAnchor(match[0]) || (BARE_NUMBER.test(match[0]) && !prose)) continue
      anchors.push({ value: match[0], weight: BARE_NUMBER.test(match[0]) ? weight : weight + 1 })
    }
    if (event.type === 'user/message') {
      if (event.data.source.kind === 'user' && summary.ask === '') summary.ask = text
      else summary.context += 1
    } else if (event.type === 'assistant/message') {
      for (const block of event.data.message.content) {
        if (block.type !== 'tool-call') continue
        summary.tools.push(block.name)
        for (const match of scanned(argumentGist(block.arguments)).matchAll(PATH)) paths.push({ value: match[0], weight: 2 })
      }
      if (text.trim().length > 0) summary.answer = text
    } else if (event.type === 'tool/result') {
      const result = event.data.message.content[0]
      if (result?.isError === true) summary.errors += 1
      for (const match of scan.matchAll(ERROR_LINE)) {
        errors.push({ value: clip(match[0], 100), weight: 0 })
        summary.errors += 1
      }
    }
  }

  const first = turns.find(turn => turn.turn !== null)?.turn ?? null
  const last = turns.findLast(turn => turn.turn !== null)?.turn ?? null
  const header = `[Shadow Context checkpoint ${input.checkpointId}${first === null ? '' : ` · turn${first === last ? ` ${first}` : `s ${first}–${last}`}`}]`

  const toolCounts = (tools: readonly string[]): string => {
    const counts = new Map<string, number>()
    for (const tool of tools) counts.set(tool, (counts.get(tool) ?? 0) + 1)
    return [...counts.entries()].map(([name, count]) => (count > 1 ? `${name}×${count}` : name)).join(', ')
  }
  const turnLine = (turn: TurnSummary, quote: number): string => {
    const parts = [`- ${turn.turn === null ? '·' : `t${turn.turn}`}`]
    if (turn.ask !== '') parts.push(`"${clip(turn.ask, quote)}"`)
    else if (turn.context > 0) parts.push(`(${turn.context} context message${turn.context > 1 ? 's' : ''})`)
    if (turn.tools.length > 0) parts.push(`→ ${toolCounts(turn.tools)}${turn.errors > 0 ? ` (${turn.errors} error${turn.errors > 1 ? 's' : ''})` : ''}`)
    if (turn.answer !== '') parts.push(`→ "${clip(turn.answer, Math.max(20, Math.floor(quote * 0.7)))}"`)
    return parts.join(' ')
  }
  const lists = (limit: number): string[] => {
    const out: string[] = []
    const files = ranked(paths, limit)
    if (files.length > 0) out.push(`Files: ${files.join(', ')}`)
    const names = ranked(identifiers, limit)
    if (names.length > 0) out.push(`Identifiers: ${names.join(', ')}`)
    const failures = ranked(errors, Math.max(1, Math.floor(limit / 2)))
    if (failures.length > 0) out.push(`Errors: ${failures.join(' | ')}`)
    const literals = ranked(anchors, limit, true)
    if (literals.length > 0) out.push(`Anchors: ${literals.join(', ')}`)
    return out
  }

  const footer = composeFooter(input)
  // Shrink deterministically until the body fits: shorter quotes, fewer list items, then elide
  // middle turns (their lines are in the originals).
  const budget = Math.max(16, input.maxTokens)
  let body = ''
  // The user's words first in full (decisions, open items and changed values live there), then shorter.
  outer: for (const quote of [320, 200, 120, 80, 56, 40]) {
    for (const limit of [6, 4, 3]) {
      body = [header, ...turns.map(turn => turnLine(turn, quote)), ...lists(limit)].join('\n')
      if (tokensOf(body) <= budget) break outer
    }
  }
  if (tokensOf(body) > budget) {
    const tail = lists(3)
    let keepHead = 2
    let keepTail = Math.min(4, turns.length)
    for (;;) {
      const middle = turns.slice(keepHead, turns.length - keepTail)
      body = [
        header,
        ...turns.slice(0, keepHead).map(turn => turnLine(turn, 48)),
        ...(middle.length > 0 ? [`- … ${middle.length} more turn${middle.length > 1 ? 's' : ''} (${middle.reduce((n, turn) => n + turn.tools.length, 0)} tool calls) — in the originals`] : []),
        ...turns.slice(turns.length - keepTail).map(turn => turnLine(turn, 48)),
        ...tail,
      ].join('\n')
      if (tokensOf(body) <= budget || (keepHead === 0 && keepTail === 0)) break
      if (keepTail > 1) keepTail -= 1
      else if (keepHead > 0) keepHead -= 1
      else keepTail = 0
    }
    if (tokensOf(body) > budget) body = clip(body, budget * 4)
  }
  return { text: `${body}\n${footer}`, body, footer, turns: { first, last } }
}

/** One line of an index rollup: a run of consecutive checkpoints, coarsely. */
export interface IndexEntry {
  readonly first: string
  readonly last: string
  readonly turns: readonly [number, number] | null
  readonly times: readonly [string, string] | null
  readonly files: readonly string[]
  readonly anchors: readonly string[]
}

const INDEX_LINE = /^- (\S+)(?: … (\S+))?(?: · turns (\d+)–(\d+))?(?: · (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) → (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d))?(?: · files: ([^·]*))?(?: · anchors: (.*))?$/

export function formatIndexEntry(entry: IndexEntry): string {
  const parts = [`- ${entry.first}${entry.last === entry.first ? '' : ` … ${entry.last}`}`]
  if (entry.turns !== null) parts.push(`turns ${entry.turns[0]}–${entry.turns[1]}`)
  if (entry.times !== null) parts.push(`${entry.times[0]} → ${entry.times[1]}`)
  if (entry.files.length > 0) parts.push(`files: ${entry.files.join(', ')}`)
  if (entry.anchors.length > 0) parts.push(`anchors: ${entry.anchors.join(', ')}`)
  return parts.join(' · ')
}

export function parseIndexEntry(line: string): IndexEntry | undefined {
  const match = INDEX_LINE.exec(line.trimEnd())
  if (match === null) return undefined
  const list = (value: string | undefined): string[] => (value === undefined ? [] : value.split(',').map(item => item.trim()).filter(item => item.length > 0))
  return {
    first: match[1]!,
    last: match[2] ?? match[1]!,
    turns: match[3] === undefined ? null : [Number(match[3]), Number(match[4])],
    times: match[5] === undefined ? null : [match[5], match[6]!],
    files: list(match[7]),
    anchors: list(match[8]),
  }
}

/** What a digest checkpoint's own text says about it (we wrote it, so the format is ours). */
export function entryOfCheckpoint(checkpointId: string, text: string): IndexEntry {
  const turns = /turns? (\d+)(?:–(\d+))?\]/.exec(text)
  const times = /(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) → (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC/.exec(text)
  const files = /^Files: (.*)$/m.exec(text)?.[1]?.split(', ') ?? []
  const anchors = /^Anchors: (.*)$/m.exec(text)?.[1]?.split(', ') ?? []
  return {
    first: checkpointId,
    last: checkpointId,
    turns: turns === null ? null : [Number(turns[1]), Number(turns[2] ?? turns[1])],
    times: times === null ? null : [times[1]!, times[2]!],
    files: files.slice(0, 4),
    anchors: anchors.slice(0, 4),
  }
}

function mergeEntries(a: IndexEntry, b: IndexEntry, keep: number): IndexEntry {
  const union = (x: readonly string[], y: readonly string[]): string[] => [...new Set([...x, ...y])].slice(0, keep)
  return {
    first: a.first,
    last: b.last,
    turns: a.turns === null ? b.turns : b.turns === null ? a.turns : [Math.min(a.turns[0], b.turns[0]), Math.max(a.turns[1], b.turns[1])],
    times: a.times === null ? b.times : b.times === null ? a.times : [a.times[0], b.times[1]],
    files: union(a.files, b.files),
    anchors: union(a.anchors, b.anchors),
  }
}

/** Label of the index lines that keep the user's newest asks (the task state a rollup would lose). */
const ASKED = 'Asked'
/** User asks an index keeps verbatim (clipped), newest first. */
export const INDEX_ASKS = 3
const ASK_LINE = /^Asked t(\d+): "(.*)"$/
const DIGEST_ASK = /^- t(\d+) "(.*?)"(?: → |$)/

/**
 * The newest user asks among folded checkpoints (their turn lines) and earlier indexes (their
 * Asked lines): where the request, decisions and open items were stated, newest first.
 */
function newestAsks(texts: readonly string[]): Array<{ turn: number; text: string }> {
  const found = new Map<number, string>()
  for (const text of texts) {
    for (const line of text.split('\n')) {
      const match = ASK_LINE.exec(line) ?? DIGEST_ASK.exec(line)
      if (match !== null && match[2]!.length > 1) found.set(Number(match[1]), clip(match[2]!, 200))
    }
  }
  return [...found.entries()].toSorted(([a], [b]) => b - a).slice(0, INDEX_ASKS).map(([turn, text]) => ({ turn, text }))
}

/** Lines an index keeps at most; beyond that, its two oldest lines merge (coarser, never dropped). */
export const INDEX_MAX_LINES = 6

/**
 * An index rollup: the folded checkpoints become one line (a run of checkpoints, its turns, time
 * range, top files and anchors); lines of an earlier index are kept, and the oldest merge so the
 * index stays small however long the session. Every originals stays reachable: by checkpoint id
 * through shadow_read, by content through shadow_search.
 */
export function composeRollup(input: { checkpointId: string; folded: ReadonlyArray<{ checkpointId: string; text: string }> }): string {
  let entries: IndexEntry[] = []
  let run: IndexEntry | undefined
  for (const item of input.folded) {
    if (item.text.startsWith('[Shadow Context index ')) {
      if (run !== undefined) { entries.push(run); run = undefined }
      for (const line of item.text.split('\n')) {
        const entry = parseIndexEntry(line)
        if (entry !== undefined) entries.push(entry)
      }
      continue
    }
    const entry = entryOfCheckpoint(item.checkpointId, item.text)
    run = run === undefined ? entry : mergeEntries(run, entry, 4)
  }
  if (run !== undefined) entries.push(run)
  while (entries.length > INDEX_MAX_LINES) entries = [mergeEntries(entries[0]!, entries[1]!, 4), ...entries.slice(2)]
  const asks = newestAsks(input.folded.map(item => item.text))
  const first = entries[0]
  const last = entries.at(-1)
  const span = first?.turns !== null && last?.turns !== null && first !== undefined && last !== undefined ? ` · turns ${first.turns![0]}–${last.turns![1]}` : ''
  return [
    `[Shadow Context index ${input.checkpointId}${span}]`,
    ...entries.map(formatIndexEntry),
    ...asks.map(ask => `${ASKED} t${ask.turn}: "${ask.text}"`),
    'Originals of every checkpoint above are stored verbatim: shadow_read {"checkpoint":"<id>"} · shadow_search {"query":"…"}',
  ].join('\n')
}

/** The marker that tells the mutable state checkpoint apart from frozen ones. */
export const STATE_MARKER = '[Shadow Context state'

/**
 * The optional mutable state checkpoint: where the work stands (the latest asks), and the files,
 * identifiers and anchors gathered from every checkpoint so far, then a footer for the trailing
 * slice of history it replaces. Rewritten each pass; the previous one is folded into the next digest.
 */
export function composeState(input: {
  checkpointId: string
  tag: string
  messages: readonly DigestMessage[]
  /** Texts of the frozen checkpoints on the surface, oldest first. */
  checkpoints: readonly string[]
  maxTokens: number
}): { text: string; footer: string } {
  const asks: Array<{ turn: number | null; text: string }> = []
  for (const message of input.messages) {
    const { event } = message
    if (event.type === 'user/message' && event.data.source.kind === 'user') asks.push({ turn: message.turn, text: renderBlocks(event.data.content) })
  }
  const gather = (prefix: string): string[] => {
    const values: string[] = []
    for (const text of input.checkpoints.toReversed()) {
      const line = text.split('\n').find(candidate => candidate.startsWith(prefix))
      if (line !== undefined) values.push(...line.slice(prefix.length).split(/, | \| /))
    }
    return [...new Set(values.map(value => value.trim()).filter(value => value.length > 0))]
  }
  const footer = composeFooter(input)
  const lastTurn = input.messages.findLast(message => message.turn !== null)?.turn ?? null
  const render = (keep: number, quote: number): string => {
    const lines = [`${STATE_MARKER}${lastTurn === null ? '' : ` · as of turn ${lastTurn}`}]`]
    const recent = asks.slice(-3).toReversed()
    if (recent.length > 0) lines.push(`Working on: ${recent.map(ask => `${ask.turn === null ? '' : `t${ask.turn} `}"${clip(ask.text, quote)}"`).join(' ← ')}`)
    for (const [label, prefix] of [['Files in play', 'Files: '], ['Identifiers', 'Identifiers: '], ['Anchors', 'Anchors: '], ['Errors seen', 'Errors: ']] as const) {
      const values = gather(prefix).slice(0, keep)
      if (values.length > 0) lines.push(`${label}: ${values.join(', ')}`)
    }
    return lines.join('\n')
  }
  let body = render(8, 90)
  for (const [keep, quote] of [[6, 70], [4, 50], [3, 36], [2, 24]] as const) {
    if (tokensOf(body) <= input.maxTokens) break
    body = render(keep, quote)
  }
  if (tokensOf(body) > input.maxTokens) body = clip(body, input.maxTokens * 4)
  return { text: `${body}\n${footer}`, footer }
}
