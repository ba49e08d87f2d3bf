/**
 * The held-out half of bench:quality: the test set (bench/quality-set-b.ts) and the cross-lingual
 * slice (bench/quality-set-x.ts, held out from the en↔zh glossary), per category, ours against
 * BM25 over our own analyzer and plain BM25. Only reported, never tuned on.
 */
import { join } from 'node:path'
import { analyzeQuery, bridgeTerms, ShadowStore, TimeExpressionResolver, type SearchResult, type ShadowMessageInput, type ShadowStoreOptions } from '@dsh-shadow/store'
import { Bm25Baseline, type Window } from './quality-baselines.ts'
import { testSet, type TestCategory, type TestQuestion, type TestSession } from './quality-set-b.ts'
import { crossLingualSet } from './quality-set-x.ts'
import { printTable } from './report.ts'

const K = 5
const CATEGORIES: readonly TestCategory[] = ['exact', 'tool-output', 'zh', 'cross-lingual', 'temporal', 'superseded', 'multi-hop', 'same-language', 'never-said']

/** shadow_search's first warning line: there are hits, but none holds any distinctive word of the query. */
export function noHitHasDistinctive(result: SearchResult): boolean {
  const distinctive = result.terms.filter(term => term.distinctive)
  return result.hits.length > 0 && distinctive.length > 0 && distinctive.every(term => term.inHits === 0)
}

/** What shadow_search prints before the hits: that warning, or "no message mentions" a word. */
export function saysNotDiscussed(result: SearchResult): boolean {
  return noHitHasDistinctive(result) || result.terms.some(term => term.inScope === 0)
}

interface Row {
  readonly question: TestQuestion
  readonly ranked: Record<string, number[]>
  readonly explicit: boolean
  readonly warned: boolean
  readonly matches: { any: number; rarest: number; ranked: number }
}

function found(ranked: readonly number[], question: TestQuestion): boolean {
  const top = new Set(ranked.slice(0, K))
  return question.need === 'all' ? question.relevant.every(seq => top.has(seq)) : question.relevant.some(seq => top.has(seq))
}

function newestFirst(ranked: readonly number[], question: TestQuestion): boolean {
  const newest = ranked.indexOf(question.relevant[0]!)
  if (newest === -1) return false
  return (question.older ?? []).every(seq => {
    const at = ranked.indexOf(seq)
    return at === -1 || at > newest
  })
}

export interface TestFigures {
  readonly recall5: Record<string, number>
  readonly newestFirst: string
  readonly neverExplicit: string
  readonly falseAbsent: string
  /** Per answerable question: messages holding a query word, holding its rarest word, and units ours ranked. */
  readonly matches: ReadonlyArray<{ any: number; rarest: number; ranked: number }>
}

export async function runTestSet(dir: string): Promise<TestFigures> {
  return runSet(dir, testSet(), 'test', 'test set (held out, second generator)')
}

/** The cross-lingual slice, and how many of its questions the glossary bridges at all. */
export async function runCrossLingualSlice(dir: string): Promise<TestFigures> {
  const set = crossLingualSet()
  const figures = await runSet(dir, set, 'cross', 'cross-lingual slice (held out from the glossary, third generator)')
  const cross = set.questions.filter(question => question.category === 'cross-lingual')
  const bridged = cross.filter(question => {
    const analyzed = analyzeQuery(question.query)
    return bridgeTerms(analyzed.words, analyzed.literals).length > 0
  }).length
  console.log(`cross-lingual slice: the glossary has a translation for at least one word of ${bridged}/${cross.length} cross-lingual questions (whether the message uses that translation is another matter)`)
  return figures
}

/**
 * A session into a bench store, unless a run at another resident budget stored it already (the
 * sets are generated the same way every time), and its resident index built as capture builds it.
 */
export async function storeOnce(store: ShadowStore, session: { readonly sessionId: string; readonly messages: readonly ShadowMessageInput[] }): Promise<void> {
  if ((await store.session(session.sessionId)) === undefined) await store.append(session.messages)
  await store.warm(session.sessionId)
}

export async function runSet(dir: string, set: { sessions: readonly TestSession[]; questions: readonly TestQuestion[] }, file: string, label: string, options: Pick<ShadowStoreOptions, 'resident'> = {}): Promise<TestFigures> {
  const store = await ShadowStore.open(join(dir, `${file}.db`), options)
  const plain = new Bm25Baseline(false)
  const same = new Bm25Baseline(true)
  for (const session of set.sessions) {
    await storeOnce(store, session)
    plain.add(session.messages)
    same.add(session.messages)
  }
  const usage = store.residentUsage()
  const rows: Row[] = []
  for (const question of set.questions) {
    const session = await store.session(question.sessionId)
    const resolved = new TimeExpressionResolver({ now: question.askedAt, ...(session?.firstTime === null || session?.firstTime === undefined ? {} : { sessionStart: session.firstTime }) }).resolve(question.query)
    const window: Window | undefined = resolved.window
    const words = window !== undefined && /[\p{L}\p{N}]{2,}/u.test(resolved.rest) ? resolved.rest : question.query
    const search = async (timed: boolean): Promise<SearchResult> => store.search(words, { sessionId: question.sessionId, limit: 10, ...(timed && window !== undefined ? { timeFrom: window.from, timeTo: window.to } : {}) })
    let result = await search(true)
    if (window !== undefined && result.hits.length === 0) result = await search(false)
    const ours = result.hits.map(hit => [hit.call?.seq, hit.question?.seq].find(seq => seq !== undefined && question.relevant.includes(seq)) ?? hit.message.seq)
    rows.push({
      question,
      ranked: { ours, 'bm25-ours': same.rank(words, question.sessionId, 10, window), bm25: plain.rank(words, question.sessionId, 10, window) },
      explicit: saysNotDiscussed(result),
      warned: noHitHasDistinctive(result),
      matches: { ...same.matches(words, question.sessionId), ranked: result.coverage.matched },
    })
  }
  await store.close()
  const rankers = ['ours', 'bm25-ours', 'bm25']
  const answerable = rows.filter(row => row.question.relevant.length > 0)
  const rate = (list: readonly Row[], ranker: string): number => (list.length === 0 ? Number.NaN : list.filter(row => found(row.ranked[ranker]!, row.question)).length / list.length)
  console.log(`\n${label}: ${set.sessions.length} sessions, ${set.sessions.reduce((sum, session) => sum + session.messages.length, 0)} messages, ${set.questions.length} questions (${answerable.length} answerable); within the question's session, R@${K}; time words → the same window for every ranker; resident search held ${usage.sessions}/${set.sessions.length} sessions, ${(usage.bytes / 1e6).toFixed(0)} MB estimated`)
  const present = new Set(set.questions.map(question => question.category))
  const table: Array<Array<string | number>> = CATEGORIES.filter(category => category !== 'never-said' && present.has(category)).map(category => {
    const list = answerable.filter(row => row.question.category === category)
    return [category, list.length, ...rankers.map(ranker => rate(list, ranker))]
  })
  table.push(['all answerable', answerable.length, ...rankers.map(ranker => rate(answerable, ranker))])
  printTable(`${label.split(' (')[0]} by category (R@5; multi-hop needs both facts in the top 5)`, ['category', 'n', 'ours', 'bm25-ours', 'bm25'], table)
  const superseded = rows.filter(row => row.question.category === 'superseded')
  const never = rows.filter(row => row.question.category === 'never-said')
  const newest = (ranker: string): string => `${superseded.filter(row => newestFirst(row.ranked[ranker]!, row.question)).length}/${superseded.length}`
  if (superseded.length > 0) console.log(`superseded: newest statement ranked above every older one: ours ${newest('ours')}, bm25-ours ${newest('bm25-ours')}, bm25 ${newest('bm25')}`)
  const explicit = `${never.filter(row => row.explicit).length}/${never.length}`
  const falseAbsent = `${answerable.filter(row => row.warned).length}/${answerable.length}`
  const wrongly = `on answerable questions it wrongly warns "no hit contains …" in ${falseAbsent}`
  console.log(never.length > 0 ? `never-said: ours says explicitly that nothing (or no hit) matches in ${explicit} (baselines have no such signal); ${wrongly}` : `ours ${wrongly}`)
  return { recall5: Object.fromEntries(rankers.map(ranker => [ranker, rate(answerable, ranker)])), newestFirst: newest('ours'), neverExplicit: explicit, falseAbsent, matches: answerable.map(row => row.matches) }
}
