/** Scoring shared by bench:quality's dev runs (the dev set and its many-match slice). */
import type { SearchResult } from '@dsh-shadow/store'

/** Hits asked for and scored per question. */
export const K = 10

export interface Scores {
  r1: number
  r5: number
  r10: number
  ndcg: number
  /** 1-based rank of the first relevant message in the top K, or 0. */
  rank: number
}

/** Recall at 1, 5 and 10 (a question is found when any relevant message is there) and binary nDCG@10. */
export function score(ranked: readonly number[], relevant: readonly number[]): Scores {
  const wanted = new Set(relevant)
  const first = ranked.findIndex(seq => wanted.has(seq))
  let dcg = 0
  ranked.slice(0, K).forEach((seq, index) => {
    if (wanted.has(seq)) dcg += 1 / Math.log2(index + 2)
  })
  let ideal = 0
  for (let index = 0; index < Math.min(K, wanted.size); index += 1) ideal += 1 / Math.log2(index + 2)
  const hit = (k: number): number => (first !== -1 && first < k ? 1 : 0)
  return { r1: hit(1), r5: hit(5), r10: hit(10), ndcg: dcg / ideal, rank: first + 1 }
}

/**
 * The seqs a search ranked, one per hit. A tool result hit carries its call (one unit, shown
 * together): it answers for either message; so does a short reply for the question it answers.
 */
export function rankedSeqs(found: SearchResult, relevant: readonly number[]): number[] {
  return found.hits.map(hit => [hit.call?.seq, hit.question?.seq].find(seq => seq !== undefined && relevant.includes(seq)) ?? hit.message.seq)
}
