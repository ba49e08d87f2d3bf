/**
 * Agent sessions with needs: the data model and its JSONL form. Any file in this schema can be run
 * by `bench:agent --scenario FILE`, not only generated ones (the schema is documented in
 * bench/README.md).
 *
 * One JSON object per line, told apart by `type`:
 * - `session` (first line): `{ type, version: 1, id, seed?, note? }`
 * - `turn`: `{ type, turn, prompt, steps: [{ text?, reasoning?, calls?: [{ name, args, output }] }] }`;
 *   steps with calls are tool steps (the calls run in one step, in order); the last step has no calls
 *   and is the turn's final answer.
 * - `need`: `{ type, id, turn, fact, query, kind, origin?, important, rerun?: { name, args, output } }`:
 *   at the start of `turn` the agent needs the exact text `fact`; `query` is how a model would search
 *   for it; `rerun` is the tool call that produces it again (absent: not re-runnable).
 * - `absent`: `{ type, id, turn, term, query }`: the prompt of `turn` asks about `term`, which no other
 *   part of the session mentions; the right answer is "never discussed" (and a proactive recall that
 *   fires before it is a false positive).
 */

export type NeedKind = 'decision' | 'tool-value' | 'identifier' | 'file-content' | 'open-item' | 'changed-value'

export const NEED_KINDS: readonly NeedKind[] = ['decision', 'tool-value', 'identifier', 'file-content', 'open-item', 'changed-value']

export interface AgentCall {
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
  /** What the tool returns for this call. */
  readonly output: string
}

export interface AgentStep {
  readonly text?: string
  readonly reasoning?: string
  /** Tool calls of this step; none on the final answer. */
  readonly calls?: readonly AgentCall[]
}

export interface AgentTurn {
  /** 1-based. */
  readonly turn: number
  readonly prompt: string
  readonly steps: readonly AgentStep[]
}

export interface Need {
  readonly id: string
  /** Turn (1-based) at whose start the fact is needed. */
  readonly turn: number
  /** Exact text that must be in the request, or come back in a tool result. */
  readonly fact: string
  /** A search-style description written from the need, not from the answer. */
  readonly query: string
  readonly kind: NeedKind
  /** Turn the fact entered the conversation (informational). */
  readonly origin?: number
  /** What a good summarizer is assumed to keep (the generous stand-in for compaction-basic). */
  readonly important: boolean
  /** The tool call that produces the fact again; absent when it cannot be re-run. */
  readonly rerun?: AgentCall
}

/** A question about something the session never mentioned: "not found" is the right outcome. */
export interface AbsentQuestion {
  readonly id: string
  /** Turn (1-based) whose prompt asks the question. */
  readonly turn: number
  /** The never-mentioned thing; the asking prompt names it, nothing else in the session does (case-insensitive). */
  readonly term: string
  /** How a model would search for it. */
  readonly query: string
}

export interface AgentScenario {
  readonly id: string
  readonly seed?: number
  readonly note?: string
  readonly turns: readonly AgentTurn[]
  readonly needs: readonly Need[]
  /** Never-discussed questions (none when absent). */
  readonly absent?: readonly AbsentQuestion[]
}

/** Every text of a turn the model or tools produce or receive, for absence checks. */
function turnTexts(turn: AgentTurn, withPrompt: boolean): string[] {
  const texts = withPrompt ? [turn.prompt] : []
  for (const entry of turn.steps) {
    texts.push(entry.text ?? '', entry.reasoning ?? '')
    for (const made of entry.calls ?? []) texts.push(made.name, JSON.stringify(made.args), made.output)
  }
  return texts
}

/** Why an absent question is not one (the term occurs elsewhere in the session), or undefined when it is. */
export function absentConflict(scenario: Pick<AgentScenario, 'turns' | 'needs'>, question: Pick<AbsentQuestion, 'turn' | 'term'>): string | undefined {
  const term = question.term.toLowerCase()
  const asking = scenario.turns[question.turn - 1]
  if (asking === undefined) return `turn ${question.turn} does not exist`
  if (!asking.prompt.toLowerCase().includes(term)) return `the prompt of turn ${question.turn} does not name "${question.term}"`
  for (const turn of scenario.turns) {
    if (turnTexts(turn, turn.turn !== question.turn).some(text => text.toLowerCase().includes(term))) return `"${question.term}" occurs in turn ${turn.turn}`
  }
  for (const need of scenario.needs) {
    if ([need.fact, need.rerun?.output ?? ''].some(text => text.toLowerCase().includes(term))) return `"${question.term}" occurs in need ${need.id}`
  }
  return undefined
}

/** A scenario file that does not follow the schema: which line, and what is wrong. */
export class ScenarioFormatError extends Error {
  override readonly name = 'ScenarioFormatError'
  readonly line: number
  constructor(line: number, message: string) {
    super(`scenario line ${line}: ${message}`)
    this.line = line
  }
}

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function str(record: Json, key: string, line: number, optional = false): string | undefined {
  const value = record[key]
  if (value === undefined && optional) return undefined
  if (typeof value !== 'string') throw new ScenarioFormatError(line, `"${key}" must be a string`)
  return value
}

function int(record: Json, key: string, line: number, optional = false): number | undefined {
  const value = record[key]
  if (value === undefined && optional) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new ScenarioFormatError(line, `"${key}" must be a positive integer`)
  return value
}

function call(value: unknown, line: number): AgentCall {
  if (!isObject(value)) throw new ScenarioFormatError(line, 'a call must be an object')
  const name = str(value, 'name', line)!
  if (!isObject(value['args'])) throw new ScenarioFormatError(line, `call ${name}: "args" must be an object`)
  return { name, args: value['args'], output: str(value, 'output', line)! }
}

function step(value: unknown, line: number): AgentStep {
  if (!isObject(value)) throw new ScenarioFormatError(line, 'a step must be an object')
  const text = str(value, 'text', line, true)
  const reasoning = str(value, 'reasoning', line, true)
  const calls = value['calls']
  if (calls !== undefined && !Array.isArray(calls)) throw new ScenarioFormatError(line, '"calls" must be an array')
  return {
    ...(text === undefined ? {} : { text }),
    ...(reasoning === undefined ? {} : { reasoning }),
    ...(calls === undefined || calls.length === 0 ? {} : { calls: calls.map(item => call(item, line)) }),
  }
}

/** Parse and validate a scenario file's text. Throws ScenarioFormatError naming the line. */
export function parseScenario(text: string): AgentScenario {
  const lines = text.split('\n')
  let header: { id: string; seed?: number; note?: string } | undefined
  const turns: AgentTurn[] = []
  const needs: Need[] = []
  const absent: AbsentQuestion[] = []
  for (const [index, raw] of lines.entries()) {
    const line = index + 1
    if (raw.trim().length === 0) continue
    let record: unknown
    try {
      record = JSON.parse(raw)
    } catch (error) {
      throw new ScenarioFormatError(line, `not JSON (${error instanceof Error ? error.message : String(error)})`)
    }
    if (!isObject(record)) throw new ScenarioFormatError(line, 'each line must be a JSON object')
    const type = record['type']
    if (header === undefined && type !== 'session') throw new ScenarioFormatError(line, 'the first record must be {"type":"session",...}')
    switch (type) {
      case 'session': {
        if (header !== undefined) throw new ScenarioFormatError(line, 'a second session record')
        if (record['version'] !== 1) throw new ScenarioFormatError(line, 'unsupported "version" (expected 1)')
        const seed = record['seed']
        if (seed !== undefined && (typeof seed !== 'number' || !Number.isInteger(seed))) throw new ScenarioFormatError(line, '"seed" must be an integer')
        const note = str(record, 'note', line, true)
        header = { id: str(record, 'id', line)!, ...(seed === undefined ? {} : { seed }), ...(note === undefined ? {} : { note }) }
        break
      }
      case 'turn': {
        const turn = int(record, 'turn', line)!
        if (turn !== turns.length + 1) throw new ScenarioFormatError(line, `turns must be numbered 1, 2, … in order (expected ${turns.length + 1}, got ${turn})`)
        const steps = record['steps']
        if (!Array.isArray(steps) || steps.length === 0) throw new ScenarioFormatError(line, '"steps" must be a non-empty array')
        const parsed = steps.map(item => step(item, line))
        if (parsed.at(-1)!.calls !== undefined) throw new ScenarioFormatError(line, 'the last step of a turn must be a final answer (no calls)')
        if (parsed.slice(0, -1).some(item => item.calls === undefined)) throw new ScenarioFormatError(line, 'only the last step of a turn may be without calls')
        turns.push({ turn, prompt: str(record, 'prompt', line)!, steps: parsed })
        break
      }
      case 'need': {
        const kind = str(record, 'kind', line)!
        if (!NEED_KINDS.includes(kind as NeedKind)) throw new ScenarioFormatError(line, `"kind" must be one of ${NEED_KINDS.join(', ')}`)
        const important = record['important']
        if (typeof important !== 'boolean') throw new ScenarioFormatError(line, '"important" must be a boolean')
        const fact = str(record, 'fact', line)!
        const query = str(record, 'query', line)!
        if (fact.length === 0 || query.trim().length === 0) throw new ScenarioFormatError(line, '"fact" and "query" must not be empty')
        const origin = int(record, 'origin', line, true)
        needs.push({
          id: str(record, 'id', line)!,
          turn: int(record, 'turn', line)!,
          fact,
          query,
          kind: kind as NeedKind,
          important,
          ...(origin === undefined ? {} : { origin }),
          ...(record['rerun'] === undefined || record['rerun'] === null ? {} : { rerun: call(record['rerun'], line) }),
        })
        break
      }
      case 'absent': {
        const term = str(record, 'term', line)!
        const query = str(record, 'query', line)!
        if (term.trim().length === 0 || query.trim().length === 0) throw new ScenarioFormatError(line, '"term" and "query" must not be empty')
        absent.push({ id: str(record, 'id', line)!, turn: int(record, 'turn', line)!, term, query })
        break
      }
      default:
        throw new ScenarioFormatError(line, `unknown record type ${JSON.stringify(type)}`)
    }
  }
  if (header === undefined) throw new ScenarioFormatError(1, 'empty scenario')
  for (const need of needs) {
    if (need.turn > turns.length) throw new ScenarioFormatError(0, `need ${need.id} arises at turn ${need.turn}, after the last turn (${turns.length})`)
    if (turns[need.turn - 1]!.prompt.includes(need.fact)) throw new ScenarioFormatError(0, `need ${need.id}: the fact is in the prompt of the turn that needs it`)
    // a query holding the answer would find itself: the echo of the query is not the fact coming back
    if (need.query.includes(need.fact)) throw new ScenarioFormatError(0, `need ${need.id}: the query contains the fact`)
  }
  for (const question of absent) {
    const conflict = absentConflict({ turns, needs }, question)
    if (conflict !== undefined) throw new ScenarioFormatError(0, `absent ${question.id}: ${conflict}`)
  }
  return { ...header, turns, needs, absent }
}

/** The JSONL text of a scenario (what `parseScenario` reads back). */
export function serializeScenario(scenario: AgentScenario): string {
  const lines: unknown[] = [
    { type: 'session', version: 1, id: scenario.id, ...(scenario.seed === undefined ? {} : { seed: scenario.seed }), ...(scenario.note === undefined ? {} : { note: scenario.note }) },
    ...scenario.turns.map(turn => ({ type: 'turn', ...turn })),
    ...scenario.needs.map(need => ({ type: 'need', ...need })),
    ...(scenario.absent ?? []).map(question => ({ type: 'absent', ...question })),
  ]
  return `${lines.map(line => JSON.stringify(line)).join('\n')}\n`
}
