/**
 * RegionPolicy: which contiguous run of the surface a pass replaces. Pure; the engine feeds it
 * the surface as priced by dsh's token meter.
 *
 * - Frozen: a region starts after the last committed checkpoint, so a checkpoint is never folded
 *   into a later pass and the request prefix up to it stays byte-identical.
 * - Balanced: both cuts have no tool call waiting for its result (an orphaned tool message is an
 *   HTTP 400 at DeepSeek).
 * - Turn-aligned: the tail cut prefers the start of a turn when one is within reach.
 */

export interface PolicyNode {
  readonly seq: number
  readonly tokens: number
  /** A committed compaction checkpoint (ours or another engine's). */
  readonly checkpoint: boolean
  /** The one mutable state checkpoint (option `stateCheckpoint`): the next pass folds it in. */
  readonly mutable?: boolean
  /** The first surface node of a turn. */
  readonly turnStart: boolean
  /** No tool call crosses the cut immediately before this node. */
  readonly balancedBefore: boolean
  /** Who the node speaks for (masking looks for assistant steps and their tool results). */
  readonly role?: 'user' | 'assistant' | 'tool'
}

export interface RegionChoice {
  readonly startIdx: number
  readonly endIdx: number
  readonly tokens: number
}

export type RegionMode = 'pressure' | 'overflow' | 'manual'

export interface RegionRequest {
  readonly mode: RegionMode
  readonly retainTokens: number
  /**
   * Pressure keeps the whole current turn when it is at most this large (the model is working
   * on it); a larger turn is cut like any other history. Default: no such protection.
   */
  readonly currentTurnTokens?: number
  readonly minRegionTokens: number
  /** No tool call crosses the cut after the last node. */
  readonly balancedAtEnd: boolean
}

function sum(nodes: readonly PolicyNode[], from: number, to: number): number {
  let total = 0
  for (let index = from; index <= to; index += 1) total += nodes[index]!.tokens
  return total
}

/** Index of the first node that may be compacted: after the last committed checkpoint. */
export function frozenEnd(nodes: readonly PolicyNode[]): number {
  for (let index = nodes.length - 1; index >= 0; index -= 1) if (nodes[index]!.checkpoint && nodes[index]!.mutable !== true) return index + 1
  return 0
}

/**
 * Where a region splits into its frozen part and the trailing slice a state checkpoint replaces:
 * the last turn start inside it (a balanced cut). Undefined when the region is a single turn.
 */
export function stateSplit(nodes: readonly PolicyNode[], region: RegionChoice): number | undefined {
  for (let index = region.endIdx; index > region.startIdx; index -= 1) {
    if (nodes[index]!.turnStart && nodes[index]!.balancedBefore) return index
  }
  return undefined
}

function isCut(nodes: readonly PolicyNode[], index: number, balancedAtEnd: boolean): boolean {
  return index === nodes.length ? balancedAtEnd : nodes[index]!.balancedBefore
}

export function selectRegion(nodes: readonly PolicyNode[], request: RegionRequest): RegionChoice | null {
  const start = frozenEnd(nodes)
  if (start >= nodes.length || !isCut(nodes, start, request.balancedAtEnd)) return null

  let keepFrom: number
  if (request.mode === 'overflow') {
    // Keep the current turn when something before it can go; otherwise everything balanced but
    // the newest unit (the model needs the question it is answering).
    let lastTurn = -1
    for (let index = nodes.length - 1; index > start; index -= 1) {
      if (nodes[index]!.turnStart && nodes[index]!.balancedBefore) { lastTurn = index; break }
    }
    if (lastTurn > start) keepFrom = lastTurn
    else {
      keepFrom = nodes.length - 1
      while (keepFrom > start && !nodes[keepFrom]!.balancedBefore) keepFrom -= 1
    }
  } else {
    // Walk back from the tail until the retained part reaches its budget.
    let retained = 0
    keepFrom = nodes.length
    while (keepFrom > start && retained < request.retainTokens) {
      keepFrom -= 1
      retained += nodes[keepFrom]!.tokens
    }
    // Prefer a turn boundary at or before that point, as long as it keeps at most twice the budget.
    let candidate = keepFrom
    let kept = retained
    let turnCut = -1
    while (candidate > start) {
      if (nodes[candidate]?.turnStart === true && isCut(nodes, candidate, request.balancedAtEnd)) { turnCut = candidate; break }
      candidate -= 1
      kept += nodes[candidate]!.tokens
      if (kept > Math.max(request.retainTokens * 2, request.retainTokens + 1)) break
    }
    if (turnCut !== -1) keepFrom = turnCut
    else while (keepFrom > start && !isCut(nodes, keepFrom, request.balancedAtEnd)) keepFrom -= 1
    if (request.currentTurnTokens !== undefined) {
      let current = nodes.length - 1
      while (current > start && !nodes[current]!.turnStart) current -= 1
      if (nodes[current]?.turnStart === true && current < keepFrom && nodes[current]!.balancedBefore
        && sum(nodes, current, nodes.length - 1) <= request.currentTurnTokens) keepFrom = current
    }
  }
  const endIdx = keepFrom - 1
  if (endIdx < start) return null
  const tokens = sum(nodes, start, endIdx)
  if (request.mode === 'pressure' && tokens < request.minRegionTokens) return null
  return { startIdx: start, endIdx, tokens }
}

/**
 * When the frozen checkpoints outgrow their budget, the oldest of them (at least two, about half
 * of the frozen tokens) are rolled up into one index node. Returns null while within budget.
 */
export function selectRollup(nodes: readonly PolicyNode[], rollupTokens: number): RegionChoice | null {
  const end = frozenEnd(nodes)
  let frozen = 0
  let count = 0
  for (let index = 0; index < end; index += 1) {
    if (!nodes[index]!.checkpoint) return null // a foreign node among the checkpoints: leave it alone
    frozen += nodes[index]!.tokens
    count += 1
  }
  if (count < 2 || frozen <= rollupTokens) return null
  let tokens = 0
  let endIdx = -1
  while (endIdx + 1 < end && (endIdx < 1 || tokens < frozen / 2)) {
    endIdx += 1
    tokens += nodes[endIdx]!.tokens
  }
  return endIdx >= 1 ? { startIdx: 0, endIdx, tokens } : null
}

export interface MaskRequest {
  /** First node that may be masked (after the pass's new checkpoint). */
  readonly from: number
  /** A step is masked when its tool outputs together reach this many tokens. */
  readonly minTokens: number
  /** The newest surface up to this many tokens stays as it is (the step being worked on). */
  readonly keepTokens: number
  readonly balancedAtEnd: boolean
}

/**
 * Tool steps worth masking behind a pass: an assistant message with its tool results, cut where no
 * call is open, whose outputs reach `minTokens`, older than the newest `keepTokens`. Adjacent steps
 * merge into one run. Oldest first.
 */
export function selectMasks(nodes: readonly PolicyNode[], request: MaskRequest): RegionChoice[] {
  let protectFrom = nodes.length
  let kept = 0
  while (protectFrom > request.from && kept < request.keepTokens) {
    protectFrom -= 1
    kept += nodes[protectFrom]!.tokens
  }
  const runs: RegionChoice[] = []
  let index = request.from
  while (index < protectFrom) {
    const node = nodes[index]!
    if (node.role !== 'assistant' || node.checkpoint || !node.balancedBefore) { index += 1; continue }
    let end = index + 1
    let output = 0
    while (end < nodes.length && nodes[end]!.role === 'tool') output += nodes[end++]!.tokens
    if (end - 1 > index && end <= protectFrom && isCut(nodes, end, request.balancedAtEnd) && output >= request.minTokens) {
      const previous = runs.at(-1)
      const tokens = sum(nodes, index, end - 1)
      if (previous !== undefined && previous.endIdx + 1 === index) runs[runs.length - 1] = { startIdx: previous.startIdx, endIdx: end - 1, tokens: previous.tokens + tokens }
      else runs.push({ startIdx: index, endIdx: end - 1, tokens })
    }
    index = end
  }
  return runs
}
