/**
 * How the recall tools read rows for a page: a checkpoint's originals as ranged reads of nearby
 * seqs, and a seq range or time window from where the page starts, only as far as it reaches.
 * Store reads only; rendering and cursors are format.ts's, validation recall.ts's.
 */
import type { LineageSegment, ReadOptions, ShadowMessage, ShadowStoreApi } from '@dsh-shadow/store'
import { bodyOf } from './format.ts'

/** Widest seq range a read takes, and the most messages a window read lists. */
export const SEQ_SPAN_MAX = 5_000
/** Seqs of a checkpoint read with one ranged read at most, and the gap a range may carry on top of twice its seqs. */
const RUN_SEQS = 1_000
const RUN_SLACK = 64
/** First and largest batch of rows a window page reads at a time. */
const WINDOW_BATCH = 2
const WINDOW_BATCH_MAX = 512

/**
 * The rows at `seqs` of a history (its head's own rows, its ancestors' below each fork), in the
 * order of `seqs`: what one `lookupInLineage` per seq finds, read as ranges of nearby seqs (a
 * checkpoint of thousands of messages was thousands of sequential lookups, on every page).
 */
export async function rowsAt(store: ShadowStoreApi, history: readonly LineageSegment[], seqs: readonly number[]): Promise<ShadowMessage[]> {
  const head = history[0]
  if (head === undefined) return []
  const sorted = [...new Set(seqs)].toSorted((a, b) => a - b)
  const rank = new Map(history.map((segment, index) => [segment.sessionId, index]))
  const found = new Map<number, ShadowMessage>()
  for (let start = 0; start < sorted.length;) {
    // a run of nearby seqs, read as one range that holds at most about twice as many rows as it wants
    let end = start
    while (end + 1 < sorted.length && end + 1 - start < RUN_SEQS && sorted[end + 1]! - sorted[start]! < 2 * (end + 2 - start) + RUN_SLACK) end += 1
    const from = sorted[start]!
    const to = sorted[end]!
    const wanted = new Set(sorted.slice(start, end + 1))
    for (const row of await store.read({ sessionId: head.sessionId }, { fromSeq: from, toSeq: to, limit: to - from + 1 })) {
      if (!wanted.has(row.seq)) continue
      // one row per seq, the nearest segment's (as lookupInLineage looks: the head first)
      const kept = found.get(row.seq)
      if (kept === undefined || (rank.get(row.sessionId) ?? Infinity) < (rank.get(kept.sessionId) ?? Infinity)) found.set(row.seq, row)
    }
    start = end + 1
  }
  return seqs.flatMap(seq => found.get(seq) ?? [])
}

/**
 * A page's share of a seq range or time window: the rows from message `index` on (from the
 * cursor's `next` seq, so earlier rows are not read again), in growing batches until their text
 * passes what the page can show, and how many messages the selector covers in all. Reading the
 * whole window (up to 5,000 messages, whole) for every page made a window over 50 MB of tool
 * outputs cost the same on every page as reading all of it.
 */
export async function windowPage(store: ShadowStoreApi, sessionId: string, selector: Record<string, string | number>, index: number, budgetChars: number): Promise<{ messages: ShadowMessage[]; title: string; base: number; total: number }> {
  const history = { sessionId }
  const { bounds, title } = windowBounds(selector)
  const total = Math.min(SEQ_SPAN_MAX, await store.count(history, bounds))
  // without a next seq (a first page), the rows before `index` are skipped by reading them
  const next = selector['next'] === undefined ? undefined : Number(selector['next'])
  const base = next === undefined ? 0 : index
  const skip = index - base
  const messages: ShadowMessage[] = []
  let fromSeq = Math.max(next ?? 0, bounds.fromSeq ?? 0)
  let batch = WINDOW_BATCH
  let chars = 0
  // (an edited cursor's next seq may lie past the range: then there is nothing more to read)
  while (base + messages.length < total && (bounds.toSeq === undefined || fromSeq <= bounds.toSeq)) {
    const rows = await store.read(history, { ...bounds, fromSeq, limit: Math.min(batch, total - base - messages.length) })
    for (const row of rows) {
      if (messages.length >= skip) chars += bodyOf(row).length + 100
      messages.push(row)
    }
    // past what a page shows (one more message than fits, so the page knows it goes on), or the end
    if (rows.length < batch || chars > budgetChars) break
    fromSeq = rows.at(-1)!.seq + 1
    batch = Math.min(batch * 2, WINDOW_BATCH_MAX)
  }
  return { messages, title, base, total }
}

/** The bounds and title of a seq range or time window selector. */
function windowBounds(selector: Record<string, string | number>): { bounds: ReadOptions; title: string } {
  const from = Number(selector['from'])
  const to = Number(selector['to'])
  return selector['kind'] === 'seq'
    ? { bounds: { fromSeq: from, toSeq: to }, title: `seqs ${from}–${to}` }
    : { bounds: { timeFrom: from, timeTo: to }, title: `${new Date(from).toISOString()} → ${new Date(to).toISOString()}` }
}

/**
 * Messages `start` to `start + size` of a seq range or time window (of the first SEQ_SPAN_MAX it
 * lists), and how many it lists: the web reader's page. It read every row of the window, whole,
 * for every page; now the seq of message `start` is found by counting over seq ranges (index
 * counts, each step halving the range), and only the page's rows are read. A time window is a
 * seq range when every row between its first and last is in it (times rising with seqs, as a
 * log's do); one that is not is still read whole.
 */
export async function windowSlice(store: ShadowStoreApi, sessionId: string, selector: Record<string, string | number>, start: number, size: number): Promise<{ messages: ShadowMessage[]; title: string; total: number }> {
  const history = { sessionId }
  const { bounds, title } = windowBounds(selector)
  const counted = await store.count(history, bounds)
  const total = Math.min(SEQ_SPAN_MAX, counted)
  if (start >= total) return { messages: [], title, total }
  let range: { fromSeq: number; toSeq: number }
  if (selector['kind'] === 'seq') range = { fromSeq: bounds.fromSeq!, toSeq: bounds.toSeq! }
  else {
    const [first, last] = await Promise.all([store.read(history, { ...bounds, limit: 1 }), store.read(history, { ...bounds, descending: true, limit: 1 })])
    range = { fromSeq: first[0]?.seq ?? 0, toSeq: last[0]?.seq ?? 0 }
    if ((await store.count(history, range)) !== counted) {
      const messages = await store.read(history, { ...bounds, limit: SEQ_SPAN_MAX })
      return { messages: messages.slice(start, start + size), title, total }
    }
  }
  // the smallest seq with more than `start` of the range's messages at or below it
  let low = range.fromSeq
  let high = range.toSeq
  let skip = start
  while (low < high) {
    const middle = low + Math.floor((high - low) / 2)
    const below = await store.count(history, { fromSeq: low, toSeq: middle })
    if (below > skip) high = middle
    else {
      skip -= below
      low = middle + 1
    }
  }
  const messages = await store.read(history, { ...range, fromSeq: low, limit: Math.min(size, total - start) })
  return { messages, title, total }
}
