/**
 * Generated agent sessions whose later turns need earlier facts. Turns look like an agent's:
 * mostly short, some long (up to 40+ steps), several and parallel tool calls per step, reasoning
 * text before calls, large and one-line outputs, en/zh prompts. Facts come from FACT_FAMILIES and
 * are needed a few to many turns after they appeared (some soon, so the surface answers them).
 */
import { bigLog, codeBlock, ERRORS, FILES, FUNCTIONS, pick, rng, testLog } from '../scenario.ts'
import { plantAbsentQuestions } from './absent.ts'
import { FACT_FAMILIES, type FactEvent, type FactPlan } from './facts.ts'
import type { AgentCall, AgentScenario, AgentStep, AgentTurn, Need } from './schema.ts'

export interface AgentSessionOptions {
  readonly seed: number
  /** Turns in the session. Default 40. */
  readonly turns?: number
  /** Share of Chinese turns. Default 0.3. */
  readonly chineseRatio?: number
  /** Typical tool output size in characters. Default 1 400. */
  readonly outputChars?: number
  /** Facts planted per 10 turns. Default 4. */
  readonly factsPer10Turns?: number
  /** Share of turns that are long (15–45 steps). Default 0.12. */
  readonly longTurnRatio?: number
  /** Never-discussed questions (question-only turns in the later half). Default 3. */
  readonly absentQuestions?: number
}

const EN_TASKS = [
  'Look at {file} and find out why {fn} fails intermittently.',
  'Run the tests around {file} and fix whatever breaks.',
  'Refactor {fn} in {file} so it no longer swallows errors.',
  'The CI log shows "{error}". Find the cause and fix it.',
  'Tighten the types in {file}; {fn} returns any.',
  'Add request-id logging around {fn}.',
]
const ZH_TASKS = [
  '请检查 {file} 里的 {fn}，为什么偶尔会超时？',
  '帮我跑一下 {file} 相关的测试，把失败的修好。',
  '线上日志出现 "{error}"，请定位原因并修复。',
  '{fn} 的错误处理太粗糙了，请重构一下。',
]
const EN_THOUGHTS = [
  'The stack trace points at {fn}; reading the callers next.',
  'Two candidates: the pool release and the retry wrapper. Checking both in parallel.',
  'That test passes in isolation, so it is order-dependent. Looking at shared state.',
  'The fix compiles; running the affected suites.',
  'Grepping for other uses of {fn} before changing its signature.',
]
const ZH_THOUGHTS = [
  '堆栈指向 {fn}，接下来看调用方。',
  '有两个可能：连接池释放和重试封装，同时检查。',
  '修复已编译通过，运行受影响的测试。',
]
const EN_ANSWERS = [
  'Fixed: {fn} released the connection before the query settled; {file} now awaits it, with a regression test.',
  'Done. {fn} rethrows with context and the callers in {file} handle it; all suites pass.',
  'The types in {file} are strict now; {fn} returns Result<Order>.',
]
const ZH_ANSWERS = [
  '已修复：{fn} 在查询完成前释放了连接，{file} 现在会等待，并补了回归测试。',
  '重构完成，{fn} 会带上上下文重新抛出异常，测试全部通过。',
]

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => values[key] ?? key)
}

/** One ordinary tool call with a plausible output; `unique` keeps repeated calls apart. */
function workCall(random: () => number, file: string, fn: string, chars: number, unique: string): AgentCall {
  const kind = random()
  if (kind < 0.4) return { name: 'read_file', args: { path: pick(random, FILES) }, output: codeBlock(random, file, fn, Math.floor(chars * (0.4 + random() * 1.4))) }
  if (kind < 0.65) {
    const command = `npx vitest run ${file} -t ${fn}${unique}`
    return { name: 'shell', args: { command }, output: testLog(random, file, Math.floor(chars * (0.4 + random())), random() < 0.4) }
  }
  if (kind < 0.8) {
    const command = `grep -rn ${fn} src${unique}`
    const hits = Array.from({ length: 2 + Math.floor(random() * 8) }, () => `${pick(random, FILES)}:${Math.floor(random() * 300) + 1}:  await ${fn}(input, pool)`)
    return { name: 'shell', args: { command }, output: hits.join('\n') }
  }
  if (kind < 0.93) {
    return { name: 'write_file', args: { path: file, content: `// patched ${unique}\nexport const ${fn}Patched = true\n` }, output: `wrote ${file} (${Math.floor(random() * 40) + 2} lines changed)` }
  }
  const command = `npx tsc --noEmit -p .${unique}`
  return { name: 'shell', args: { command }, output: random() < 0.5 ? '' : `src/${file}:${Math.floor(random() * 200)}:7 - error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.` }
}

/** How many steps a turn takes: mostly a few, sometimes very many. */
function stepCount(random: () => number, longRatio: number): number {
  if (random() < longRatio) return 15 + Math.floor(random() * 31)
  return 1 + Math.floor(random() * 6)
}

export function agentSession(options: AgentSessionOptions): AgentScenario {
  const random = rng(options.seed * 7919 + 17)
  const turnCount = options.turns ?? 40
  const chineseRatio = options.chineseRatio ?? 0.3
  const outputChars = options.outputChars ?? 1_400
  const longRatio = options.longTurnRatio ?? 0.12
  const factCount = Math.max(1, Math.round((turnCount / 10) * (options.factsPer10Turns ?? 4)))

  // Plan the facts: where each appears, changes, and is needed.
  const plans: Array<{ plan: FactPlan; needTurn: number; origin: number }> = []
  const planned = turnCount >= 4 ? factCount : 0
  for (let index = 0; index < planned; index += 1) {
    const family = FACT_FAMILIES[(index + options.seed) % FACT_FAMILIES.length]!
    const origin = 1 + Math.floor(random() * Math.max(1, turnCount - 3))
    const soon = random() < 0.2
    const update = Math.min(turnCount - 1, origin + 1 + Math.floor(random() * 4))
    const earliest = update + 1
    const needTurn = Math.min(turnCount, soon ? earliest : earliest + 2 + Math.floor(random() * Math.max(1, turnCount - earliest)))
    if (needTurn <= update) continue
    const plan = family(random, { origin, update, zh: random() < chineseRatio, serial: index + 1 })
    plans.push({ plan, needTurn, origin })
  }
  const eventsByTurn = new Map<number, FactEvent[]>()
  for (const { plan } of plans) {
    for (const event of plan.events) {
      const list = eventsByTurn.get(event.turn) ?? []
      list.push(event)
      eventsByTurn.set(event.turn, list)
    }
  }

  const turns: AgentTurn[] = []
  let unique = 0
  for (let turn = 1; turn <= turnCount; turn += 1) {
    const zh = random() < chineseRatio
    const file = pick(random, FILES)
    const fn = pick(random, FUNCTIONS)
    const values = { file, fn, error: pick(random, ERRORS) }
    let prompt = fill(pick(random, zh ? ZH_TASKS : EN_TASKS), values)
    let answer = fill(pick(random, zh ? ZH_ANSWERS : EN_ANSWERS), values)
    const steps: AgentStep[] = []
    const count = stepCount(random, longRatio)
    for (let step = 0; step < count; step += 1) {
      const parallel = random() < 0.35 ? 2 + Math.floor(random() * 3) : 1
      const calls: AgentCall[] = []
      for (let call = 0; call < parallel; call += 1) calls.push(workCall(random, file, fn, outputChars, ` #${++unique}`))
      // now and then a command with a very large output (a log dump)
      if (random() < 0.03) {
        const command = `docker compose logs ${pick(random, ['api', 'worker', 'db'])} --tail 400 #${++unique}`
        calls.push({ name: 'shell', args: { command }, output: bigLog(random, 12_000 + Math.floor(random() * 12_000)) })
      }
      steps.push({ text: fill(pick(random, zh ? ZH_THOUGHTS : EN_THOUGHTS), values), calls: dedupe(calls) })
    }
    for (const event of eventsByTurn.get(turn) ?? []) {
      if (event.prompt !== undefined) prompt = `${prompt} ${event.prompt}`
      if (event.answer !== undefined) answer = `${answer} ${event.answer}`
      if (event.step !== undefined) steps.splice(Math.floor(random() * (steps.length + 1)), 0, { text: event.step.text, calls: [event.step.call] })
    }
    for (const { plan, needTurn } of plans) if (needTurn === turn) prompt = `${prompt} ${plan.ask}`
    steps.push({ text: answer, reasoning: zh ? '确认改动和测试结果后作答。' : 'Checked the diff and the test results; answering.' })
    turns.push({ turn, prompt, steps })
  }

  const needs: Need[] = plans.map(({ plan, needTurn, origin }, index) => ({
    id: `n${index + 1}-${plan.kind}`,
    turn: needTurn,
    fact: plan.fact,
    query: plan.query,
    kind: plan.kind,
    origin,
    important: plan.important,
    ...(plan.rerun === undefined ? {} : { rerun: plan.rerun }),
  })).filter(need => !turns[need.turn - 1]!.prompt.includes(need.fact))
  const absent = plantAbsentQuestions(turns, needs, new Set(eventsByTurn.keys()), { seed: options.seed, count: options.absentQuestions ?? 3, chineseRatio })
  return { id: `agent-${options.seed}`, seed: options.seed, note: `generated by agentSession (seed ${options.seed}, ${turnCount} turns)`, turns, needs, absent }
}

/** Calls of one step must differ (the toolbox serves outputs per call key). */
function dedupe(calls: AgentCall[]): AgentCall[] {
  const seen = new Set<string>()
  return calls.filter(call => {
    const key = `${call.name} ${JSON.stringify(call.args)}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
