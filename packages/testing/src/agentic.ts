/**
 * Long agentic turns in the shape DeepSeek's thinking models produce them: many steps per turn,
 * each with reasoning and one to several parallel tool calls, tool outputs of realistic size, and
 * optional provider overflows and user steering in the middle of a turn. Deterministic per seed.
 */
import type { ScriptedTool } from './harness.ts'
import { rng, type ScenarioTurn } from './scenario.ts'
import type { ScriptedReply, ScriptStep } from './scripted-model.ts'

export interface AgenticTurnOptions {
  readonly turns: number
  /** Tool-call steps per turn (the final answer is one more). */
  readonly steps: number
  /** Parallel calls per step, inclusive range. Default [1, 4]. */
  readonly calls?: readonly [number, number]
  readonly seed?: number
  /** Steps (1-based, in every turn) whose request the provider refuses with context-window-exceeded first. */
  readonly overflowAt?: readonly number[]
  /** Steps (1-based, in every turn) during whose request the user steers; called with the steering text. */
  readonly steerAt?: readonly number[]
  readonly onSteer?: (text: string) => void
  /** Reasoning characters per step. Default 240. */
  readonly reasoningChars?: number
}

const TOOLS = ['shell', 'read_file', 'grep'] as const

function filler(random: () => number, chars: number, label: string): string {
  const words = ['const', 'await', 'session', 'surface', 'checkpoint', 'digest', 'region', 'import', 'return', 'export', 'store', 'batch']
  const lines: string[] = []
  let used = 0
  let line = 1
  while (used < chars) {
    const text = `${String(line).padStart(4)}  ${Array.from({ length: 8 }, () => words[Math.floor(random() * words.length)]).join(' ')} // ${label}`
    lines.push(text)
    used += text.length + 1
    line += 1
  }
  return lines.join('\n')
}

/** Tools whose outputs are sized like real ones and name what they were asked. */
export function agenticTools(seed = 1, outputChars = 900): ScriptedTool[] {
  const random = rng(seed)
  return TOOLS.map(name => ({
    name,
    description: name === 'shell' ? 'Run a shell command and return its output.' : name === 'grep' ? 'Search the workspace.' : 'Read a file from the workspace.',
    run: args => {
      const subject = String(args['command'] ?? args['path'] ?? '')
      return `${name} ${subject}\n${filler(random, Math.floor(outputChars * (0.5 + random())), subject)}`
    },
  }))
}

/** Scripted turns: `steps` tool-call steps with reasoning, then a final answer with reasoning. */
export function agenticTurns(options: AgenticTurnOptions): ScenarioTurn[] {
  const random = rng(options.seed ?? 7)
  const [low, high] = options.calls ?? [1, 4]
  const reasoningChars = options.reasoningChars ?? 240
  const turns: ScenarioTurn[] = []
  for (let turn = 1; turn <= options.turns; turn += 1) {
    const steps: ScriptStep[] = []
    for (let step = 1; step <= options.steps; step += 1) {
      const count = low + Math.floor(random() * (high - low + 1))
      const reasoning = `Turn ${turn}, step ${step}: ${filler(random, reasoningChars, `plan t${turn}s${step}`).replace(/\n/g, ' ')}`
      const reply: ScriptedReply = {
        kind: 'tools',
        reasoning,
        ...(step % 5 === 0 ? { text: `Checked ${count} places so far in step ${step}.` } : {}),
        calls: Array.from({ length: count }, (_, index) => {
          const tool = TOOLS[(step + index) % TOOLS.length]!
          const target = `src/module_${turn}_${step}_${index}.ts`
          return { name: tool, args: tool === 'read_file' ? { path: target } : { command: `${tool === 'grep' ? 'grep -n' : 'npx tsc --noEmit -p'} ${target}` } }
        }),
      }
      if (options.overflowAt?.includes(step) === true) steps.push({ kind: 'overflow' })
      if (options.steerAt?.includes(step) === true) {
        const text = `Steering in turn ${turn} at step ${step}: also check the retry path in module_${turn}_${step}.`
        steps.push(() => {
          options.onSteer?.(text)
          return reply
        })
      } else steps.push(reply)
    }
    steps.push({ kind: 'text', reasoning: `Turn ${turn}: everything checked, summarise.`, text: `Turn ${turn} done: ${options.steps} steps of checks, all passing.` })
    turns.push({ prompt: `Turn ${turn}: audit every module touched by change ${turn} and fix what fails.`, steps })
  }
  return turns
}
