/**
 * The many-match slice of bench:quality: each labelled session of the dev and the test set, its
 * messages unchanged and in their order, embedded in a large background of the same session's
 * other work, so that a question's words match hundreds of messages of its scope and the search's
 * candidate lists (a few dozen each) are truncated. The quality sets alone have a few hundred
 * messages a session: every list holds all of a query's matches, so they cannot tell which of
 * hundreds of matches a smaller plan would rank.
 *
 * A session's background, in whole turns (a request, tool calls and their results, a reply):
 * - half from the session's own generator (bench/quality-set.ts, bench/quality-set-b.ts) on a
 *   stream of its own: the same project, files, functions, errors, commands and log lines, none of
 *   the planted facts (the topic chatter a long session really has);
 * - half from the bench:search corpus (bench/corpus.ts): unrelated coding work in the same
 *   session, generic words (error, retry, timeout, pool, test …), ~20% Chinese. The dev sessions
 *   take the stream's first messages, the test sessions the ones after them.
 * - topic remarks: short messages that mention words of the session's questions, each word of
 *   each question with two or more topic words up to MANY_MENTIONS times, never two words of one
 *   question in one remark ("Side note about redis and rollout: nothing to do today."). A long
 *   session mentions its topics again and again; the remarks make every such word common, so its
 *   own list is truncated too, while the planted answer, holding several of the question's words,
 *   still covers more of the query than any remark. Questions with a single topic word (a name,
 *   an identifier) are left alone: nothing makes a background repeat a one-off name.
 * Turns go between the session's own turns at seeded random places (never before its system
 * prompt or after its last turn), at times between their neighbours' (time questions keep their
 * windows); seqs and call ids are renumbered, the labels follow their messages.
 *
 * Ground truth stays the planted messages: a background turn holding a planted answer string (dev)
 * or a never-said name (test) is left out, so no background message answers a question.
 */
import { analyzeQuery, coverageTerms, type ShadowMessageInput } from '@dsh-shadow/store'
import { rng } from '@dsh-shadow/testing'
import { Generator } from './corpus.ts'
import { fillerTurns, occurs, type QualitySet } from './quality-set.ts'
import { testFillerTurns, type TestQuestion, type TestSession } from './quality-set-b.ts'

/** Background turns of each generator a session gets (each turn is 2-10 messages). */
export const MANY_FILLER_TURNS = 600
/** Background messages from the bench:search corpus a session gets. */
export const MANY_CORPUS_MESSAGES = 3_000
/** Times each topic word of a session's multi-word questions is mentioned in its remarks. */
export const MANY_MENTIONS = 150
/** Topic words a remark mentions (each from another question). */
const REMARK_WORDS = 3

const REMARKS_EN = [
  'Side note about {a}, {b} and {c}: nothing to do today.',
  '{a} came up again in standup, and {b} and {c} too; no decision yet.',
  "Let's revisit {a} after the release. Also {b}, and maybe {c}.",
  'Not sure this touches {a}. Leaving {b} and {c} alone for now.',
  'Reminder to self: read up on {a}, {b} and {c} later.',
  'Noted {a} for the retro; {b} and {c} can wait.',
]
const REMARKS_ZH = [
  '顺便提一下{a}、{b}和{c}，今天先不处理。',
  '站会上又聊到{a}，还有{b}和{c}，还没结论。',
  '{a}的事等发布后再看，{b}和{c}也是。',
  '不确定这和{a}有没有关系，{b}、{c}先不动。',
  '记一下：{a}、{b}、{c}之后再研究。',
]
const HAN = /\p{Script=Han}/u

interface BackgroundMessage {
  readonly role: 'user' | 'assistant' | 'tool'
  readonly text: string
  readonly toolName?: string | null
  readonly callId?: string | null
}

/** The corpus stream cut into turns (a user message starts one), from message `from` on. */
function corpusTurns(from: number, count: number): BackgroundMessage[][] {
  const generator = new Generator()
  for (let index = 0; index < from; index += 1) generator.next()
  const turns: BackgroundMessage[][] = []
  for (let index = 0; index < count; index += 1) {
    const message = generator.next()
    if (message.role === 'system') continue
    const role = message.role
    if (role === 'user' || turns.length === 0) turns.push([])
    turns.at(-1)!.push({ role, text: message.text, toolName: message.toolName, callId: message.callId })
  }
  return turns
}

/** Filler turns of a generator, with their tool calls and results paired by call id. */
function withCallIds(turns: ReadonlyArray<ReadonlyArray<{ role: BackgroundMessage['role']; text: string; toolName?: string }>>): BackgroundMessage[][] {
  let next = 0
  return turns.map(turn => turn.map(message => {
    if (message.toolName === undefined) return { role: message.role, text: message.text }
    // the generators put each result right after its call
    if (message.role === 'assistant') next += 1
    return { role: message.role, text: message.text, toolName: message.toolName, callId: `f${next}` }
  }))
}

/**
 * Short remarks mentioning the topic words of the questions that have two or more, each word up
 * to MANY_MENTIONS times (a mention that would put two words of one question in a remark is
 * dropped), one remark a turn.
 */
function remarkTurns(queries: readonly string[], seed: number): BackgroundMessage[][] {
  const random = rng(seed)
  const mentions: Array<{ question: number; word: string }> = []
  queries.forEach((query, question) => {
    const words = analyzeQuery(query).topics.filter(word => coverageTerms([word]).length > 0)
    if (words.length < 2) return
    for (const word of words) for (let index = 0; index < MANY_MENTIONS; index += 1) mentions.push({ question, word })
  })
  for (let index = mentions.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1))
    ;[mentions[index], mentions[other]] = [mentions[other]!, mentions[index]!]
  }
  const turns: BackgroundMessage[][] = []
  let open: Array<{ question: number; word: string }> = []
  for (const mention of mentions) {
    if (open.some(entry => entry.question === mention.question)) continue
    open.push(mention)
    if (open.length < REMARK_WORDS) continue
    const [a, b, c] = open.map(entry => entry.word)
    const frames = HAN.test(a!) ? REMARKS_ZH : REMARKS_EN
    const text = frames[Math.floor(random() * frames.length)]!.replace('{a}', a!).replace('{b}', b!).replace('{c}', c!)
    turns.push([{ role: random() < 0.5 ? 'user' : 'assistant', text }])
    open = []
  }
  return turns
}

interface Embedded {
  readonly messages: ShadowMessageInput[]
  /** New seq of each original message. */
  readonly seqOf: ReadonlyMap<number, number>
  readonly background: number
  readonly dropped: number
}

/**
 * The session's own turns in order, the background turns between them at seeded random places;
 * seqs, turns and call ids renumbered; times of the session's own messages unchanged.
 */
function embed(own: readonly ShadowMessageInput[], background: readonly BackgroundMessage[][], seed: number, excluded: (text: string) => boolean): Embedded {
  const random = rng(seed)
  const ownTurns: ShadowMessageInput[][] = []
  for (const message of own.toSorted((a, b) => a.seq - b.seq)) {
    if (ownTurns.length === 0 || ownTurns.at(-1)![0]!.turn !== message.turn) ownTurns.push([])
    ownTurns.at(-1)!.push(message)
  }
  const kept = background.filter(turn => !turn.some(message => excluded(message.text)))
  // before own turn k, 1 <= k < ownTurns.length: after the system prompt, before the last turn
  const slots = new Map<number, BackgroundMessage[][]>()
  for (const turn of kept) {
    const slot = 1 + Math.floor(random() * (ownTurns.length - 1))
    slots.set(slot, [...(slots.get(slot) ?? []), turn])
  }
  const sessionId = own[0]!.sessionId
  const messages: ShadowMessageInput[] = []
  const seqOf = new Map<number, number>()
  const callIds = new Map<string, string>()
  const push = (message: Omit<ShadowMessageInput, 'sessionId' | 'seq' | 'eventJson' | 'tokens' | 'turn'>, turn: number): void => {
    const seq = messages.length
    messages.push({ ...message, sessionId, seq, turn, eventJson: JSON.stringify({ type: message.eventType, seq, data: { text: message.text } }), tokens: Math.ceil(message.text.length / 4) + 4 })
  }
  let turnNumber = 0
  ownTurns.forEach((turn, index) => {
    const inserted = slots.get(index) ?? []
    if (inserted.length > 0) {
      const from = messages.at(-1)!.time
      const gap = turn[0]!.time - from
      const count = inserted.reduce((sum, entry) => sum + entry.length, 0)
      let at = 0
      for (const entry of inserted) {
        turnNumber += 1
        let step = 0
        for (const message of entry) {
          at += 1
          if (message.role === 'assistant') step += 1
          const callId = message.callId === undefined || message.callId === null ? null
            : message.callId.split(' ').map(id => {
              if (!callIds.has(id)) callIds.set(id, `bg_${callIds.size + 1}`)
              return callIds.get(id)!
            }).join(' ')
          push({
            eventType: message.role === 'user' ? 'user/message' : message.role === 'tool' ? 'tool/result' : 'assistant/message',
            role: message.role,
            sourceKind: message.role === 'assistant' ? 'model' : message.role,
            step,
            toolName: message.toolName ?? null,
            callId,
            time: from + Math.floor((gap * at) / (count + 1)),
            text: message.text,
          }, turnNumber)
        }
      }
    }
    turnNumber += 1
    for (const message of turn) {
      seqOf.set(message.seq, messages.length)
      push({ eventType: message.eventType, role: message.role, sourceKind: message.sourceKind, step: message.step, toolName: message.toolName, callId: message.callId, time: message.time, text: message.text }, turnNumber)
    }
  })
  return { messages, seqOf, background: messages.length - own.length, dropped: background.length - kept.length }
}

export interface SliceSize {
  readonly sessions: number
  readonly messages: number
  readonly background: number
  /** Background turns left out because they held an answer string or a never-said name. */
  readonly dropped: number
}

function sizeOf(embedded: readonly Embedded[]): SliceSize {
  return {
    sessions: embedded.length,
    messages: embedded.reduce((sum, entry) => sum + entry.messages.length, 0),
    background: embedded.reduce((sum, entry) => sum + entry.background, 0),
    dropped: embedded.reduce((sum, entry) => sum + entry.dropped, 0),
  }
}

/** The dev set's sessions in their backgrounds (the corpus's first messages), labels remapped. */
export function manyMatchDev(set: QualitySet, seed = 41): QualitySet & { size: SliceSize } {
  const embedded = set.sessions.map((session, index) => {
    const background = [
      ...withCallIds(fillerTurns(session.sessionId, seed + index * 7_919, MANY_FILLER_TURNS)),
      ...corpusTurns(index * MANY_CORPUS_MESSAGES, MANY_CORPUS_MESSAGES),
      ...remarkTurns(set.questions.filter(question => question.sessionId === session.sessionId).map(question => question.query), seed + index),
    ]
    return embed(session.messages, background, seed * 31 + index, text => session.answers.some(answer => occurs(text, answer)))
  })
  const sessions = set.sessions.map((session, index) => ({ ...session, messages: embedded[index]!.messages }))
  const seqOf = new Map(set.sessions.map((session, index) => [session.sessionId, embedded[index]!.seqOf]))
  const questions = set.questions.map(question => ({ ...question, relevant: question.relevant.map(seq => seqOf.get(question.sessionId)!.get(seq)!) }))
  return { sessions, questions, size: sizeOf(embedded) }
}

/** The test set's sessions in their backgrounds (the corpus's messages after the dev slice's), labels remapped. */
export function manyMatchTest(set: { sessions: readonly TestSession[]; questions: readonly TestQuestion[] }, devSessions: number, seed = 43): { sessions: TestSession[]; questions: TestQuestion[]; size: SliceSize } {
  const embedded = set.sessions.map((session, index) => {
    // a never-said question's words are not mentioned (its name must stay absent)
    const asked = set.questions.filter(question => question.sessionId === session.sessionId && question.relevant.length > 0)
    const background = [
      ...withCallIds(testFillerTurns(session.sessionId, seed + index * 104_729, MANY_FILLER_TURNS)),
      ...corpusTurns((devSessions + index) * MANY_CORPUS_MESSAGES, MANY_CORPUS_MESSAGES),
      ...remarkTurns(asked.map(question => question.query), seed + index),
    ]
    const absent = session.absent ?? []
    return embed(session.messages, background, seed * 31 + index, text => absent.some(name => text.toLowerCase().includes(name)))
  })
  const sessions = set.sessions.map((session, index) => ({ ...session, messages: embedded[index]!.messages }))
  const seqOf = new Map(set.sessions.map((session, index) => [session.sessionId, embedded[index]!.seqOf]))
  const remap = (question: TestQuestion, seqs: readonly number[]): number[] => seqs.map(seq => seqOf.get(question.sessionId)!.get(seq)!)
  const questions = set.questions.map(question => ({
    ...question,
    relevant: remap(question, question.relevant),
    ...(question.older === undefined ? {} : { older: remap(question, question.older) }),
  }))
  return { sessions, questions, size: sizeOf(embedded) }
}
