/**
 * Deterministic, realistic coding sessions for the scripted model: bilingual prompts, tool calls
 * with plausible outputs (file reads, test runs, logs), occasional very large outputs, and planted
 * facts (decisions made early, needed late) with the questions that need them.
 */
import type { ScriptStep } from './scripted-model.ts'
import type { ScriptedTool } from './harness.ts'

/** Small seeded PRNG (mulberry32): the same seed gives the same session everywhere. */
export function rng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface PlantedFact {
  readonly id: string
  /** Turn (1-based) in which the fact enters the conversation. */
  readonly turn: number
  /** Where it lives: the user's words, a tool output, or the assistant's answer. */
  readonly where: 'user' | 'tool' | 'assistant'
  readonly language: 'en' | 'zh'
  /** A question whose answer needs the fact. */
  readonly question: string
  /** Exact text that must come back (a substring of the original message). */
  readonly answer: string
  /** A good search query for it. */
  readonly query: string
}

export interface ScenarioTurn {
  readonly prompt: string
  readonly steps: readonly ScriptStep[]
}

export interface Scenario {
  readonly turns: readonly ScenarioTurn[]
  /** Tools that replay the scenario's outputs in call order; each call gives an independent set. */
  tools(): ScriptedTool[]
  readonly facts: readonly PlantedFact[]
}

export interface CodingSessionOptions {
  readonly turns: number
  readonly seed?: number
  /** Share of prompts in Chinese. Default 0.3. */
  readonly chineseRatio?: number
  /** Tool calls per turn, inclusive range. Default [0, 3]. */
  readonly toolCalls?: readonly [number, number]
  /** Every n-th turn runs a command with a huge output. Default 0 (never). */
  readonly bigOutputEvery?: number
  /** Size of the huge outputs in characters. Default 1 MB. */
  readonly bigOutputChars?: number
  /** Typical tool output size in characters. Default 1 200. */
  readonly outputChars?: number
  /** Plant facts (in the first turns) and ask for them in the last ones. Default true. */
  readonly plantFacts?: boolean
}

export const FILES = [
  'src/server/routes.ts', 'src/server/middleware/auth.ts', 'src/db/pool.ts', 'src/db/migrations/0007_orders.sql',
  'src/jobs/scheduler.ts', 'src/cache/redis.ts', 'src/api/orders.ts', 'src/api/users.ts', 'src/lib/retry.ts',
  'src/lib/logger.ts', 'test/orders.spec.ts', 'test/pool.spec.ts', 'package.json', 'tsconfig.json', 'docker-compose.yml',
]
export const FUNCTIONS = [
  'handleRequestTimeout', 'createOrder', 'refundPayment', 'acquireConnection', 'scheduleNightlyJob', 'parseAuthHeader',
  'withRetry', 'invalidateCache', 'serializeInvoice', 'validateCoupon', 'listUsers', 'rotateSigningKey',
]
export const ERRORS = [
  'ECONNREFUSED 127.0.0.1:5432', 'TypeError: Cannot read properties of undefined (reading \'id\')', 'ETIMEDOUT after 30000ms',
  'duplicate key value violates unique constraint "orders_pkey"', 'Error: jwt expired', 'RangeError: Maximum call stack size exceeded',
]
const EN_PROMPTS = [
  'Look at {file} and tell me why {fn} fails intermittently.',
  'Run the tests for {file} and fix whatever breaks.',
  'Refactor {fn} in {file} so it no longer swallows errors.',
  'Add logging around {fn}; the on-call team needs request ids.',
  'The CI log shows "{error}". Find the cause.',
  'Can you tighten the types in {file}? {fn} returns any.',
  'Check whether {fn} is covered by tests and add what is missing.',
]
const ZH_PROMPTS = [
  '请检查 {file} 里的 {fn}，为什么偶尔会超时？',
  '帮我跑一下 {file} 相关的测试，把失败的修好。',
  '{fn} 的错误处理太粗糙了，请重构一下，不要吞掉异常。',
  '线上日志出现 "{error}"，请定位原因并给出修复方案。',
  '请给 {fn} 加上请求编号的日志，方便值班同事排查。',
]
const EN_ANSWERS = [
  'I traced the failure in {fn}: the connection is released before the query settles. I changed {file} to await the release and added a regression test.',
  'The tests pass now. {fn} was reading a stale config object; it now takes the pool from the caller.',
  'Done. {fn} rethrows with context instead of returning undefined, and the call sites in {file} handle it.',
  'I added structured logs with the request id to {fn}; sample output is in the test run above.',
]
const ZH_ANSWERS = [
  '已经定位：{fn} 在查询完成前就释放了连接。我修改了 {file}，并补了一个回归测试。',
  '测试已全部通过。{fn} 之前读取的是过期的配置对象，现在改为由调用方传入连接池。',
  '重构完成：{fn} 会带上上下文重新抛出异常，{file} 里的调用方也做了相应处理。',
]

/** Facts planted in the first turns; questions asked at the end. */
const FACT_TEMPLATES: ReadonlyArray<Omit<PlantedFact, 'turn'>> = [
  { id: 'db-port', where: 'user', language: 'en', answer: 'move the staging database to port 5433', query: 'staging database port', question: 'Which port did we agree for the staging database?' },
  { id: 'trace-header', where: 'assistant', language: 'en', answer: 'propagate the X-Trace-Id header through withRetry', query: 'trace header withRetry', question: 'What header did we decide to propagate through the retry helper?' },
  { id: 'migration-name', where: 'tool', language: 'en', answer: 'applied migration 0007_orders_add_refund_state', query: 'migration refund state', question: 'What was the exact name of the migration that added the refund state?' },
  { id: 'zh-cache-ttl', where: 'user', language: 'zh', answer: '缓存过期时间统一改成九十秒', query: '缓存过期时间', question: '我们之前把缓存过期时间定成多少？' },
  { id: 'signing-key', where: 'tool', language: 'en', answer: 'signing key kid=ops-2026-11-rot3', query: 'signing key kid', question: 'Which key id did the rotation job print?' },
  { id: 'zh-owner', where: 'assistant', language: 'zh', answer: '订单模块的负责人是林晓峰', query: '订单模块 负责人', question: '订单模块归谁负责？' },
]

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => values[key] ?? key)
}

export function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!
}

export function codeBlock(random: () => number, file: string, fn: string, chars: number): string {
  const lines = [`// ${file}`, `import { withRetry } from '../lib/retry'`, `import { logger } from '../lib/logger'`, '']
  let index = 0
  while (lines.join('\n').length < chars) {
    const name = index === 0 ? fn : `${pick(random, FUNCTIONS)}${index}`
    lines.push(
      `export async function ${name}(input: Request, pool: Pool): Promise<Result> {`,
      `  const started = Date.now()`,
      `  const conn = await pool.acquire({ timeoutMs: ${1000 + Math.floor(random() * 9000)} })`,
      `  try {`,
      `    const rows = await conn.query('SELECT * FROM orders WHERE id = $1', [input.id])`,
      `    logger.info({ fn: '${name}', ms: Date.now() - started, rows: rows.length })`,
      `    return { ok: true, rows }`,
      `  } finally {`,
      `    conn.release()`,
      `  }`,
      `}`,
      '',
    )
    index += 1
  }
  return lines.join('\n').slice(0, chars)
}

export function testLog(random: () => number, file: string, chars: number, failing: boolean): string {
  const lines = [`$ npx vitest run ${file}`, '']
  let count = 0
  while (lines.join('\n').length < chars) {
    count += 1
    const ok = !failing || random() > 0.15
    lines.push(` ${ok ? '✓' : '×'} ${file} > ${pick(random, FUNCTIONS)} case ${count} (${Math.floor(random() * 90) + 3} ms)`)
    if (!ok) lines.push(`   → ${pick(random, ERRORS)}`, `     at ${pick(random, FUNCTIONS)} (${file}:${Math.floor(random() * 300) + 1}:${Math.floor(random() * 40) + 1})`)
  }
  lines.push('', ` Test Files  1 ${failing ? 'failed' : 'passed'} (1)`, `      Tests  ${count} total`)
  return lines.join('\n').slice(0, Math.max(chars, 200))
}

export function bigLog(random: () => number, chars: number): string {
  const parts: string[] = []
  let size = 0
  let line = 0
  while (size < chars) {
    line += 1
    const text = `2026-11-${String(1 + (line % 28)).padStart(2, '0')}T0${line % 10}:${String(line % 60).padStart(2, '0')}:12.${String(line % 1000).padStart(3, '0')}Z INFO ${pick(random, FUNCTIONS)} request=${(line * 7919) % 100000} status=${random() > 0.97 ? 500 : 200} ms=${Math.floor(random() * 800)}\n`
    parts.push(text)
    size += text.length
  }
  return parts.join('').slice(0, chars)
}

/**
 * A long scripted coding session. Tool outputs are produced by the returned tools from the call's
 * arguments (each call carries a unique `path` or `command`), so the script and the tools agree.
 */
export function codingSession(options: CodingSessionOptions): Scenario {
  const random = rng(options.seed ?? 7)
  const chineseRatio = options.chineseRatio ?? 0.3
  const [minCalls, maxCalls] = options.toolCalls ?? [0, 3]
  const outputChars = options.outputChars ?? 1_200
  // Outputs are queued per (tool, argument) and handed out in call order, so arguments stay realistic.
  const outputs = new Map<string, string[]>()
  const put = (key: string, output: string): void => {
    const queue = outputs.get(key) ?? []
    queue.push(output)
    outputs.set(key, queue)
  }
  const turns: ScenarioTurn[] = []
  const plant = options.plantFacts ?? true
  const facts: PlantedFact[] = []
  const factQueue = plant ? [...FACT_TEMPLATES] : []

  for (let turn = 1; turn <= options.turns; turn += 1) {
    const file = pick(random, FILES)
    const fn = pick(random, FUNCTIONS)
    const error = pick(random, ERRORS)
    const chinese = random() < chineseRatio
    let prompt = fill(pick(random, chinese ? ZH_PROMPTS : EN_PROMPTS), { file, fn, error })
    let answer = fill(pick(random, chinese ? ZH_ANSWERS : EN_ANSWERS), { file, fn })
    const steps: ScriptStep[] = []
    // Plant one fact in each of the first turns, in the place its template says.
    const fact = turn >= 2 && factQueue.length > 0 ? factQueue.shift() : undefined
    let factToolKey: string
    if (fact !== undefined) {
      facts.push({ ...fact, turn })
      if (fact.where === 'user') prompt = `${prompt} ${fact.language === 'zh' ? '另外，' : 'Also, we decided to '}${fact.language === 'zh' ? `${fact.answer}。` : `${fact.answer}.`}`
      if (fact.where === 'assistant') answer = `${answer} ${fact.language === 'zh' ? `另外记录一下：${fact.answer}。` : `Decision recorded: ${fact.answer}.`}`
    }
    const callCount = minCalls + Math.floor(random() * (maxCalls - minCalls + 1))
    for (let call = 0; call < callCount; call += 1) {
      const kind = random()
      if (kind < 0.45) {
        put(`read_file ${file}`, codeBlock(random, file, fn, Math.floor(outputChars * (0.5 + random()))))
        steps.push({ kind: 'tools', text: chinese ? `先看一下 ${file}。` : `Reading ${file}.`, calls: [{ name: 'read_file', args: { path: file } }] })
      } else if (kind < 0.85) {
        const command = `npx vitest run ${file}`
        put(`shell ${command}`, testLog(random, file, Math.floor(outputChars * (0.5 + random())), random() < 0.4))
        steps.push({ kind: 'tools', text: chinese ? '运行测试。' : 'Running the tests.', calls: [{ name: 'shell', args: { command } }] })
      } else {
        put(`write_file ${file}`, `wrote ${file} (${Math.floor(random() * 200) + 20} lines changed)`)
        steps.push({ kind: 'tools', text: chinese ? `修改 ${file}。` : `Editing ${file}.`, calls: [{ name: 'write_file', args: { path: file, content: `export const patched = ${turn}` } }] })
      }
    }
    if (fact?.where === 'tool') {
      factToolKey = 'node scripts/ops.js --apply'
      put(`shell ${factToolKey}`, `$ node scripts/ops.js --apply\n${testLog(random, 'scripts/ops.js', 300, false)}\nops: ${fact.answer}\nops: done`)
      steps.push({ kind: 'tools', text: 'Running the ops script.', calls: [{ name: 'shell', args: { command: factToolKey } }] })
    }
    if (options.bigOutputEvery !== undefined && options.bigOutputEvery > 0 && turn % options.bigOutputEvery === 0) {
      const command = 'docker compose logs api --since 24h'
      put(`shell ${command}`, bigLog(random, options.bigOutputChars ?? 1_000_000))
      steps.push({ kind: 'tools', text: 'Pulling the service logs.', calls: [{ name: 'shell', args: { command } }] })
    }
    steps.push({ kind: 'text', text: answer })
    turns.push({ prompt, steps })
  }

  const tools = (): ScriptedTool[] => {
    const served = new Map<string, number>()
    const lookup = (tool: string, args: Record<string, unknown>): string => {
      const key = `${tool} ${String(args['path'] ?? args['command'] ?? '')}`
      const index = served.get(key) ?? 0
      served.set(key, index + 1)
      return outputs.get(key)?.[index] ?? `${tool}: nothing recorded for ${key}`
    }
    return [
      { name: 'shell', description: 'Run a shell command in the workspace and return its output.', run: args => lookup('shell', args) },
      { name: 'read_file', description: 'Read a file from the workspace.', run: args => lookup('read_file', args) },
      { name: 'write_file', description: 'Write a file in the workspace.', run: args => lookup('write_file', args) },
    ]
  }
  return { turns, tools, facts }
}
