/**
 * bench:quality's many-match slice (bench/quality-many.ts): the dev set in its background (tuned
 * on, scored like the dev set) and the test set in its background (only reported, scored like the
 * test set), each with how many messages a question's words match, so a reader sees the lists
 * really truncate.
 */
import { join } from 'node:path'
import { ShadowStore, type ShadowStoreOptions } from '@dsh-shadow/store'
import { Bm25Baseline } from './quality-baselines.ts'
import { manyMatchDev, manyMatchTest, MANY_CORPUS_MESSAGES, MANY_FILLER_TURNS, MANY_MENTIONS, type SliceSize } from './quality-many.ts'
import { K, rankedSeqs, score, type Scores } from './quality-score.ts'
import type { QualitySet } from './quality-set.ts'
import { runSet, storeOnce, type TestFigures } from './quality-test.ts'
import { testSet } from './quality-set-b.ts'
import { median, printTable } from './report.ts'

/**
 * List depths at limit 10 (search.ts): a substring list, and the words lists before this slice,
 * take CANDIDATE_POOL (50); the words lists now take CANDIDATE_POOL x WIDE (100). A list of a word
 * with more matches is truncated.
 */
const LIST_DEPTHS = [50, 100] as const

/**
 * Resident search's memory budget for the slices: the baselines hold every session in memory, so ours
 * gets a budget that holds the slice too (its indexes are estimated at ~235 MB, under the default
 * 256 MiB; ~320 MB before short lists were kept at their size and tokens packed: past the budget the
 * least recently searched sessions leave, and a search of one the lists answer while it is built
 * again). The figures at the default budget are reported beside these, from the same store file
 * (written once, `storeOnce`).
 */
export const MANY_RESIDENT_BYTES = 1024 ** 3

/** Store options of a slice at a budget (undefined: the store's default). */
export function residentBudget(maxBytes: number | undefined): Pick<ShadowStoreOptions, 'resident'> {
  return maxBytes === undefined ? {} : { resident: { maxBytes } }
}

/** The budget's words for a label. */
export function budgetLabel(maxBytes: number | undefined): string {
  return maxBytes === undefined ? 'the default resident budget (256 MiB)' : `a resident budget of ${(maxBytes / 1024 ** 2).toFixed(0)} MiB`
}

export interface MatchFigures {
  readonly anyMedian: number
  readonly anyMin: number
  readonly rarestMedian: number
  readonly rarestMin: number
  /** Per LIST_DEPTHS: questions whose rarest word has more matches than such a list holds (every words list truncated). */
  readonly truncated: readonly number[]
  readonly ranked: number
  readonly n: number
}

function matchFigures(rows: ReadonlyArray<{ any: number; rarest: number; ranked: number }>): MatchFigures {
  return {
    anyMedian: median(rows.map(row => row.any)),
    anyMin: Math.min(...rows.map(row => row.any)),
    rarestMedian: median(rows.map(row => row.rarest)),
    rarestMin: Math.min(...rows.map(row => row.rarest)),
    truncated: LIST_DEPTHS.map(depth => rows.filter(row => row.rarest > depth).length),
    ranked: median(rows.map(row => row.ranked)),
    n: rows.length,
  }
}

function describe(label: string, size: SliceSize, matches: MatchFigures): void {
  console.log(`${label}: ${size.sessions} sessions, ${size.messages} messages (${size.background} background: ${MANY_FILLER_TURNS} turns of the session's own generator, ${MANY_CORPUS_MESSAGES} bench:search corpus messages and remarks naming each topic word of its multi-word questions ~${MANY_MENTIONS} times, a session; ${size.dropped} turns left out for holding an answer or a never-said name)`)
  console.log(`  messages holding a query word: median ${matches.anyMedian}, min ${matches.anyMin}; holding its rarest word: median ${matches.rarestMedian}, min ${matches.rarestMin}; every words list truncated (rarest word in more messages than a list holds): ${LIST_DEPTHS.map((depth, at) => `at ${depth} ${matches.truncated[at]}/${matches.n}`).join(', ')} questions; units ranked: median ${matches.ranked}`)
}

export interface ManyDevFigures {
  readonly ours: Scores
  readonly bm25Ours: number
  readonly matches: MatchFigures
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length
}

/** The dev set's sessions in their background: ours and BM25 over our analyzer, scored like the dev set. */
export async function runManyDev(dir: string, dev: QualitySet, maxBytes?: number): Promise<ManyDevFigures> {
  const set = manyMatchDev(dev)
  const store = await ShadowStore.open(join(dir, 'many-dev.db'), residentBudget(maxBytes))
  const same = new Bm25Baseline(true)
  for (const session of set.sessions) {
    await storeOnce(store, session)
    same.add(session.messages)
  }
  const usage = store.residentUsage()
  const rows: Array<{ category: string; ours: Scores; bm25: Scores; matches: { any: number; rarest: number; ranked: number } }> = []
  let spent = 0
  for (const question of set.questions) {
    const t0 = performance.now()
    const found = await store.search(question.query, { sessionId: question.sessionId, limit: K })
    spent += performance.now() - t0
    rows.push({
      category: question.category,
      ours: score(rankedSeqs(found, question.relevant), question.relevant),
      bm25: score(same.rank(question.query, question.sessionId, K), question.relevant),
      matches: { ...same.matches(question.query, question.sessionId), ranked: found.coverage.matched },
    })
  }
  await store.close()
  const matches = matchFigures(rows.map(row => row.matches))
  console.log('')
  describe(`many-match dev slice (the dev set in a background; tuned on), ${budgetLabel(maxBytes)}`, set.size, matches)
  console.log(`  resident search after building every session: ${usage.sessions}/${set.sessions.length} sessions held, ${(usage.bytes / 1e6).toFixed(0)} MB estimated`)
  const average = (list: typeof rows, pick: (row: (typeof rows)[number]) => number): number => mean(list.map(pick))
  const line = (name: string, list: typeof rows): Array<string | number> => [name, list.length, average(list, row => row.ours.r1), average(list, row => row.ours.r5), average(list, row => row.ours.r10), average(list, row => row.ours.ndcg), average(list, row => row.bm25.r5)]
  const categories = [...new Set(rows.map(row => row.category))]
  printTable('many-match dev slice', ['group', 'n', 'ours R@1', 'ours R@5', 'ours R@10', 'ours nDCG', 'bm25-ours R@5'], [
    line('all', rows),
    ...categories.map(category => line(category, rows.filter(row => row.category === category))),
  ])
  console.log(`ours: ${(spent / rows.length).toFixed(1)} ms a query`)
  return {
    ours: { r1: average(rows, row => row.ours.r1), r5: average(rows, row => row.ours.r5), r10: average(rows, row => row.ours.r10), ndcg: average(rows, row => row.ours.ndcg), rank: 0 },
    bm25Ours: average(rows, row => row.bm25.r5),
    matches,
  }
}

/** The test set's sessions in their background, scored like the test set (held out: only reported). */
export async function runManyTest(dir: string, devSessions: number, maxBytes?: number): Promise<TestFigures & { matchFigures: MatchFigures }> {
  const set = manyMatchTest(testSet(), devSessions)
  const figures = await runSet(dir, set, 'many-test', `many-match test slice (the test set in a background; held out), ${budgetLabel(maxBytes)}`, residentBudget(maxBytes))
  const matches = matchFigures(figures.matches)
  describe('many-match test slice', set.size, matches)
  return { ...figures, matchFigures: matches }
}
