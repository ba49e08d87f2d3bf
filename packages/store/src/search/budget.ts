/**
 * The characters one search scans to rank its candidates, in all. Each candidate's scan already
 * stops at RANK_TEXT_CHARS, but a search ranks up to a few hundred rows: sixty candidates of 2M
 * characters each were 15M characters scanned, 0.5-0.7 s of one search on SQLite (more with a
 * network backend's transfer). Past the budget the long texts share what is left; a text shorter
 * than its share is scanned whole, so a search of ordinary messages (a few hundred characters
 * each) never meets it.
 */
import { RANK_TEXT_CHARS } from './passage.ts'

/**
 * Characters a search scans per pass over its candidates (the candidates, their pairs, the hits).
 * Set by cost, not by any quality set: Latin text scans at about 25 ns a character on the
 * 2-core bench machine, so a pass stays near 50 ms, and 150 candidates of 13k characters (tool
 * outputs) are still scanned whole. bench:search's store-wide queries at 1M scan at most 0.134M
 * characters a pass (measured), so none is cut; a session's resident search (bench:quality's)
 * ranks from stored tokens and does not come here.
 */
export const RANK_BUDGET_CHARS = 2_000_000
/**
 * No text is cut below this many characters, however many share the budget: a search with a large
 * `limit` ranks ~1,200 candidates, and an equal share of the budget (1,666 characters each) cut
 * ordinary 2.5k-character messages and lost the one that held every query word (review, 2026-12-06).
 * Messages this long are scanned whole whatever the limit; only longer ones share the budget.
 */
export const RANK_FLOOR_CHARS = 32_000

/**
 * How many leading characters of each text a pass scans (same order as `lengths`): every text up
 * to `most` (a scan's own cut) while they fit the budget together; else the budget is shared out
 * from the shortest text up, each taking at most an equal share of what is left (water-filling),
 * and never less than `floor` (so the budget holds for texts longer than that only).
 */
export function scanCaps(lengths: readonly number[], budget = RANK_BUDGET_CHARS, most = RANK_TEXT_CHARS, floor = RANK_FLOOR_CHARS): number[] {
  const wanted = lengths.map(length => Math.min(Math.max(0, length), most))
  if (wanted.reduce((sum, length) => sum + length, 0) <= budget) return wanted
  const caps = wanted.map(() => 0)
  const order = wanted.map((_, at) => at).toSorted((a, b) => wanted[a]! - wanted[b]!)
  let left = budget
  order.forEach((at, rank) => {
    const cap = Math.min(wanted[at]!, Math.max(floor, Math.floor(left / (order.length - rank))))
    caps[at] = cap
    left = Math.max(0, left - cap)
  })
  return caps
}
