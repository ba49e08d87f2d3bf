/** What Shadow Context saved a session, in plain words: tokens off the surface, what checkpoints cost, what recalls brought back. */
import type { ShadowCheckpoint, ShadowRecall, ShadowStore } from '@dsh-shadow/store'
import { safe } from './format.ts'

export interface Savings {
  readonly checkpoints: number
  /** Tokens of originals the checkpoints took off the model's context. */
  readonly tokensOff: number
  /** Tokens the checkpoint messages themselves put in their place. */
  readonly checkpointTokens: number
  readonly recalls: number
  /** Messages the recalls brought back. */
  readonly recalledMessages: number
}

/** Savings of these checkpoints and recalls (an index folds checkpoints, not messages: it adds cost, not tokens off). */
export async function savingsOf(store: ShadowStore, checkpoints: readonly ShadowCheckpoint[], recalls: readonly ShadowRecall[]): Promise<Savings> {
  let tokensOff = 0
  let checkpointTokens = 0
  let counted = 0
  for (const checkpoint of checkpoints) {
    if (checkpoint.status !== 'committed') continue
    counted += 1
    if (checkpoint.trigger !== 'index') tokensOff += checkpoint.shadowedTokens ?? 0
    checkpointTokens += await digestTokens(store, checkpoint)
  }
  return { checkpoints: counted, tokensOff, checkpointTokens, recalls: recalls.length, recalledMessages: recalls.reduce((sum, recall) => sum + recall.shadowIds.length, 0) }
}

/** Tokens of the checkpoint message (the stored row of its replacement), or its recorded summary size. */
export async function digestTokens(store: ShadowStore, checkpoint: ShadowCheckpoint): Promise<number> {
  if (checkpoint.replaceSeq !== null && checkpoint.replaceSeq !== undefined) {
    const row = await store.messageAt(checkpoint.sessionId, checkpoint.replaceSeq)
    if (row !== undefined) return row.tokens
  }
  return checkpoint.summaryTokens ?? 0
}

export function savingsLine(savings: Savings): string {
  if (savings.checkpoints === 0) return 'saved: nothing yet (no checkpoint: the context has not reached the compaction threshold)'
  const net = savings.tokensOff - savings.checkpointTokens
  return `saved: ${savings.checkpoints} checkpoint(s) took ${savings.tokensOff.toLocaleString('en-US')} tokens of originals off the model's context and cost ${savings.checkpointTokens.toLocaleString('en-US')} tokens in their place (net ${net.toLocaleString('en-US')} fewer); ${savings.recalls} recall(s) brought back ${savings.recalledMessages} original message(s)`
}

/** One line of what a recall brought back: its first message, flattened and cut. */
export async function recalledSnippet(store: ShadowStore, recall: ShadowRecall, width = 70): Promise<string> {
  const first = recall.shadowIds[0]
  if (first === undefined) return 'nothing came back'
  const message = await store.message(first)
  if (message === undefined) return `${first} (no longer stored)`
  const text = safe(message.text).replace(/\s+/g, ' ').trim()
  return `${first}: "${text.length > width ? `${text.slice(0, width - 1)}…` : text}"`
}
