/**
 * ProactivePolicy: decides whether one search hit is worth putting in front of a turn unasked, and
 * which. Pure (no store, no Cordis): the plugin runs the search and hands over the result, the text
 * on the model's surface, and the prompt. It fires rarely on purpose; a recall the model did not
 * need costs tokens on every later request until compacted, and the model's own search is cheap.
 */
import { coverageTerms, coveredTerms, type SearchHit, type SearchResult } from '@dsh-shadow/store'
import { clip } from '../text.ts'
import { readCommand, renderTranscript } from './format.ts'

export interface ProactiveInput {
  readonly prompt: string
  readonly result: Pick<SearchResult, 'hits' | 'terms'>
  /** All text the model will see this turn besides the prompt (its surface). */
  readonly surface: string
  /** Rare prompt words the hit must contain. */
  readonly minMatches: number
}

const CJK = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}'
const TOKEN = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{N}_])+`, 'gu')
const CJK_TOKEN = new RegExp(`^[${CJK}]$`, 'u')

/** Word tokens, each CJK character its own token (so a shared Chinese phrase is a shared run). */
function tokens(text: string): string[] {
  return text.toLowerCase().match(TOKEN) ?? []
}
/** A shared run this long (words; a CJK character counts half) is the same phrasing, not a shared topic. */
export const ECHO_RUN = 4
const ECHO_TEXT_CHARS = 4_000

/** Length of the longest run of consecutive tokens two texts share (CJK characters count half). */
export function sharedRun(a: string, b: string): number {
  const left = tokens(a.slice(0, ECHO_TEXT_CHARS))
  const right = tokens(b.slice(0, ECHO_TEXT_CHARS))
  let best = 0
  let previous = new Float64Array(right.length + 1)
  for (const token of left) {
    const current = new Float64Array(right.length + 1)
    const weight = CJK_TOKEN.test(token) ? 0.5 : 1
    for (let index = 0; index < right.length; index += 1) {
      if (right[index] !== token) continue
      current[index + 1] = previous[index]! + weight
      if (current[index + 1]! > best) best = current[index + 1]!
    }
    previous = current
  }
  return best
}

/**
 * The hit to recall, or why none. Fires only when all of these hold:
 * - the prompt has at least `minMatches` rare words (distinctive in this session and present in it:
 *   a word it never saw cannot be recalled; stopwords and everyday words say nothing specific);
 * - some of them are hidden: not on the surface (what the model can see needs no recall);
 * - the best hit is off the surface, holds `minMatches` of the rare words and a hidden one;
 * - no other hit holds the same rare words (then a recall would be a guess between them: a repeated
 *   request, an older value of a changed setting);
 * - the best hit is not a past request phrased like this one (a shared run of ECHO_RUN words): the
 *   same kind of ask brings no fact along.
 */
export function chooseProactiveHit(input: ProactiveInput): { hit: SearchHit } | { skip: string } {
  const rare = [...new Set(coverageTerms(input.result.terms.filter(term => term.distinctive && term.inScope > 0).map(term => term.term.toLowerCase())))]
  if (rare.length < input.minMatches) return { skip: 'too few rare words in the prompt' }
  const seen = coveredTerms(input.surface, rare)
  const hidden = new Set(rare.filter((_, index) => seen[index] !== true))
  if (hidden.size === 0) return { skip: 'every rare word is on the surface' }
  const rareSet = new Set(rare)
  const rareIn = (hit: SearchHit): string[] => [...new Set(coverageTerms(hit.matched.map(piece => piece.toLowerCase())))].filter(term => rareSet.has(term))
  const candidates = input.result.hits.filter(candidate => candidate.message.eventType !== 'request/header')
  const best = candidates[0]
  if (best === undefined || best.message.elidedBy === null) return { skip: 'the best hit is on the surface' }
  const matched = rareIn(best)
  if (matched.length < input.minMatches || !matched.some(term => hidden.has(term))) return { skip: 'the best hit misses the hidden rare words' }
  if (candidates.slice(1).some(other => { const words = new Set(rareIn(other)); return matched.every(term => words.has(term)) })) return { skip: 'another hit holds the same rare words' }
  if (best.message.role === 'user' && best.message.sourceKind === 'user' && sharedRun(input.prompt, best.message.text) >= ECHO_RUN) return { skip: 'the best hit is a past request phrased like this one' }
  return { hit: best }
}

/** Characters of the matched words a proactive recall's title lists. */
const TITLE_MATCHES_CHARS = 80

/**
 * The proactive recall message for a hit: a title, the hit from its passage, and where to read on,
 * all within `budgetTokens` (ceil(chars / 4), the meter's estimate). The title and the read-on line
 * come out of the page's budget: they took it 88% over at 100 tokens (a title of 40 long identifiers).
 */
export function proactiveText(hit: SearchHit, budgetTokens: number): string {
  const title = `[Shadow Context recall · from checkpoint ${hit.message.elidedBy} · matches ${clip(hit.matched.map(term => JSON.stringify(term)).join(', '), TITLE_MATCHES_CHARS)}]`
  const at = hit.passage?.start ?? 0
  const digits = String(hit.message.text.length).length
  // the longest read-on line this page can end with (the page counts its own cut notice)
  const more = `\n[more: ${readCommand({ ...hit, passage: { start: 10 ** digits, end: 0 } })}]`.length
  const room = Math.max(0, budgetTokens * 4 - title.length - 1 - more)
  const page = renderTranscript([hit.message], 0, at, Math.floor(room / 4), { chars: 0, take: 2 })
  const readOn = page.nextIndex === null ? '' : `\n[more: ${readCommand({ ...hit, passage: { start: page.nextOffset, end: page.nextOffset } })}]`
  return `${title}\n${page.text}${readOn}`
}
