/**
 * The hits of a search's winners, for every search path: each winner read again in full (a
 * network backend answers them together), one gone since it was ranked left out, one a
 * redaction pass changed meanwhile shown as it is now, elision marks as the reader sees them,
 * and each hit's passage and snippet.
 */
import { CANDIDATE_TEXT_CHARS, candidateText, type ShadowBackend } from '../backend.ts'
import { viewElision } from '../elision-view.ts'
import type { LineageSegment, ShadowMessage } from '../types.ts'
import { bestPassage, passageSnippet, type TermScan } from './passage.ts'
import type { SearchHit } from './types.ts'
import type { SearchUnit } from './units.ts'

/** Characters of a partner's snippet (its call, or the question answered), before the winner's own. */
const PARTNER_SNIPPET = 160
/** In a partner's passage, a term the winner already holds weighs this share (a tie-breaker). */
const MATCHED_SHARE = 0.01

export async function hitsOf(backend: ShadowBackend, winners: readonly SearchUnit[], reader: readonly LineageSegment[], terms: readonly string[], weights: ReadonlyMap<string, number>, literals: readonly string[], scanOf: (row: ShadowMessage) => TermScan): Promise<SearchHit[]> {
  // candidates were read without their event JSON and with their text cut: read the winners in
  // full, except one longer than the cut (a 50 MB output is not copied for a snippet), all at once
  // the rows not cut, all in one read where the backend batches them
  const wanted = winners.flatMap(unit => [unit.message, unit.call, unit.question]).filter((row): row is ShadowMessage => row !== undefined && !wasCut(row))
  const batch = backend.getMessages === undefined ? undefined : await backend.getMessages(wanted.map(row => ({ sessionId: row.sessionId, seq: row.seq })))
  const fresh = new Map(batch?.map((row, at) => [wanted[at]!, row]))
  const full = async (row: ShadowMessage): Promise<ShadowMessage | undefined> => {
    if (wasCut(row)) return unchanged(backend, row)
    return batch === undefined ? backend.getMessage(row.sessionId, row.seq) : fresh.get(row)
  }
  const read = await Promise.all(winners.map(unit => Promise.all([
    full(unit.message),
    unit.call === undefined ? undefined : full(unit.call),
    // the question as its candidate was read (no event JSON), as it is now
    unit.question === undefined ? undefined : full(unit.question).then(row => (row === undefined ? undefined : { ...row, eventJson: '' })),
  ] as const)))
  // a winner gone since it was ranked (its session forgotten, its row removed) is no hit; one a
  // redaction pass changed meanwhile is shown as it is now (read above), never as it was ranked
  const kept = winners.flatMap((unit, index) => {
    const [message, call, question] = read[index]!
    return message === undefined ? [] : [{ unit, message, call, question }]
  })
  return hitsFrom(backend, kept, reader, terms, weights, literals, scanOf)
}

/** A winner's rows as the hit shows them (read in full, or as a resident index holds them). */
export interface WinnerRows {
  readonly unit: SearchUnit
  readonly message: ShadowMessage
  readonly call: ShadowMessage | undefined
  readonly question: ShadowMessage | undefined
}

/** Hits of winners whose rows are known: elision marks as the reader sees them, passages, snippets. */
export async function hitsFrom(backend: ShadowBackend, kept: readonly WinnerRows[], reader: readonly LineageSegment[], terms: readonly string[], weights: ReadonlyMap<string, number>, literals: readonly string[], scanOf: (row: ShadowMessage) => TermScan): Promise<SearchHit[]> {
  // which checkpoint the row is in depends on who reads it (marks belong to who compacted)
  const viewed = kept.length === 0 ? [] : await viewElision(backend, reader, kept.map(entry => entry.message))
  return kept.map(({ unit, call, question }, index) => {
    const message = viewed[index]!
    return { message, ...(call === undefined ? {} : { call }), ...(question === undefined ? {} : { question }), score: unit.score, ...where(message, call ?? question, terms, weights, literals, scanOf) }
  })
}

/** Whether a light read cut this candidate's text (every backend cuts at CANDIDATE_TEXT_CHARS characters). */
function wasCut(row: ShadowMessage): boolean {
  return row.text.length >= CANDIDATE_TEXT_CHARS
}

/**
 * A winner its light read cut, not read again in full: itself while its stored hash is the one it
 * was ranked with; else read again (cut, without event JSON, as a candidate), or undefined when
 * it is gone.
 */
async function unchanged(backend: ShadowBackend, row: ShadowMessage): Promise<ShadowMessage | undefined> {
  const [mark] = await backend.messageHashesFor(row.sessionId, [row.seq])
  if (mark === undefined) return undefined
  if (mark.hash === row.hash && mark.expiredAt === row.expiredAt) return row
  const now = await backend.getMessage(row.sessionId, row.seq)
  return now === undefined ? undefined : { ...now, text: candidateText(now.text), eventJson: '' }
}

/**
 * The passage and snippet of a winner, in its own text. When its partner (the call, or the
 * question answered) holds query words the winner lacks, the snippet shows those first.
 */
function where(message: ShadowMessage, partner: ShadowMessage | undefined, terms: readonly string[], weights: ReadonlyMap<string, number>, literals: readonly string[], scanOf: (row: ShadowMessage) => TermScan): Pick<SearchHit, 'passage' | 'snippet' | 'matched'> {
  const scan = scanOf(message)
  const passage = bestPassage(message.text, scan, terms, weights)
  const own = passageSnippet(message.text, passage, scan, literals)
  if (partner === undefined) return { passage, snippet: own.text, matched: own.matched }
  const other = scanOf(partner)
  if (!other.covered.some((covered, index) => covered && scan.covered[index] !== true)) return { passage, snippet: own.text, matched: own.matched }
  // the partner's passage is where it says what the winner does not (a write's value, not its path)
  const lacking = new Map(terms.map((term, index) => [term, (weights.get(term) ?? 1) * (scan.covered[index] === true ? MATCHED_SHARE : 1)]))
  const theirs = passageSnippet(partner.text, bestPassage(partner.text, other, terms, lacking, PARTNER_SNIPPET * 2), other, literals, PARTNER_SNIPPET)
  return { passage, snippet: `${theirs.text} → ${own.text}`, matched: [...new Set([...theirs.matched, ...own.matched])] }
}
