/**
 * bench:quality — retrieval quality of ShadowStore.search, side by side with baselines, on two
 * labelled sets from two separate generators:
 *
 * - dev (bench/quality-set.ts): six coding sessions; ranking was tuned on it.
 * - test (bench/quality-set-b.ts): five three-day sessions with other projects, vocabulary and
 *   shapes, reported per category (exact, tool-output, zh, cross-lingual, temporal, superseded
 *   value, multi-hop, never-said); never tuned on.
 *
 * Baselines:
 *
 * - literal: upstream's proposal, a case-insensitive substring scan of the session's messages for
 *   the whole query string, newest first. This is the `literal` of the RESULT line.
 *   A second, fairer variant ("literal-any") matches a message when it contains any query token
 *   (whitespace-separated, edge punctuation trimmed; ≥ 3 characters, or ≥ 2 for a CJK token), newest first.
 * - bm25: a plain FTS5 table in a separate in-memory database with the default `unicode61`
 *   tokenizer (no stemming, no CJK segmentation, no trigram); the query's unicode61 tokens are
 *   OR-ed as quoted strings and ordered by bm25().
 * - bm25-ours (bm25_same_analyzer): FTS5 bm25 over OUR analyzer — the same `porter unicode61`
 *   tokenizer over the same index view (`indexViews(text).words`: CJK words and bigrams, camelCase
 *   parts) and the same query terms (`analyzeQuery(q).words`), OR-ed. What ranking adds beyond
 *   tokenisation is ours minus this.
 *
 * On the test set every ranker gets the same time window when the question has time words (our
 * TimeExpressionResolver, as shadow_search applies it), so the window is not what is compared.
 *
 * Every question is searched within its own session only, top 10. Recall@k counts a question as
 * found when any relevant message is in the top k; nDCG@10 uses binary relevance.
 *
 * QUALITY_DETAILS=1 prints, for each question ours misses at 5, what ranked above the answer.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { ShadowStore, type ShadowMessageInput } from '@dsh-shadow/store'
import { Bm25Baseline } from './quality-baselines.ts'
import { qualitySet, type QualityQuestion } from './quality-set.ts'
import { MANY_RESIDENT_BYTES, runManyDev, runManyTest } from './quality-many-run.ts'
import { runCrossLingualSlice, runTestSet } from './quality-test.ts'
import { printTable, result } from './report.ts'
import { K, rankedSeqs, score, type Scores } from './quality-score.ts'

const details = process.env['QUALITY_DETAILS'] === '1'
const started = performance.now()

const set = qualitySet()
const dir = mkdtempSync(join(tmpdir(), 'bench-quality-'))
const store = await ShadowStore.open(join(dir, 'shadow.db'))
for (const session of set.sessions) {
  await store.append(session.messages)
  // the session's resident search index, built as capture builds it at a session's first write (store README)
  await store.warm(session.sessionId)
}

const bySession = new Map<string, ShadowMessageInput[]>()
for (const session of set.sessions) bySession.set(session.sessionId, session.messages.toSorted((a, b) => b.seq - a.seq))
const messageAt = (sessionId: string, seq: number): ShadowMessageInput => bySession.get(sessionId)!.find(message => message.seq === seq)!

// ---- rankers ----------------------------------------------------------------------------------------

type Ranker = (question: QualityQuestion) => Promise<number[]> | number[]

const ours: Ranker = async question => {
  try {
    return rankedSeqs(await store.search(question.query, { sessionId: question.sessionId, limit: K }), question.relevant)
  } catch {
    return []
  }
}

const literal: Ranker = question => {
  const needle = question.query.toLowerCase()
  const out: number[] = []
  for (const message of bySession.get(question.sessionId)!) {
    if (message.text.toLowerCase().includes(needle)) out.push(message.seq)
    if (out.length === K) break
  }
  return out
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u
function literalTokens(query: string): string[] {
  const tokens = query.toLowerCase().split(/\s+/).map(token => token.replace(/^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu, ''))
  return [...new Set(tokens.filter(token => [...token].length >= (CJK.test(token) ? 2 : 3)))]
}

const literalAny: Ranker = question => {
  const needles = literalTokens(question.query)
  const out: number[] = []
  if (needles.length === 0) return out
  for (const message of bySession.get(question.sessionId)!) {
    const text = message.text.toLowerCase()
    if (needles.some(needle => text.includes(needle))) out.push(message.seq)
    if (out.length === K) break
  }
  return out
}

const plain = new DatabaseSync(':memory:')
plain.exec('CREATE VIRTUAL TABLE plain USING fts5(body, session UNINDEXED, seq UNINDEXED)')
{
  const insert = plain.prepare('INSERT INTO plain(body, session, seq) VALUES (?, ?, ?)')
  plain.exec('BEGIN')
  for (const session of set.sessions) for (const message of session.messages) insert.run(message.text, session.sessionId, message.seq)
  plain.exec('COMMIT')
}
const plainQuery = plain.prepare('SELECT seq FROM plain WHERE plain MATCH ? AND session = ? ORDER BY bm25(plain) LIMIT ?')
const bm25: Ranker = question => {
  const tokens = [...new Set([...question.query.matchAll(/[\p{L}\p{N}\p{M}]+/gu)].map(match => match[0].toLowerCase()))]
  if (tokens.length === 0) return []
  const match = tokens.map(token => `"${token.replaceAll('"', '""')}"`).join(' OR ')
  return (plainQuery.all(match, question.sessionId, K) as Array<{ seq: number }>).map(row => Number(row.seq))
}

const sameAnalyzer = new Bm25Baseline(true)
for (const session of set.sessions) sameAnalyzer.add(session.messages)
const bm25Ours: Ranker = question => sameAnalyzer.rank(question.query, question.sessionId, K)

const RANKERS: ReadonlyArray<{ name: string; run: Ranker }> = [
  { name: 'ours', run: ours },
  { name: 'bm25-ours', run: bm25Ours },
  { name: 'bm25', run: bm25 },
  { name: 'literal', run: literal },
  { name: 'literal-any', run: literalAny },
]

// ---- metrics ----------------------------------------------------------------------------------------

const results = new Map<string, Array<{ question: QualityQuestion; ranked: number[]; scores: Scores }>>()
const timings = new Map<string, number>()
for (const ranker of RANKERS) {
  const rows: Array<{ question: QualityQuestion; ranked: number[]; scores: Scores }> = []
  const t0 = performance.now()
  for (const question of set.questions) {
    const ranked = await ranker.run(question)
    rows.push({ question, ranked, scores: score(ranked, question.relevant) })
  }
  timings.set(ranker.name, (performance.now() - t0) / set.questions.length)
  results.set(ranker.name, rows)
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length
}

function aggregate(name: string, keep: (question: QualityQuestion) => boolean): Scores & { n: number } {
  const rows = results.get(name)!.filter(row => keep(row.question))
  return {
    n: rows.length,
    r1: mean(rows.map(row => row.scores.r1)),
    r5: mean(rows.map(row => row.scores.r5)),
    r10: mean(rows.map(row => row.scores.r10)),
    ndcg: mean(rows.map(row => row.scores.ndcg)),
    rank: 0,
  }
}

const messages = set.sessions.reduce((sum, session) => sum + session.messages.length, 0)
console.log(`dev set (tuned on): ${set.sessions.length} sessions, ${messages} messages (${set.sessions.map(session => session.messages.length).join(' / ')}), ${set.questions.length} questions; search within the question's session, top ${K}`)

printTable('dev set overall', ['ranker', 'R@1', 'R@5', 'R@10', 'nDCG@10', 'ms/query'], RANKERS.map(ranker => {
  const all = aggregate(ranker.name, () => true)
  return [ranker.name, all.r1, all.r5, all.r10, all.ndcg, timings.get(ranker.name)!]
}))

function breakdown(title: string, key: (question: QualityQuestion) => string): void {
  const groups = [...new Set(set.questions.map(key))]
  printTable(`dev set ${title}`, ['group', 'n', 'ours R@1', 'ours R@5', 'ours R@10', 'ours nDCG', 'bm25-ours R@5', 'bm25 R@5', 'bm25 nDCG', 'literal R@5', 'lit-any R@5'], groups.map(group => {
    const keep = (question: QualityQuestion): boolean => key(question) === group
    const o = aggregate('ours', keep)
    const b = aggregate('bm25', keep)
    return [group, o.n, o.r1, o.r5, o.r10, o.ndcg, aggregate('bm25-ours', keep).r5, b.r5, b.ndcg, aggregate('literal', keep).r5, aggregate('literal-any', keep).r5]
  }))
}

breakdown('by category', question => question.category)
breakdown('by query language', question => question.language)
breakdown('by query style', question => question.style)
breakdown('by depth of the answer', question => question.depth)
breakdown('by role of the answer', question => question.where)

// Head-to-head at 5: where ours and plain BM25 disagree.
const oursRows = results.get('ours')!
const bm25Rows = results.get('bm25')!
const oursOnly = oursRows.filter((row, index) => row.scores.r5 === 1 && bm25Rows[index]!.scores.r5 === 0).length
const bm25Only = oursRows.filter((row, index) => row.scores.r5 === 0 && bm25Rows[index]!.scores.r5 === 1)
console.log(`\nat 5: ours finds ${oursOnly} questions plain BM25 misses; plain BM25 finds ${bm25Only.length} that ours misses${bm25Only.length === 0 ? '' : ` (${bm25Only.map(row => row.question.id).join(', ')})`}`)

if (details) {
  const clip = (text: string, width = 110): string => {
    const flat = text.replace(/\s+/g, ' ').trim()
    return flat.length > width ? `${flat.slice(0, width)}…` : flat
  }
  console.log('\nquestions ours misses at 5:')
  oursRows.forEach((row, index) => {
    if (row.scores.r5 === 1) return
    const { question } = row
    console.log(`\n[${question.id}] ${question.category}/${question.language} ${JSON.stringify(question.query)}  ours rank ${row.scores.rank || '>10'}, bm25 rank ${bm25Rows[index]!.scores.rank || '>10'}`)
    for (const seq of question.relevant) console.log(`  relevant #${seq} (${messageAt(question.sessionId, seq).role}): ${clip(messageAt(question.sessionId, seq).text)}`)
    for (const seq of row.ranked.slice(0, 3)) console.log(`  ours    #${seq} (${messageAt(question.sessionId, seq).role}): ${clip(messageAt(question.sessionId, seq).text)}`)
  })
}

await store.close()
const test = await runTestSet(dir)
const cross = await runCrossLingualSlice(dir)
const manyDev = await runManyDev(dir, set, MANY_RESIDENT_BYTES)
const manyTest = await runManyTest(dir, set.sessions.length, MANY_RESIDENT_BYTES)
// the same slices at the default budget, which holds fewer of their sessions than they have
const manyDevDefault = await runManyDev(dir, set)
const manyTestDefault = await runManyTest(dir, set.sessions.length)
rmSync(dir, { recursive: true, force: true })
console.log(`\nwall time ${((performance.now() - started) / 1000).toFixed(1)} s. "literal" in RESULT is upstream's whole-query substring scan, newest first.`)
const r5 = (name: string): string => aggregate(name, () => true).r5.toFixed(3)
result('quality', {
  recall5: r5('ours'),
  literal_recall5: r5('literal'),
  bm25_recall5: r5('bm25'),
  test_recall5: test.recall5['ours']!.toFixed(3),
  bm25_same_analyzer_recall5: test.recall5['bm25-ours']!.toFixed(3),
  test_bm25_recall5: test.recall5['bm25']!.toFixed(3),
  dev_bm25_same_analyzer_recall5: r5('bm25-ours'),
  superseded_newest_first: test.newestFirst,
  never_said_explicit: test.neverExplicit,
  cross_lingual_slice_recall5: cross.recall5['ours']!.toFixed(3),
  cross_lingual_slice_bm25_same_analyzer_recall5: cross.recall5['bm25-ours']!.toFixed(3),
  many_recall5: manyDev.ours.r5.toFixed(3),
  many_bm25_same_analyzer_recall5: manyDev.bm25Ours.toFixed(3),
  test_many_recall5: manyTest.recall5['ours']!.toFixed(3),
  test_many_superseded_newest_first: manyTest.newestFirst,
  many_recall5_default_budget: manyDevDefault.ours.r5.toFixed(3),
  test_many_recall5_default_budget: manyTestDefault.recall5['ours']!.toFixed(3),
  many_matches_median: manyDev.matches.anyMedian,
  many_rarest_matches_median: manyDev.matches.rarestMedian,
  test_many_matches_median: manyTest.matchFigures.anyMedian,
})
