/**
 * Observation masking: a tool step whose outputs are bulky becomes a short pointer stub, while the
 * step's own words (what the assistant said and which tools it called on what) stay on the surface
 * (JetBrains 2025, arXiv 2508.21433: masking matched LLM summaries at about half the cost).
 *
 * Cache-aware by construction: the engine masks only inside a pass, behind that pass's new
 * checkpoint. Everything after a checkpoint misses the prompt cache on the next request anyway,
 * so a stub there costs no extra miss; it makes the re-missed tail, and every later request until
 * the next pass, smaller. A stub is not frozen: the next digest pass folds it like any history.
 * Its outputs stay in the shadow store verbatim; each one is named by its shadow id.
 */
import { extent, formatUtc, renderBlocks, shadowId } from '@dsh-shadow/store'
import { clip, flatten } from '../text.ts'
import type { DigestMessage } from './digest.ts'
import type { PolicyNode, RegionChoice } from './region.ts'

/** How a mask stub starts (the engine and the invariant companion tell stubs apart by it). */
export const MASK_MARKER = '[Shadow Context masked'

/** A tool output up to this many characters stays verbatim inside the stub. */
const INLINE_CHARS = 160

/** Results listed one per line in a stub; past this, the middle ones are one line naming their range. */
const RESULT_LINES = 40

/** Call arguments are the assistant's own words (a small file it wrote, a command): verbatim up to this. */
const ARGS_CHARS = 600

export function composeMask(input: { checkpointId: string; tag: string; messages: readonly DigestMessage[] }): { text: string; footer: string } {
  const turn = input.messages.find(message => message.turn !== null)?.turn ?? null
  const lines = [`${MASK_MARKER} ${input.checkpointId}${turn === null ? '' : ` · turn ${turn}`}] tool outputs stored verbatim; read one with shadow_read {"id":"…"}`]
  const calls = new Map<string, { name: string; args: string }>()
  const results: Array<{ index: number; name: string; id: string; line: string }> = []
  for (const { event } of input.messages) {
    if (event.type === 'assistant/message') {
      const words = renderBlocks(event.data.message.content.filter(block => block.type === 'text')).trim()
      if (words.length > 0) lines.push(`assistant: ${words}`)
      for (const block of event.data.message.content) if (block.type === 'tool-call') calls.set(block.id, { name: block.name, args: block.arguments })
    } else if (event.type === 'tool/result') {
      const result = event.data.message.content.find(block => block.type === 'tool-result')
      const call = result === undefined ? undefined : calls.get(result.toolCallId)
      const text = renderBlocks(event.data.message.content)
      const head = `- ${call?.name ?? 'tool'} ${clip(call?.args ?? '', ARGS_CHARS)}`
      const error = result?.isError === true ? ' (error)' : ''
      results.push({
        index: lines.length,
        name: call?.name ?? 'tool',
        id: shadowId(input.tag, event.seq),
        line: text.length <= INLINE_CHARS ? `${head} →${error} ${flatten(text)}` : `${head} →${error} ${Math.ceil(text.length / 4)} tokens, ${shadowId(input.tag, event.seq)}`,
      })
      lines.push('')
    }
  }
  // A step of thousands of parallel calls: the first and last results by line, the rest as one range.
  const hidden = results.length > RESULT_LINES ? results.slice(RESULT_LINES / 2, results.length - RESULT_LINES / 2) : []
  for (const result of results) lines[result.index] = result.line
  if (hidden.length > 0) {
    const names = [...Map.groupBy(hidden, result => result.name)].map(([name, group]) => `${name} ×${group.length}`).join(', ')
    lines[hidden[0]!.index] = `- … ${hidden.length} more results (${names}), ${hidden[0]!.id} … ${hidden.at(-1)!.id}: shadow_read {"checkpoint":"${input.checkpointId}"}`
    const gone = new Set(hidden.slice(1).map(result => result.index))
    lines.splice(0, lines.length, ...lines.filter((_, index) => !gone.has(index)))
  }
  const seqs = input.messages.map(message => message.event.seq)
  // the time range is what the projection and the timeline read from every checkpoint's footer
  const times = extent(input.messages.map(message => message.event.time)) ?? { min: 0, max: 0 }
  const footer = `[shadow ${input.checkpointId}] seqs ${seqs[0]}–${seqs.at(-1)} · ${formatUtc(times.min)} → ${formatUtc(times.max)} UTC · shadow_read {"checkpoint":"${input.checkpointId}"}`
  return { text: `${lines.join('\n')}\n${footer}`, footer }
}

/** About what one mask stub costs (its header, a line per call, the footer). */
const MASK_STUB_TOKENS = 80

/**
 * Whether masking these runs between passes pays under the cache price `hitRatio` (a cache hit's
 * price over a miss's). A rewrite makes everything after its first stub miss once,
 * (1 − hit) × (suffix − removed); it saves hit × removed on each request until the next rewrite,
 * estimated from the mean growth per request, so masking waits until a batch worth the miss has
 * piled up.
 */
export function maskPays(nodes: readonly PolicyNode[], runs: readonly RegionChoice[], at: { readonly total: number; readonly thresholdTokens: number; readonly growth: number; readonly hitRatio: number }): boolean {
  if (runs.length === 0) return false
  const suffix = nodes.slice(runs[0]!.startIdx).reduce((sum, node) => sum + node.tokens, 0)
  const removed = runs.reduce((sum, run) => sum + Math.max(0, run.tokens - MASK_STUB_TOKENS), 0)
  // the saving lasts until the next rewrite: the next pass, or the next mask once as much has grown again
  const horizon = Math.max(1, Math.min(removed, at.thresholdTokens - at.total) / Math.max(1, at.growth))
  return at.hitRatio * removed * horizon > (1 - at.hitRatio) * Math.max(0, suffix - removed)
}
