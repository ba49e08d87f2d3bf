/**
 * What the recall tools show the model: ranked hits and paginated transcripts of the exact
 * originals. Pure rendering and cursor handling; no store access here.
 */
import { CANDIDATE_TEXT_CHARS, charBoundary, formatUtc as formatTime, type SearchHit, type ShadowMessage } from '@dsh-shadow/store'
import { cutPrefix } from '../text.ts'

export class RecallError extends Error {
  override readonly name = 'RecallError'
  readonly code: 'INVALID_INPUT' | 'NOT_FOUND' | 'FORBIDDEN' | 'UNAVAILABLE'

  constructor(code: RecallError['code'], message: string) {
    super(message)
    this.code = code
  }
}

export { formatTime }

function speaker(message: Pick<ShadowMessage, 'role' | 'toolName' | 'sourceKind' | 'eventType'>): string {
  if (message.eventType === 'request/header') return 'system prompt'
  if (message.role === 'tool') return `tool ${message.toolName ?? ''}`.trim()
  if (message.role === 'user' && message.sourceKind !== 'user') return `context (${message.sourceKind})`
  return message.role
}

/** How often one query term occurs in the scope and in the returned hits. */
export interface TermReport {
  /** The term as the query wrote it. */
  readonly term: string
  /** Messages in scope that contain it (0: nowhere). */
  readonly inScope: number
  /** Returned hits that contain it. */
  readonly inHits: number
  /** Rare in the scope (or absent): what makes the question specific. */
  readonly distinctive: boolean
  /** Its translations (en↔zh glossary) that messages in scope hold; `inHits` counts them too. */
  readonly translations?: readonly string[]
}

/** Statements of one thing's value over time (oldest first), from the hits. */
export interface ValueHistoryView {
  readonly key: readonly string[]
  readonly statements: ReadonlyArray<{ readonly shadowId: string; readonly time: number; readonly value: string }>
}

export interface SearchView {
  readonly query: string
  readonly hits: readonly SearchHit[]
  readonly coverage: { readonly searched: number; readonly matched: number; readonly returned: number }
  readonly scope: string
  /** How time words of the question were read, e.g. `"yesterday" as 2026-03-09 00:00–24:00 UTC`. */
  readonly timeNote?: string
  readonly terms?: readonly TermReport[]
  readonly history?: ValueHistoryView
  /** Hits still on the model's surface (shown, marked, after the others). */
  readonly onSurface?: ReadonlySet<string>
}

const quote = (term: string): string => `\`${term}\``

/** What the model must know before the hits: absent words, and hits that miss every distinctive word. */
function absenceLines(view: SearchView): string[] {
  const terms = view.terms ?? []
  const lines: string[] = []
  const absent = terms.filter(term => term.inScope === 0)
  const distinctive = terms.filter(term => term.distinctive)
  if (view.hits.length > 0 && distinctive.length > 0 && distinctive.every(term => term.inHits === 0)) {
    const common = terms.filter(term => !term.distinctive && term.inHits > 0).map(term => quote(term.term))
    lines.push(`No hit contains ${distinctive.map(term => quote(term.term)).join(' or ')}${common.length === 0 ? '' : `; the hits match only common words (${common.join(', ')})`}. Unless a hit clearly says otherwise, this was not discussed.`)
  }
  if (absent.length > 0) {
    // said in the other language: not "never discussed"
    const translated = absent.flatMap(term => (term.translations ?? []).length === 0 ? [] : [`${quote(term.term)} as ${term.translations!.map(quote).join(' or ')}`])
    lines.push(`No message in ${view.scope} mentions ${absent.map(term => quote(term.term)).join(', ')}${translated.length === 0 ? '' : ` (but messages say ${translated.join(', ')})`}.`)
  }
  return lines
}

/** Characters of the query a search result repeats: the model wrote all of it in its call already. */
const QUERY_ECHO_CHARS = 200

export function renderSearch(view: SearchView): string {
  const { coverage } = view
  const query = view.query.length > QUERY_ECHO_CHARS ? `${cutPrefix(view.query, QUERY_ECHO_CHARS)}…` : view.query
  const lines = [`shadow_search ${JSON.stringify(query)}: ${coverage.returned} of ${coverage.matched}${coverage.matched > coverage.returned ? '+' : ''} matching messages (searched ${coverage.searched} in ${view.scope})`]
  if (view.timeNote !== undefined) lines.push(`Time: read ${view.timeNote}.`)
  lines.push(...absenceLines(view))
  if (view.hits.length === 0) {
    lines.push('No match. Try other words (identifiers, paths, numbers, or a shorter phrase), a wider time range, or read a checkpoint directly with shadow_read.')
    return lines.join('\n')
  }
  if (view.history !== undefined && view.history.statements.length > 1) {
    const statements = view.history.statements
    lines.push(`Value over time (${view.history.key.map(quote).join(' ')}), oldest first:`)
    statements.forEach((statement, index) => {
      const newest = index === statements.length - 1 ? ' ← newest' : ''
      lines.push(`   ${formatTime(statement.time)} UTC  ${statement.value}  (${statement.shadowId})${newest}`)
    })
  }
  view.hits.forEach((hit, index) => {
    const message = hit.message
    const surface = view.onSurface?.has(message.shadowId) === true
    const where = surface ? 'on your surface now' : message.elidedBy === null ? 'still in context' : `in checkpoint ${message.elidedBy}`
    const turn = message.turn === null ? '' : ` · turn ${message.turn}`
    const call = hit.call === undefined ? '' : ` (called in ${hit.call.shadowId})`
    const answers = hit.question === undefined ? '' : ` (answers ${hit.question.shadowId})`
    const length = message.text.length >= CANDIDATE_TEXT_CHARS ? `${CANDIDATE_TEXT_CHARS}+` : String(message.text.length)
    const passage = hit.passage === undefined || (hit.passage.start === 0 && hit.passage.end >= message.text.length) ? '' : ` · chars ${hit.passage.start}–${hit.passage.end} of ${length}`
    lines.push(`${index + 1}. ${message.shadowId} · ${formatTime(message.time)} UTC · ${speaker(message)}${call}${answers}${turn} · ${where}${passage}`)
    lines.push(`   ${hit.snippet}`)
  })
  lines.push(`Read the best hit at its passage: ${readCommand(view.hits.find(hit => view.onSurface?.has(hit.message.shadowId) !== true) ?? view.hits[0]!)}`)
  return lines.join('\n')
}

/**
 * A hit's snippet without the search's `**…**` marks, for a person's plain-text view (dsh shows a
 * command's answer as plain text). Only marks around a word the hit matched are removed, so `**`
 * the message itself wrote stays.
 */
export function plainSnippet(hit: Pick<SearchHit, 'snippet' | 'matched'>): string {
  const matched = new Set(hit.matched.map(word => word.toLowerCase()))
  return hit.snippet.replace(/\*\*([^*\n]+?)\*\*/g, (mark, word: string) => matched.has(word.toLowerCase()) ? word : mark)
}

/** The read that shows a hit: at its passage for a long message, with neighbours otherwise. */
export function readCommand(hit: SearchHit): string {
  const at = hit.passage?.start ?? 0
  if (at > 0) return `shadow_read {"id":"${hit.message.shadowId}","at":${at}}`
  return `shadow_read {"id":"${hit.message.shadowId}","before":2,"after":2}`
}

/** One page of a transcript and where to continue. */
export interface TranscriptPage {
  readonly text: string
  readonly shown: number
  readonly nextIndex: number | null
  readonly nextOffset: number
}

function header(message: ShadowMessage): string {
  const turn = message.turn === null ? '' : ` · turn ${message.turn}`
  const elided = message.elidedBy === null ? '' : ` · checkpoint ${message.elidedBy}`
  return `── ${message.shadowId} · ${formatTime(message.time)} UTC · ${speaker(message)}${turn}${elided}`
}

/** What a transcript shows for a message: its text, or why retention left none. */
export function bodyOf(message: Pick<ShadowMessage, 'text' | 'expiredAt'>): string {
  if (message.expiredAt === null) return message.text
  return `[original removed by retention on ${formatTime(message.expiredAt)} UTC; the dsh session log still holds it]`
}

/**
 * Render messages from `startIndex` (and `startOffset` characters into it) until the token budget
 * is spent. A message too large for the budget is cut, and the cursor resumes inside it.
 */
export function renderTranscript(messages: readonly ShadowMessage[], startIndex: number, startOffset: number, budgetTokens: number, floor: { readonly chars: number; readonly take: number } = { chars: 400, take: 200 }): TranscriptPage {
  const budgetChars = Math.max(floor.chars, budgetTokens * 4)
  const parts: string[] = []
  let used = 0
  let index = startIndex
  const first = messages[startIndex]
  // a cursor or passage offset between the halves of a surrogate pair starts at the whole character
  let offset = first === undefined ? startOffset : charBoundary(bodyOf(first), startOffset)
  while (index < messages.length) {
    const message = messages[index]!
    const text = bodyOf(message)
    const head = offset === 0 ? header(message) : `${header(message)} (continued from character ${offset})`
    const remaining = text.length - offset
    // the page's characters: each part's header, its newline and text, and the newline joining it to the last
    const joint = parts.length > 0 ? 1 : 0
    const room = budgetChars - used - joint - head.length - 1
    if (room <= 0 && parts.length > 0) break
    if (remaining <= room) {
      parts.push(`${head}\n${text.slice(offset)}`)
      used += joint + head.length + 1 + remaining
      index += 1
      offset = 0
      continue
    }
    // Too big for what is left: show what fits and continue inside this message next time.
    // the cut notice is part of the page: its room comes off what is shown
    const notice = `\n[… ${remaining} more characters of ${message.shadowId}]`.length
    // the floor can reach past the end (one character left, room for none): then it is the rest,
    // shown whole; a notice of what remains would say -1 more characters
    const take = Math.min(remaining, charBoundary(text, offset + Math.max(floor.take, room - notice)) - offset)
    if (take === remaining) {
      parts.push(`${head}\n${text.slice(offset)}`)
      used += joint + head.length + 1 + remaining
      index += 1
      offset = 0
      break
    }
    parts.push(`${head}\n${text.slice(offset, offset + take)}\n[… ${remaining - take} more characters of ${message.shadowId}]`)
    used += joint + head.length + 1 + take
    offset += take
    break
  }
  const shown = index - startIndex + (offset > 0 ? 1 : 0)
  return { text: parts.join('\n'), shown, nextIndex: index < messages.length ? index : null, nextOffset: offset }
}

/** Where a read continues: the selector that produced the list, and the position in it. */
export interface ReadCursor {
  readonly selector: Record<string, string | number>
  readonly index: number
  readonly offset: number
}

export function encodeCursor(cursor: ReadCursor): string {
  return Buffer.from(JSON.stringify([cursor.selector, cursor.index, cursor.offset]), 'utf8').toString('base64url')
}

export function decodeCursor(value: string): ReadCursor {
  if (value.length > 4_000) throw new RecallError('INVALID_INPUT', 'cursor is too long')
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
  } catch {
    throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
  const [selector, index, offset] = parsed as [unknown, unknown, unknown]
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
  if (!Number.isSafeInteger(index) || (index as number) < 0 || !Number.isSafeInteger(offset) || (offset as number) < 0) throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
  for (const field of Object.values(selector)) {
    if (typeof field !== 'string' && typeof field !== 'number') throw new RecallError('INVALID_INPUT', 'cursor is not one this tool issued')
  }
  return { selector: selector as Record<string, string | number>, index: index as number, offset: offset as number }
}
