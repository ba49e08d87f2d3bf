/**
 * The tools of an agent scenario: each call returns the output the scenario recorded for it.
 * Outputs are queued per (tool, arguments) and served in call order; a re-run the needs-aware model
 * makes is primed first, so it returns what the scenario says a re-run returns at that point.
 */
import type { ScriptedTool } from '../harness.ts'
import type { AgentCall, AgentScenario } from './schema.ts'

const DESCRIPTIONS: Record<string, string> = {
  shell: 'Run a shell command in the workspace and return its output.',
  read_file: 'Read a file from the workspace.',
  write_file: 'Write a file in the workspace.',
  edit_file: 'Replace text in a workspace file.',
  grep: 'Search the workspace for a pattern.',
}

/** Canonical key of a call: tool name and its arguments with sorted keys. */
export function callKey(name: string, args: Readonly<Record<string, unknown>>): string {
  const sorted = Object.fromEntries(Object.entries(args).toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return `${name} ${JSON.stringify(sorted)}`
}

export class ScenarioToolbox {
  private readonly queues = new Map<string, string[]>()
  private readonly names: string[]
  /** Calls that found no recorded output (a scenario/model mismatch worth reporting). */
  readonly unmatched: string[] = []

  constructor(scenario: AgentScenario) {
    const names = new Set<string>()
    for (const turn of scenario.turns) {
      for (const step of turn.steps) {
        for (const call of step.calls ?? []) {
          names.add(call.name)
          const key = callKey(call.name, call.args)
          const queue = this.queues.get(key) ?? []
          queue.push(call.output)
          this.queues.set(key, queue)
        }
      }
    }
    for (const need of scenario.needs) if (need.rerun !== undefined) names.add(need.rerun.name)
    this.names = [...names].toSorted()
  }

  /** Make the next call with these arguments return this output (a re-run). */
  prime(call: AgentCall): void {
    const key = callKey(call.name, call.args)
    const queue = this.queues.get(key) ?? []
    queue.unshift(call.output)
    this.queues.set(key, queue)
  }

  /** dsh tool definitions for the harness. */
  tools(): ScriptedTool[] {
    return this.names.map(name => ({
      name,
      description: DESCRIPTIONS[name] ?? `The ${name} tool.`,
      run: args => {
        const key = callKey(name, args)
        const output = this.queues.get(key)?.shift()
        if (output !== undefined) return output
        this.unmatched.push(key)
        return `${name}: no output recorded for ${key}`
      },
    }))
  }
}
