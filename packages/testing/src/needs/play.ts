/** Play an agent scenario on a real dsh composition with the needs-aware model. */
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { DshHarness } from '../harness.ts'
import type { NeedsModel } from '../needs-model.ts'

export interface PlayReport {
  /** Turns that did not end `completed` (e.g. a request the provider refused). */
  readonly failedTurns: number
}

export async function playScenario(harness: DshHarness, agent: Agent, model: NeedsModel): Promise<PlayReport> {
  let failedTurns = 0
  for (const index of model.scenario.turns.keys()) {
    model.beginTurn(index)
    const end = await harness.send(agent, model.promptFor(index))
    if (end.data.reason.kind !== 'completed') failedTurns += 1
  }
  model.finishTurn()
  return { failedTurns }
}
