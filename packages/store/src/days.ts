/**
 * The days a message refers to: "yesterday we decided X" said on 03-11 is about 03-10. At ingest
 * the time words of a message (the TimeExpressionResolver's, resolved against the message's own
 * time, plus "tomorrow"/明天/后天) become UTC day numbers, which each backend stores in its own
 * way (`sqlite/days.ts`, PostgreSQL lexemes in `postgres/tokens.ts`). A search with a time window
 * then also takes the messages that refer to a day of the window, wherever they were said.
 *
 * The message's own day is not stored: its `time` already says it, and every search filters on
 * that. Only days other than its own are, so a message without time words costs nothing.
 */
import type { MessageFilter } from './backend.ts'
import { TimeExpressionResolver } from './when.ts'

const DAY = 86_400_000
/** The latest epoch-ms time a Date holds (and the earliest, negated); past 2^53 a day plus one is itself. */
export const MAX_TIME = 8.64e15
/** Days a Date can spell: PostgreSQL keys a referred day by its date. */
const MAX_DAY = MAX_TIME / DAY
/** Days one message refers to at most (a log full of dates is not a message about each). */
export const MAX_REFERRED_DAYS = 4
/** A time expression naming a longer stretch ("last week" is 7) is not a reference to its days. */
export const MAX_REFERENCE_DAYS = 7
/** Characters of a message looked at for time words. */
export const DAY_SCAN_CHARS = 4_000
/** Windows of more days than this do not look for messages referring to their days. */
export const MAX_WINDOW_DAYS = 14

/** A cheap test before the resolver's patterns: most messages have no time words at all. */
// no `u` flag: four times faster on long texts (every character is BMP here)
const CUE = /yesterday|today|tonight|tomorrow|\bago\b|\bweek\b|\blast\s+night\b|\bday\b|monday|tuesday|wednesday|thursday|friday|saturday|sunday|\b\d{4}-\d{2}-\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d|\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|昨|前天|今天|今日|今早|今晚|明天|后天|周|星期|礼拜|月.{1,3}[日号]|天前/i
/**
 * Whether a piece (a run of letters and digits) of an ASCII text may be part of a CUE match:
 * every match there lies in a piece holding day, night, tomorrow, ago or week, or beginning with
 * a month's abbreviation (after \b or a space), or being four digits (a date's year). A text
 * with no such piece has no time words: the resident build skips referredDays for it.
 */
export function timeCuePiece(piece: string): boolean {
  return PIECE_CUE.test(piece)
}
const PIECE_CUE = /day|night|tomorrow|ago|week|^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|^\d{4}$/i

/** Sentences, each with its closing punctuation (a line of a log is one). */
const SENTENCE = /[^.!?。！？\n]+[.!?。！？\n]*/g
const QUESTION = /[?？]\s*$/
const FUTURE = /\bday\s+after\s+tomorrow\b|后天|\btomorrow\b|明天/gi
/** Sentences with time words resolved per message at most. */
const MAX_SENTENCES = 4

/** UTC day number of an epoch-ms time. */
export function dayNumber(time: number): number {
  return Math.floor(time / DAY)
}

/** `20260310`: a day as the index spells it. */
export function dayKey(day: number): string {
  return new Date(day * DAY).toISOString().slice(0, 10).replaceAll('-', '')
}

/**
 * The UTC days other than its own that a message's time words point at, resolved against its own
 * time: at most MAX_REFERRED_DAYS, in the order said. Pure and bounded (DAY_SCAN_CHARS).
 */
export function referredDays(text: string, time: number): number[] {
  const sample = text.length > DAY_SCAN_CHARS ? text.slice(0, DAY_SCAN_CHARS) : text
  if (!(Math.abs(time) <= MAX_TIME) || !CUE.test(sample)) return []
  const own = dayNumber(time)
  const days: number[] = []
  const add = (day: number): void => {
    if (day !== own && Math.abs(day) <= MAX_DAY && !days.includes(day) && days.length < MAX_REFERRED_DAYS) days.push(day)
  }
  const resolver = new TimeExpressionResolver({ now: time })
  // the resolver runs on the sentences with time words only (its patterns are many); a question's
  // time words ask about a day ("what did we decide yesterday?"), they do not tell
  const sentences = (sample.match(SENTENCE) ?? []).filter(sentence => CUE.test(sentence) && !QUESTION.test(sentence)).slice(0, MAX_SENTENCES)
  for (const sentence of sentences) {
    // the resolver reads questions, which look back; a message may also look ahead
    for (const match of sentence.matchAll(FUTURE)) add(own + (/after|后天/i.test(match[0]) ? 2 : 1))
    let rest = sentence.replace(FUTURE, ' ')
    for (let found = 0; found < MAX_REFERRED_DAYS && days.length < MAX_REFERRED_DAYS; found += 1) {
      const resolved = resolver.resolve(rest)
      if (resolved.window === undefined || resolved.rest === rest) break
      const first = dayNumber(resolved.window.from)
      const last = dayNumber(resolved.window.to)
      if (last - first + 1 <= MAX_REFERENCE_DAYS) for (let day = first; day <= last; day += 1) add(day)
      rest = resolved.rest
    }
    if (days.length >= MAX_REFERRED_DAYS) break
  }
  return days
}

/** The UTC days a time window overlaps, or undefined when it has no bound or spans too many. */
export function windowDays(from: number | undefined, to: number | undefined): number[] | undefined {
  if (from === undefined || to === undefined || to < from) return undefined
  const first = dayNumber(from)
  const last = dayNumber(to)
  if (last - first + 1 > MAX_WINDOW_DAYS) return undefined
  return Array.from({ length: last - first + 1 }, (_, index) => first + index)
}

/** A filter without its time bounds: referring to a day stands in for being said on it. */
export function withoutTime<T extends MessageFilter>(filter: T): T {
  const { timeFrom: _from, timeTo: _to, ...rest } = filter
  return rest as T
}
