/**
 * TimeExpressionResolver: the time words of a question ("yesterday", "on the first evening",
 * "day 2 before noon", "3 hours ago", 昨天, 上周三, 今天上午, 三月十日, 第二天晚上) become one time window
 * relative to when the question is asked, so a search can filter by what the question says. Pure:
 * no clock, no store; the caller passes `now` (and the session's first time for "day N").
 *
 * Days are calendar days in the given UTC offset (default UTC, the time every Shadow Context
 * surface prints). Parts of a day: morning 05–12, noon 12–13, afternoon 12–17, evening 17–24,
 * night 18–06 of the next day, "before noon" 00–12, "after noon" 12–24.
 */

const HOUR = 3_600_000
const DAY = 24 * HOUR

export interface TimeWindow {
  /** Inclusive start, epoch ms. */
  readonly from: number
  /** Inclusive end, epoch ms. */
  readonly to: number
  /** The words of the question that said it, as written. */
  readonly phrase: string
}

export interface TimeContext {
  /** When the question is asked, epoch ms. */
  readonly now: number
  /** Time of the session's first message, for "day N" and "the first evening". */
  readonly sessionStart?: number
  /** Minutes east of UTC for calendar days (default 0). */
  readonly offsetMinutes?: number
}

export interface ResolvedTime {
  readonly window?: TimeWindow
  /** The query without the time words (unchanged when none were found). */
  readonly rest: string
}

type Part = readonly [fromHour: number, toHour: number]

const PARTS_EN: ReadonlyArray<readonly [RegExp, Part]> = [
  [/\b(?:before\s+noon|in\s+the\s+morning|mornings?)\b/iu, [0, 12]],
  [/\b(?:after\s*noon|in\s+the\s+afternoon|afternoons?)\b/iu, [12, 17]],
  [/\b(?:in\s+the\s+evening|evenings?|tonight)\b/iu, [17, 24]],
  [/\b(?:at\s+night|nights?)\b/iu, [18, 30]],
  [/\bat\s+noon\b|\bmidday\b/iu, [12, 13]],
]
// "morning" alone reads 05–12; "before noon" the whole first half (both under one pattern above
// would blur them): refine here.
const MORNING_ONLY = /\b(?:in\s+the\s+morning|mornings?)\b/iu

const PARTS_ZH: ReadonlyArray<readonly [RegExp, Part]> = [
  [/上午|早上|早晨|清晨|中午之前|午前/u, [0, 12]],
  [/中午/u, [12, 13]],
  [/下午|午后/u, [12, 17]],
  [/晚上|傍晚|今晚|昨晚|夜里|晚间/u, [17, 24]],
  [/深夜|半夜|凌晨/u, [0, 6]],
]

const WEEKDAYS_EN = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday']
const WEEKDAY_ZH: Record<string, number> = { 日: 0, 天: 0, 一: 1, 二: 2, 三: 3, 四: 4, 五: 5, 六: 6 }
const MONTHS_EN = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']
const ORDINALS_EN: Record<string, number> = { first: 1, second: 2, third: 3, fourth: 4, fifth: 5, sixth: 6, seventh: 7, eighth: 8, ninth: 9, tenth: 10, last: -1 }
const NUMBERS_EN: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, twelve: 12, 'a couple of': 2, 'a few': 3 }

/** 一 … 九十九, 两, and Arabic digits. */
export function chineseNumber(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text)
  const digits: Record<string, number> = { 零: 0, 〇: 0, 一: 1, 二: 2, 两: 2, 三: 3, 四: 4, 五: 5, 六: 6, 七: 7, 八: 8, 九: 9 }
  if (text.length === 0) return undefined
  const ten = text.indexOf('十')
  if (ten === -1) return text.length === 1 ? digits[text] : undefined
  const high = ten === 0 ? 1 : digits[text.slice(0, ten)]
  const low = ten === text.length - 1 ? 0 : digits[text.slice(ten + 1)]
  if (high === undefined || low === undefined || text.length > 3) return undefined
  return high * 10 + low
}

const ZH_NUM = '[0-9零〇一二两三四五六七八九十]{1,3}'
const EN_NUM = '\\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve'

interface DayHit {
  readonly start: number
  /** Whole days covered (7 for a week). */
  readonly days: number
  readonly phrase: string
}

interface Found {
  readonly window: TimeWindow
  readonly phrases: readonly string[]
}

export class TimeExpressionResolver {
  private readonly now: number
  private readonly offset: number
  private readonly sessionStart: number | undefined

  constructor(context: TimeContext) {
    this.now = context.now
    this.offset = (context.offsetMinutes ?? 0) * 60_000
    this.sessionStart = context.sessionStart
  }

  /** Local midnight (as epoch ms) of the day holding `time`. */
  private dayStart(time: number): number {
    return Math.floor((time + this.offset) / DAY) * DAY - this.offset
  }

  private get today(): number {
    return this.dayStart(this.now)
  }

  private weekday(time: number): number {
    return new Date(this.dayStart(time) + this.offset).getUTCDay()
  }

  /** The most recent day (today included) that is `weekday`, or the one in the previous week. */
  private lastWeekday(weekday: number, previousWeek: boolean): number {
    if (previousWeek) {
      // Monday-based weeks: the given day of last week.
      const monday = this.today - ((this.weekday(this.now) + 6) % 7) * DAY
      return monday - 7 * DAY + ((weekday + 6) % 7) * DAY
    }
    const back = (this.weekday(this.now) - weekday + 7) % 7
    return this.today - back * DAY
  }

  private calendarDay(month: number, day: number, year?: number): number | undefined {
    if (month < 1 || month > 12 || day < 1 || day > 31) return undefined
    const nowYear = new Date(this.now + this.offset).getUTCFullYear()
    let start = Date.UTC(year ?? nowYear, month - 1, day) - this.offset
    // A date without a year that lies ahead means last year's.
    if (year === undefined && start > this.now) start = Date.UTC(nowYear - 1, month - 1, day) - this.offset
    return start
  }

  private sessionDay(n: number): number | undefined {
    if (this.sessionStart === undefined || n === 0) return undefined
    const first = this.dayStart(this.sessionStart)
    if (n > 0) return first + (n - 1) * DAY
    return this.today
  }

  /** A day (or week) the query names, if any. */
  private day(query: string): DayHit | undefined {
    const tries: Array<() => DayHit | undefined> = [
      () => this.match(query, /\b(?:the\s+)?day\s+before\s+yesterday\b/iu, () => this.today - 2 * DAY),
      () => this.match(query, /大前天/u, () => this.today - 3 * DAY),
      () => this.match(query, /前天/u, () => this.today - 2 * DAY),
      () => this.match(query, /\byesterday\b|\blast\s+night\b|昨天|昨日|昨晚/iu, () => this.today - DAY),
      () => this.match(query, /\btoday\b|\bthis\s+(?:morning|afternoon|evening)\b|\btonight\b|\bearlier\s+today\b|今天|今日|今早|今晚/iu, () => this.today),
      () => {
        const found = new RegExp(`\\b(${EN_NUM})\\s+days?\\s+ago\\b`, 'iu').exec(query)
        const n = found === null ? undefined : NUMBERS_EN[found[1]!.toLowerCase()] ?? Number(found[1])
        return found === null || n === undefined || !Number.isFinite(n) ? undefined : { start: this.today - n * DAY, days: 1, phrase: found[0] }
      },
      () => {
        const found = new RegExp(`(${ZH_NUM})天(?:以)?前`, 'u').exec(query)
        const n = found === null ? undefined : chineseNumber(found[1]!)
        return found === null || n === undefined ? undefined : { start: this.today - n * DAY, days: 1, phrase: found[0] }
      },
      () => {
        const found = /\b(?:on\s+)?(?:the\s+)?(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last)\s+(day|morning|afternoon|evening|night)\b/iu.exec(query)
        if (found === null) return undefined
        const start = this.sessionDay(ORDINALS_EN[found[1]!.toLowerCase()]!)
        return start === undefined ? undefined : { start, days: 1, phrase: found[0] }
      },
      () => {
        const found = /\bday\s+(\d{1,3})\b/iu.exec(query)
        const start = found === null ? undefined : this.sessionDay(Number(found[1]))
        return found === null || start === undefined ? undefined : { start, days: 1, phrase: found[0] }
      },
      () => {
        const found = new RegExp(`第(${ZH_NUM})天`, 'u').exec(query)
        const n = found === null ? undefined : chineseNumber(found[1]!)
        const start = n === undefined ? undefined : this.sessionDay(n)
        return found === null || start === undefined ? undefined : { start, days: 1, phrase: found[0] }
      },
      () => this.match(query, /最后一天/u, () => this.today),
      () => {
        const found = /\b(?:on\s+)?(last|this|previous)?\s*(sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/iu.exec(query)
        if (found === null) return undefined
        const previous = found[1] !== undefined && found[1].toLowerCase() !== 'this'
        return { start: this.lastWeekday(WEEKDAYS_EN.indexOf(found[2]!.toLowerCase()), previous), days: 1, phrase: found[0].trim() }
      },
      () => {
        const found = /(上|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])/u.exec(query)
        if (found === null) return undefined
        return { start: this.lastWeekday(WEEKDAY_ZH[found[2]!]!, found[1] === '上'), days: 1, phrase: found[0] }
      },
      () => this.match(query, /\blast\s+week\b|上周|上星期|上个星期|上礼拜/iu, () => this.lastWeekday(1, true), 7),
      () => this.match(query, /\bthis\s+week\b|这周|本周|这个星期|这星期/iu, () => this.lastWeekday(1, false), 7),
      () => {
        const found = /\b(\d{4})-(\d{2})-(\d{2})\b/u.exec(query)
        const start = found === null ? undefined : this.calendarDay(Number(found[2]), Number(found[3]), Number(found[1]))
        return found === null || start === undefined ? undefined : { start, days: 1, phrase: found[0] }
      },
      () => {
        const names = MONTHS_EN.join('|') + '|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec'
        const found = new RegExp(`\\b(?:on\\s+)?(?:(${names})\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?|(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?(${names}))\\b`, 'iu').exec(query)
        if (found === null) return undefined
        const name = (found[1] ?? found[4])!.toLowerCase()
        const number = MONTHS_EN.findIndex(month => month.startsWith(name.slice(0, 3))) + 1
        const start = this.calendarDay(number, Number(found[2] ?? found[3]))
        return start === undefined ? undefined : { start, days: 1, phrase: found[0].trim() }
      },
      () => {
        const found = new RegExp(`(${ZH_NUM})月(${ZH_NUM})[日号]`, 'u').exec(query)
        const month = found === null ? undefined : chineseNumber(found[1]!)
        const day = found === null ? undefined : chineseNumber(found[2]!)
        const start = month === undefined || day === undefined ? undefined : this.calendarDay(month, day)
        return found === null || start === undefined ? undefined : { start, days: 1, phrase: found[0] }
      },
    ]
    for (const attempt of tries) {
      const hit = attempt()
      if (hit !== undefined) return hit
    }
    return undefined
  }

  private match(query: string, pattern: RegExp, start: () => number, days = 1): DayHit | undefined {
    const found = pattern.exec(query)
    return found === null ? undefined : { start: start(), days, phrase: found[0] }
  }

  /** "3 hours ago", "in the last 2 days", "过去三小时", "N分钟前": spans ending now or around a point. */
  private span(query: string): Found | undefined {
    const units: Record<string, number> = { minute: 60_000, minutes: 60_000, min: 60_000, mins: 60_000, hour: HOUR, hours: HOUR, hr: HOUR, hrs: HOUR, day: DAY, days: DAY, week: 7 * DAY, weeks: 7 * DAY }
    const last = new RegExp(`\\b(?:in\\s+|over\\s+|during\\s+)?the\\s+(?:last|past)\\s+(${EN_NUM})?\\s*(minutes?|mins?|hours?|hrs?|days?|weeks?)\\b`, 'iu').exec(query)
    if (last !== null) {
      const n = last[1] === undefined ? 1 : NUMBERS_EN[last[1].toLowerCase()] ?? Number(last[1])
      return { window: { from: this.now - n * units[last[2]!.toLowerCase()]!, to: this.now, phrase: last[0] }, phrases: [last[0]] }
    }
    const zhLast = new RegExp(`(?:过去|最近|近)(${ZH_NUM})(?:个)?(小时|分钟|天|周|星期)`, 'u').exec(query)
    const zhUnits: Record<string, number> = { 小时: HOUR, 分钟: 60_000, 天: DAY, 周: 7 * DAY, 星期: 7 * DAY }
    if (zhLast !== null) {
      const n = chineseNumber(zhLast[1]!)
      if (n !== undefined) return { window: { from: this.now - n * zhUnits[zhLast[2]!]!, to: this.now, phrase: zhLast[0] }, phrases: [zhLast[0]] }
    }
    // A point in the past: an hour either way (half the distance for minutes).
    const ago = new RegExp(`\\b(${EN_NUM})\\s+(minutes?|mins?|hours?|hrs?)\\s+ago\\b`, 'iu').exec(query)
    const zhAgo = new RegExp(`(${ZH_NUM})(?:个)?(小时|分钟)(?:以)?前`, 'u').exec(query)
    const point = ago !== null
      ? { n: NUMBERS_EN[ago[1]!.toLowerCase()] ?? Number(ago[1]), unit: units[ago[2]!.toLowerCase()]!, phrase: ago[0] }
      : zhAgo !== null ? { n: chineseNumber(zhAgo[1]!), unit: zhUnits[zhAgo[2]!]!, phrase: zhAgo[0] } : undefined
    if (point === undefined || point.n === undefined || !Number.isFinite(point.n)) return undefined
    const at = this.now - point.n * point.unit
    const slack = point.unit === HOUR ? HOUR : Math.max(60_000, (point.n * point.unit) / 2)
    return { window: { from: at - slack, to: Math.min(this.now, at + slack), phrase: point.phrase }, phrases: [point.phrase] }
  }

  private part(query: string): { part: Part; phrase: string } | undefined {
    for (const [pattern, part] of [...PARTS_EN, ...PARTS_ZH]) {
      const found = pattern.exec(query)
      if (found === null) continue
      const refined: Part = MORNING_ONLY.test(found[0]) ? [5, 12] : part
      return { part: refined, phrase: found[0] }
    }
    return undefined
  }

  resolve(query: string): ResolvedTime {
    const found = this.find(query)
    if (found === undefined) return { rest: query }
    let rest = query
    for (const phrase of found.phrases) rest = rest.replace(phrase, ' ')
    rest = rest.replace(/\b(?:on|at|during|in)\s*(?=[?.!,]|\s*$)/giu, ' ').replace(/\s+/g, ' ').trim()
    return { window: found.window, rest }
  }

  private find(query: string): Found | undefined {
    const span = this.span(query)
    if (span !== undefined) return span
    const day = this.day(query)
    // "this morning", "the first evening", "昨晚" name their part inside the day phrase
    const part = this.part(day === undefined ? query : query.replace(day.phrase, ' ')) ?? (day === undefined ? undefined : this.part(day.phrase))
    if (day === undefined) {
      // a part of the day alone ("in the morning") means today's
      if (part === undefined) return undefined
      return this.window(this.today, 1, part.part, [part.phrase])
    }
    const phrases = part === undefined || day.phrase.includes(part.phrase) ? [day.phrase] : [day.phrase, part.phrase]
    return this.window(day.start, day.days, day.days === 1 ? part?.part : undefined, phrases)
  }

  private window(start: number, days: number, part: Part | undefined, phrases: readonly string[]): Found {
    const from = part === undefined ? start : start + part[0] * HOUR
    const to = (part === undefined ? start + days * DAY : start + part[1] * HOUR) - 1
    return { window: { from, to, phrase: phrases.join(' ') }, phrases }
  }
}

/** `2026-03-10 17:00–24:00 UTC` (or with both dates when the window spans days). */
export function describeWindow(window: Pick<TimeWindow, 'from' | 'to'>, offsetMinutes = 0): string {
  const shift = offsetMinutes * 60_000
  const start = new Date(window.from + shift).toISOString()
  const endExclusive = new Date(window.to + 1 + shift).toISOString()
  const zone = offsetMinutes === 0 ? 'UTC' : `UTC${offsetMinutes > 0 ? '+' : '-'}${String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0')}:${String(Math.abs(offsetMinutes) % 60).padStart(2, '0')}`
  const startDay = start.slice(0, 10)
  const endDay = endExclusive.slice(0, 10)
  const endTime = endExclusive.slice(11, 16)
  const sameDay = startDay === endDay || (endTime === '00:00' && window.to + 1 - window.from <= DAY)
  const end = sameDay ? (endTime === '00:00' && startDay !== endDay ? '24:00' : endTime) : `${endDay} ${endTime}`
  return `${startDay} ${start.slice(11, 16)}–${end} ${zone}`
}
