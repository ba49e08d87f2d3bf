/**
 * quality-set — a deterministic, labeled retrieval set of long coding-agent sessions.
 *
 * Six sessions (three mostly English, three mostly Chinese), each well over 300 model-visible
 * messages: user requests, assistant answers, assistant tool calls and tool outputs (source files,
 * test runs, grep hits, git logs and diffs, build output, service logs, configs). Facts are planted
 * by hand at fixed depths (early / middle / late) in user messages, assistant answers and tool
 * outputs; the filler around them is generated from a seed and talks about the same topics (ports,
 * pools, retries, caches, owners, versions, 端口, 缓存, 重试…) without giving the answers, and includes
 * "echo" lines (someone wondering about the fact without stating it), so that topic words alone do
 * not find the answer.
 *
 * Every question names the planted message(s) that answer it (session + seq). Each fact carries an
 * answer string that must occur in its own message and in no other message of the session; the
 * generator checks this, so labels cannot silently drift when the filler changes.
 *
 * Question categories (one per question, the main difficulty it tests):
 * - exact       a verbatim piece of the fact (a minority: the "I remember the wording" lookup)
 * - error       a pasted error string or fragment of one (quotes, parentheses, colons: query is data)
 * - keyword     model-style keyword query built from the fact's words, not a contiguous copy
 * - question    a natural question that shares the fact's key content words
 * - paraphrase  a natural question in mostly different words (synonyms, 失效 vs 过期, 泄露 vs 泄漏,
 *               封版 vs 冻结发布, "pictures" vs "images"); some are near-impossible for lexical search
 * - identifier  an identifier, path or key asked by a substring or fragment (FX_PROVIDER, wx8f3c)
 * - number      asks for a number / quantity / time, usually among many other numbers
 * - distractor  a near-duplicate fact exists elsewhere (staging vs production endpoints, raw vs curated)
 * - revised     the fact was changed later; the question says "now"/"latest"/"最新"/"现在" (or "before"
 *               for the old value) and only the matching version is relevant
 * - mixed       mixed-language query (Chinese question with English terms, English query on a Chinese fact)
 *
 * Not tuned to any ranker: the facts and questions were written from the sessions' point of view,
 * before looking at any ranking output, and are not changed to make a ranker look better.
 */
import type { ShadowMessageInput } from '@dsh-shadow/store'

export type Category = 'exact' | 'error' | 'keyword' | 'question' | 'paraphrase' | 'identifier' | 'number' | 'distractor' | 'revised' | 'mixed'
export type Language = 'en' | 'zh' | 'mixed'
export type Where = 'user' | 'assistant' | 'tool'
export type Depth = 'early' | 'middle' | 'late'

export interface QualityQuestion {
  readonly id: string
  readonly sessionId: string
  readonly query: string
  readonly category: Category
  readonly language: Language
  /** 'question' for natural-language questions, 'keywords' for model-style keyword queries. */
  readonly style: 'question' | 'keywords'
  /** Depth and role of the first relevant message. */
  readonly depth: Depth
  readonly where: Where
  /** Relevant message seqs (binary relevance). */
  readonly relevant: readonly number[]
}

export interface QualitySession {
  readonly sessionId: string
  readonly language: 'en' | 'zh'
  readonly messages: readonly ShadowMessageInput[]
  /** The planted facts' answer strings (each occurs in its own message only). */
  readonly answers: readonly string[]
}

export interface QualitySet {
  readonly sessions: readonly QualitySession[]
  readonly questions: readonly QualityQuestion[]
}

// ---- randomness -----------------------------------------------------------------------------------

type Rng = () => number

function mulberry32(seed: number): Rng {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function pick<T>(r: Rng, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!
}

function int(r: Rng, min: number, max: number): number {
  return min + Math.floor(r() * (max - min + 1))
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole)
}

// ---- projects ---------------------------------------------------------------------------------------

interface Fact {
  readonly key: string
  /** Depth in the session, 0..1. */
  readonly at: number
  readonly where: Where
  readonly text: string | ((r: Rng, p: Project) => string)
  /** A string that occurs in this message and nowhere else in the session. */
  readonly answer: string
  /** Tool facts: the call that produced the output. */
  readonly call?: { readonly tool: string; readonly args: Record<string, string>; readonly text: string }
  /** The user request before an assistant or tool fact (a filler request otherwise). */
  readonly prompt?: string
}

interface QuestionSpec {
  readonly q: string
  readonly facts: readonly string[]
  readonly cat: Category
  readonly lang?: Language
}

interface ToolOutput {
  readonly tool: string
  readonly args: Record<string, string>
  readonly callText: string
  readonly output: string
}

interface Project {
  readonly id: string
  readonly language: 'en' | 'zh'
  readonly day: number
  readonly files: readonly string[]
  readonly fns: readonly string[]
  readonly errors: readonly string[]
  readonly commits: readonly string[]
  readonly prompts: readonly string[]
  readonly answers: readonly string[]
  /** Topic mentions without answers (including echoes of the questions). */
  readonly noise: readonly string[]
  readonly testCmd: (file: string) => string
  readonly buildCmd: string
  readonly logs: (r: Rng) => string
  readonly configs: ReadonlyArray<{ readonly path: string; readonly text: (r: Rng) => string }>
  /** Project-specific tool outputs (load tests, queries, dashboards…). */
  readonly extraTools: ReadonlyArray<(r: Rng) => ToolOutput>
  readonly facts: readonly Fact[]
  readonly questions: readonly QuestionSpec[]
}

// ---- generic generators ----------------------------------------------------------------------------

function extOf(file: string): string {
  return file.slice(file.lastIndexOf('.') + 1)
}

function codeFor(r: Rng, p: Project, file: string): string {
  const ext = extOf(file)
  const zh = p.language === 'zh'
  const fnA = pick(r, p.fns)
  const fnB = pick(r, p.fns)
  const lines: string[] = []
  const blocks = int(r, 2, 4)
  if (ext === 'py') {
    lines.push(`"""${zh ? `${pick(r, ['特征计算', '排序服务', '召回合并', '训练脚本'])}相关逻辑。` : `${pick(r, ['Clickstream', 'Session', 'Event', 'Partition'])} helpers.`}"""`, 'from __future__ import annotations', '', 'import logging', 'from dataclasses import dataclass', '', 'log = logging.getLogger(__name__)', '')
    for (let index = 0; index < blocks; index += 1) {
      const name = index === 0 ? fnA : `${pick(r, p.fns)}_${index}`
      lines.push(
        `def ${name}(ctx, frame, *, limit: int = ${int(r, 10, 5000)}):`,
        `    ${zh ? `# ${pick(r, ['注意空值', '先过滤无效样本', '按天分区处理', '这里不要改动顺序'])}` : `# ${pick(r, ['keep ordering stable', 'drop bot traffic first', 'one partition at a time', 'cheap path for empty frames'])}`}`,
        '    if frame.empty:',
        `        log.info("${name}: empty input, skipping")`,
        '        return frame',
        `    out = frame[frame["ts"] >= ctx.window_start].head(limit)`,
        `    log.debug("${name}: %d rows in %.2fs", len(out), ctx.timer())`,
        `    return ${fnB}(ctx, out) if ctx.chain else out`,
        '',
      )
    }
  } else if (ext === 'go') {
    lines.push(`package ${file.split('/').at(-2) ?? 'main'}`, '', 'import (', '\t"context"', '\t"fmt"', '\t"time"', ')', '')
    for (let index = 0; index < blocks; index += 1) {
      const name = index === 0 ? fnA : `${pick(r, p.fns)}V${index}`
      lines.push(
        `// ${name} ${pick(r, ['扣减可售库存，失败时回滚预占', '按仓库同步库存快照', '发布库存变更事件', '读取 SKU 的可售数量'])}`,
        `func (s *Service) ${name}(ctx context.Context, skuID int64, qty int) error {`,
        `\tctx, cancel := context.WithTimeout(ctx, ${int(r, 200, 3000)}*time.Millisecond)`,
        '\tdefer cancel()',
        '\ttx, err := s.db.BeginTx(ctx, nil)',
        '\tif err != nil {',
        `\t\treturn fmt.Errorf("${name}: begin: %w", err)`,
        '\t}',
        '\tdefer tx.Rollback()',
        `\tif err := s.${pick(r, p.fns)}(ctx, tx, skuID, qty); err != nil {`,
        `\t\ts.log.Warn("${pick(r, ['库存不足', '扣减失败', '同步失败', '写入流水失败'])}", "sku", skuID, "err", err)`,
        '\t\treturn err',
        '\t}',
        '\treturn tx.Commit()',
        '}',
        '',
      )
    }
  } else if (ext === 'vue' || ext === 'js') {
    lines.push('<script setup>', "import { ref, computed, onMounted } from 'vue'", "import { request } from '@/api/request'", '')
    for (let index = 0; index < blocks; index += 1) {
      const name = index === 0 ? fnA : `${pick(r, p.fns)}${index}`
      lines.push(
        `// ${pick(r, ['拉取会员信息', '刷新积分列表', '格式化日期', '领取优惠券'])}`,
        `async function ${name}(params = {}) {`,
        `  const res = await request({ url: '/api/${pick(r, ['member', 'points', 'coupon', 'order'])}/${pick(r, ['info', 'list', 'detail'])}', data: params, timeout: ${int(r, 3, 15) * 1000} })`,
        "  if (res.code !== 0) throw new Error(res.msg || '请求失败')",
        '  return res.data',
        '}',
        '',
      )
    }
    lines.push('onMounted(() => {', `  ${fnA}()`, '})', '</script>')
  } else {
    lines.push(`import { ${fnB} } from '${pick(r, ['../lib/util', './shared', '@/lib/api', '../db/client'])}'`, `import type { ${pick(r, ['Context', 'Request', 'Options', 'Result'])} } from '${pick(r, ['./types', '../types'])}'`, '')
    for (let index = 0; index < blocks; index += 1) {
      const name = index === 0 ? fnA : `${pick(r, p.fns)}${index}`
      lines.push(
        `export async function ${name}(input: Input, deps: Deps): Promise<Output> {`,
        `  // ${pick(r, ['keep this idempotent, it is retried', 'amounts are minor units from here on', 'caller owns the transaction', 'do not log the payload, it may hold PII'])}`,
        `  const started = performance.now()`,
        `  const result = await deps.${pick(r, ['db', 'client', 'cache', 'queue'])}.${pick(r, ['query', 'get', 'send', 'run'])}(input, { timeoutMs: ${int(r, 5, 60) * 100} })`,
        `  deps.log.info({ fn: '${name}', ms: Math.round(performance.now() - started) })`,
        `  if (!result.ok) throw new Error(\`${name} failed: \${result.error}\`)`,
        `  return ${fnB}(result.value)`,
        '}',
        '',
      )
    }
  }
  return `${lines.join('\n')}`
}

function testLog(r: Rng, p: Project, file: string): string {
  const failing = r() < 0.3
  const cases = int(r, 4, 14)
  const lines: string[] = [`$ ${p.testCmd(file)}`, '']
  let failed = 0
  for (let index = 0; index < cases; index += 1) {
    const ok = !failing || r() > 0.2
    const name = `${pick(r, p.fns)} ${pick(r, ['handles empty input', 'retries on transient error', 'keeps order', 'rejects invalid payload', 'is idempotent', 'respects the timeout', 'returns cached value', 'rolls back on failure'])}`
    if (p.language === 'zh' && extOf(file) === 'go') {
      lines.push(ok ? `=== RUN   Test${name.split(' ')[0]}_${index}\n--- PASS: Test${name.split(' ')[0]}_${index} (0.0${int(r, 1, 9)}s)` : `--- FAIL: Test${name.split(' ')[0]}_${index} (0.${int(r, 10, 99)}s)\n    ${file.split('/').at(-1)}:${int(r, 20, 300)}: ${pick(r, p.errors)}`)
    } else if (extOf(file) === 'py') {
      lines.push(`${file}::test_${name.replaceAll(' ', '_').toLowerCase()} ${ok ? 'PASSED' : 'FAILED'}`)
      if (!ok) lines.push(`E   ${pick(r, p.errors)}`)
    } else {
      lines.push(` ${ok ? '✓' : '×'} ${file} > ${name} ${int(r, 2, 180)}ms`)
      if (!ok) lines.push(`   → ${pick(r, p.errors)}`)
    }
    if (!ok) failed += 1
  }
  lines.push('', failed > 0 ? `${failed} failed, ${cases - failed} passed in ${(r() * 9 + 0.5).toFixed(2)}s` : `${cases} passed in ${(r() * 9 + 0.5).toFixed(2)}s`)
  return lines.join('\n')
}

function grepOut(r: Rng, p: Project, needle: string): string {
  const lines: string[] = []
  for (let index = int(r, 2, 9); index > 0; index -= 1) {
    const file = pick(r, p.files)
    lines.push(`${file}:${int(r, 3, 400)}:    ${pick(r, ['const x = await ', 'return ', 'if err := ', 'result = ', 'await ', ''])}${needle}(${pick(r, ['ctx', 'input', 'frame', 'skuID, qty', 'params', ''])})`)
  }
  return lines.join('\n')
}

function gitLog(r: Rng, p: Project): string {
  const lines: string[] = []
  for (let index = 0; index < 12; index += 1) {
    lines.push(`${Math.floor(r() * 0xfffffff).toString(16).padStart(7, '0')} ${pick(r, p.commits)}`)
  }
  return lines.join('\n')
}

function gitDiff(r: Rng, p: Project, file: string): string {
  const fn = pick(r, p.fns)
  const start = int(r, 10, 300)
  return [
    `diff --git a/${file} b/${file}`,
    `index ${Math.floor(r() * 0xfffffff).toString(16)}..${Math.floor(r() * 0xfffffff).toString(16)} 100644`,
    `--- a/${file}`,
    `+++ b/${file}`,
    `@@ -${start},7 +${start},9 @@`,
    `   ${fn}(${pick(r, ['ctx', 'input', 'frame', 'params'])})`,
    `-  ${pick(r, ['return null', 'pass', 'return nil', 'return'])}`,
    `+  ${p.language === 'zh' ? `// ${pick(r, ['失败时记录日志再返回', '这里要带上上下文', '空值直接返回'])}` : `// ${pick(r, ['log before returning', 'wrap with context', 'empty input short-circuits'])}`}`,
    `+  ${pick(r, ['throw err', 'raise', 'return err', 'return fallback'])}`,
    `   ${pick(r, p.fns)}()`,
  ].join('\n')
}

function buildOut(r: Rng, p: Project): string {
  const ok = r() > 0.25
  const lines = [`$ ${p.buildCmd}`]
  if (ok) lines.push(pick(r, ['Done in 4.2s.', 'ok', 'Build succeeded.', '✔ no type errors', '编译完成']))
  else lines.push(`${pick(r, p.files)}:${int(r, 3, 200)}:${int(r, 1, 40)} - error: ${pick(r, ["Property 'id' does not exist on type 'never'.", 'undefined: ctx', 'Argument of type \'string | undefined\' is not assignable', "Name 'frame' is not defined", 'missing return'])}`, `Found ${int(r, 1, 4)} error(s).`)
  return lines.join('\n')
}

function toolStep(r: Rng, p: Project): ToolOutput {
  const zh = p.language === 'zh'
  const file = pick(r, p.files)
  const fn = pick(r, p.fns)
  const kind = r()
  if (kind < 0.26) return { tool: 'read_file', args: { path: file }, callText: zh ? `先看一下 ${file}。` : `Let me read ${file}.`, output: codeFor(r, p, file) }
  if (kind < 0.44) return { tool: 'shell', args: { command: p.testCmd(file) }, callText: zh ? '跑一下相关测试。' : 'Running the related tests.', output: testLog(r, p, file) }
  if (kind < 0.54) return { tool: 'grep', args: { pattern: fn, path: '.' }, callText: zh ? `搜一下 ${fn} 的调用点。` : `Searching for callers of ${fn}.`, output: grepOut(r, p, fn) }
  if (kind < 0.60) return { tool: 'shell', args: { command: 'git log --oneline -12' }, callText: zh ? '看看最近的提交。' : 'Checking recent commits.', output: gitLog(r, p) }
  if (kind < 0.68) return { tool: 'shell', args: { command: `git diff ${file}` }, callText: zh ? '看一下改动。' : 'Reviewing the diff.', output: gitDiff(r, p, file) }
  if (kind < 0.75) return { tool: 'shell', args: { command: p.buildCmd }, callText: zh ? '编译检查一下。' : 'Type-checking the project.', output: buildOut(r, p) }
  if (kind < 0.84) return { tool: 'shell', args: { command: 'kubectl logs deploy/app --since=30m | tail -40' }, callText: zh ? '拉一下最近的日志。' : 'Pulling the recent logs.', output: p.logs(r) }
  if (kind < 0.90 || p.extraTools.length === 0) {
    const config = pick(r, p.configs)
    return { tool: 'read_file', args: { path: config.path }, callText: zh ? `看一下配置 ${config.path}。` : `Checking ${config.path}.`, output: config.text(r) }
  }
  return pick(r, p.extraTools)(r)
}

// ---- assembling a session -------------------------------------------------------------------------

interface Draft {
  readonly role: 'system' | 'user' | 'assistant' | 'tool'
  readonly text: string
  readonly toolName?: string
  readonly fact?: string
}

function callText(text: string, tool: string, args: Record<string, string>): string {
  return `${text}\n[tool call ${tool}] ${JSON.stringify(args)}`
}

/** Topic lines not yet used in this session: each is said once (people rarely repeat a remark verbatim). */
const unusedNoise = new Map<Project, string[]>()
function takeNoise(r: Rng, p: Project): string | undefined {
  const left = unusedNoise.get(p) ?? []
  if (left.length === 0) return undefined
  return left.splice(Math.floor(r() * left.length), 1)[0]
}

function fillerPrompt(r: Rng, p: Project): string {
  const noise = r() < 0.2 ? takeNoise(r, p) : undefined
  return noise ?? fill(pick(r, p.prompts), { file: pick(r, p.files), fn: pick(r, p.fns), err: pick(r, p.errors) })
}

function fillerAnswer(r: Rng, p: Project): string {
  const base = fill(pick(r, p.answers), { file: pick(r, p.files), fn: pick(r, p.fns), err: pick(r, p.errors), n: String(int(r, 2, 12)) })
  const noise = r() < 0.12 ? takeNoise(r, p) : undefined
  return noise === undefined ? base : `${base}${p.language === 'zh' ? '' : ' '}${noise}`
}

function fillerTurn(r: Rng, p: Project): Draft[] {
  const drafts: Draft[] = [{ role: 'user', text: fillerPrompt(r, p) }]
  const steps = pick(r, [0, 1, 1, 2, 2, 2, 3, 4])
  for (let index = 0; index < steps; index += 1) {
    const step = toolStep(r, p)
    drafts.push({ role: 'assistant', text: callText(step.callText, step.tool, step.args), toolName: step.tool })
    drafts.push({ role: 'tool', text: step.output, toolName: step.tool })
  }
  drafts.push({ role: 'assistant', text: fillerAnswer(r, p) })
  return drafts
}

function factTurn(r: Rng, p: Project, fact: Fact): Draft[] {
  const text = typeof fact.text === 'string' ? fact.text : fact.text(r, p)
  const drafts: Draft[] = []
  if (fact.where === 'user') {
    drafts.push({ role: 'user', text, fact: fact.key })
    if (r() < 0.6) {
      const step = toolStep(r, p)
      drafts.push({ role: 'assistant', text: callText(step.callText, step.tool, step.args), toolName: step.tool }, { role: 'tool', text: step.output, toolName: step.tool })
    }
    drafts.push({ role: 'assistant', text: fillerAnswer(r, p) })
    return drafts
  }
  drafts.push({ role: 'user', text: fact.prompt ?? fillerPrompt(r, p) })
  if (fact.where === 'assistant') {
    if (r() < 0.7) {
      const step = toolStep(r, p)
      drafts.push({ role: 'assistant', text: callText(step.callText, step.tool, step.args), toolName: step.tool }, { role: 'tool', text: step.output, toolName: step.tool })
    }
    drafts.push({ role: 'assistant', text, fact: fact.key })
    return drafts
  }
  const call = fact.call ?? { tool: 'shell', args: { command: 'true' }, text: '' }
  drafts.push({ role: 'assistant', text: callText(call.text, call.tool, call.args), toolName: call.tool })
  drafts.push({ role: 'tool', text, toolName: call.tool, fact: fact.key })
  drafts.push({ role: 'assistant', text: fillerAnswer(r, p) })
  return drafts
}

const SYSTEM_PROMPT = [
  'You are a coding agent working in the user\'s repository. Use the tools to read files, run commands and search.',
  'Prefer small, reviewed changes. Run the tests before you say something is fixed.',
  '',
  'Tools:',
  '- read_file: Read a file of the workspace.',
  '- shell: Run a shell command in the workspace and return its output.',
  '- grep: Search the workspace for a pattern.',
  '- shadow_search: Search earlier messages of this session that are no longer in context.',
].join('\n')

const FILLER_TURNS = 66

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

export function occurs(text: string, answer: string): boolean {
  const head = /^[A-Za-z0-9]/.test(answer) ? '(?<![A-Za-z0-9])' : ''
  const tail = /[A-Za-z0-9]$/.test(answer) ? '(?![A-Za-z0-9])' : ''
  return new RegExp(`${head}${escapeRegExp(answer)}${tail}`).test(text)
}

function buildSession(p: Project, seed: number): { session: QualitySession; questions: QualityQuestion[] } {
  const r = mulberry32(seed)
  unusedNoise.set(p, [...p.noise])
  const sessionId = `quality-${p.id}`
  const turns: Draft[][] = []
  for (let index = 0; index < FILLER_TURNS; index += 1) turns.push(fillerTurn(r, p))
  // Insert fact turns at their depth (in order of depth so earlier facts stay earlier).
  const facts = p.facts.toSorted((a, b) => a.at - b.at)
  const placed: Array<{ at: number; turn: Draft[] }> = facts.map(fact => ({ at: fact.at, turn: factTurn(r, p, fact) }))
  const all: Draft[][] = []
  let next = 0
  for (let index = 0; index <= turns.length; index += 1) {
    const position = index / turns.length
    while (next < placed.length && placed[next]!.at <= position) all.push(placed[next++]!.turn)
    if (index < turns.length) all.push(turns[index]!)
  }
  while (next < placed.length) all.push(placed[next++]!.turn)

  const messages: ShadowMessageInput[] = []
  const factSeq = new Map<string, number>()
  const factRole = new Map<string, Where>()
  let time = Date.UTC(2026, 9, 1 + p.day, 1, 30, 0)
  let seq = 0
  const push = (draft: Draft, turn: number, step: number): void => {
    time += int(r, 3, 110) * 1000
    const eventType = draft.role === 'system' ? 'request/header' : draft.role === 'user' ? 'user/message' : draft.role === 'tool' ? 'tool/result' : 'assistant/message'
    // A tool result carries the id of the call that produced it (the call is the message just before).
    const callId = draft.toolName === undefined ? null : draft.role === 'tool' ? `call_${seq - 1}` : `call_${seq}`
    messages.push({
      sessionId,
      seq,
      eventType,
      role: draft.role,
      sourceKind: draft.role === 'system' ? 'request/header' : draft.role === 'user' ? 'user' : draft.role === 'tool' ? 'tool' : 'model',
      turn,
      step,
      toolName: draft.toolName ?? null,
      callId,
      time,
      eventJson: JSON.stringify({ type: eventType, seq, data: { text: draft.text } }),
      text: draft.text,
      tokens: Math.ceil(draft.text.length / 4) + 4,
    })
    if (draft.fact !== undefined) {
      factSeq.set(draft.fact, seq)
      factRole.set(draft.fact, draft.role === 'user' ? 'user' : draft.role === 'tool' ? 'tool' : 'assistant')
    }
    seq += 1
  }
  push({ role: 'system', text: SYSTEM_PROMPT }, 0, 0)
  all.forEach((turn, index) => {
    let step = 0
    for (const draft of turn) {
      if (draft.role === 'assistant') step += 1
      push(draft, index + 1, step)
    }
  })

  // Label checks: every answer in its own message and nowhere else.
  for (const fact of p.facts) {
    const at = factSeq.get(fact.key)
    if (at === undefined) throw new Error(`${p.id}: fact ${fact.key} was not placed`)
    if (!occurs(messages[at]!.text, fact.answer)) throw new Error(`${p.id}: fact ${fact.key} does not contain its answer ${JSON.stringify(fact.answer)}`)
    const elsewhere = messages.filter(message => message.seq !== at && occurs(message.text, fact.answer))
    if (elsewhere.length > 0) throw new Error(`${p.id}: answer of ${fact.key} (${JSON.stringify(fact.answer)}) also occurs at seq ${elsewhere.map(message => message.seq).join(', ')}: ${elsewhere[0]!.text.slice(0, 200)}`)
  }
  if (messages.length < 300) throw new Error(`${p.id}: only ${messages.length} messages`)

  const questions = p.questions.map((spec, index): QualityQuestion => {
    const relevant = spec.facts.map(key => {
      const at = factSeq.get(key)
      if (at === undefined) throw new Error(`${p.id}: question ${spec.q} names unknown fact ${key}`)
      return at
    })
    const first = relevant[0]!
    const fraction = first / messages.length
    const language: Language = spec.lang ?? p.language
    const style = /[?？]$|^(who|what|which|when|where|why|how)\b/i.test(spec.q) || /(什么|多少|几|谁|哪|怎么|为什么|多久|多大|吗)/.test(spec.q) ? 'question' : 'keywords'
    return {
      id: `${p.id}-${String(index + 1).padStart(2, '0')}`,
      sessionId,
      query: spec.q,
      category: spec.cat,
      language,
      style,
      depth: fraction < 1 / 3 ? 'early' : fraction < 2 / 3 ? 'middle' : 'late',
      where: factRole.get(spec.facts[0]!)!,
      relevant,
    }
  })
  return { session: { sessionId, language: p.language, messages, answers: p.facts.map(fact => fact.answer) }, questions }
}

// ---- project: ledger (English, TypeScript payments service) -----------------------------------------

function pinoLines(r: Rng, msgs: readonly string[], count: number): string {
  const lines: string[] = []
  for (let index = 0; index < count; index += 1) {
    lines.push(JSON.stringify({ level: pick(r, [30, 30, 30, 40, 50]), time: 1_793_000_000_000 + int(r, 0, 9_999_999), msg: pick(r, msgs), merchantId: `m_${int(r, 1000, 9999)}`, reqId: `req-${int(r, 10000, 99999)}`, ms: int(r, 2, 900) }))
  }
  return lines.join('\n')
}

function k6(r: Rng, endpoint: string, script: string, p95: string, p99: string): string {
  return [
    `  execution: local`,
    `     script: ${script}`,
    `     output: -`,
    '',
    `  scenarios: (100.00%) 1 scenario, 200 max VUs, 5m30s max duration (incl. graceful stop):`,
    `           * ramp: Up to 200 looping VUs for 5m0s over 3 stages (gracefulRampDown: 30s)`,
    '',
    `     ✓ status is 201`,
    `     ✗ body has id`,
    `      ↳  99% — ✓ ${int(r, 40000, 60000)} / ✗ ${int(r, 1, 90)}`,
    '',
    `     checks.........................: 99.9${int(r, 0, 9)}%`,
    `     http_req_duration..............: avg=${(r() * 200 + 90).toFixed(2)}ms min=${(r() * 30 + 20).toFixed(1)}ms med=${(r() * 100 + 80).toFixed(1)}ms max=${(r() * 4 + 1).toFixed(1)}s p(90)=${(r() * 200 + 150).toFixed(1)}ms p(95)=${p95} p(99)=${p99}`,
    `       { expected_response:true }...: avg=${(r() * 200 + 90).toFixed(2)}ms`,
    `     http_req_failed................: 0.0${int(r, 1, 9)}%`,
    `     http_reqs......................: ${int(r, 40000, 60000)}  ${(r() * 100 + 120).toFixed(1)}/s`,
    `     iterations.....................: ${int(r, 40000, 60000)}`,
    `     endpoint.......................: ${endpoint}`,
  ].join('\n')
}

const LEDGER: Project = {
  id: 'en-ledger',
  language: 'en',
  day: 0,
  files: ['src/payouts/batch.ts', 'src/settlement/settle.ts', 'src/settlement/retry.ts', 'src/db/pool.ts', 'src/acquirers/adyen/client.ts', 'src/acquirers/stripe/client.ts', 'src/fx/rates.ts', 'src/jobs/reconcile.ts', 'src/money/minorUnits.ts', 'src/api/routes/payouts.ts', 'src/api/routes/refunds.ts', 'src/kafka/producer.ts', 'src/cache/redis.ts', 'src/api/server.ts', 'src/merchants/config.ts', 'test/payouts.batch.test.ts', 'test/fx.rates.test.ts', 'test/refunds.test.ts'],
  fns: ['settleBatch', 'buildPayoutFile', 'toMinorUnits', 'fetchRates', 'reconcileLedger', 'publishSettlement', 'acquireLock', 'applyRefund', 'loadMerchantConfig', 'computeFees', 'retryWithBackoff', 'createPayout', 'markSettled', 'listPendingTransfers', 'parseAcquirerReport'],
  errors: ['Error: connect ETIMEDOUT 10.0.4.17:5432', 'duplicate key value violates unique constraint "payouts_pkey"', 'Error: Request failed with status code 502', 'TypeError: fetch failed', 'KafkaJSNumberOfRetriesExceeded: Number of retries exceeded', 'AbortError: This operation was aborted', 'Error: connect ECONNREFUSED 127.0.0.1:6379', 'ZodError: merchantId: Required', 'Error: timeout exceeded when trying to connect', 'AssertionError: expected 1 to equal 0'],
  commits: ['fix(payouts): guard against empty batches', 'feat(fx): cache rates for ten minutes', 'chore: bump kafkajs to 2.2.4', 'refactor(settlement): extract retry policy', 'test(refunds): cover partial refunds', 'fix(db): release the client on the error path', 'feat(api): add idempotency keys to POST /v1/refunds', 'chore(ci): run migrations against a throwaway database', 'fix(redis): reconnect with jitter', 'docs: settlement states diagram'],
  prompts: [
    'Can you look at why {fn} in {file} times out under load?',
    'Run the tests for {file} and tell me what breaks.',
    'Refactor {fn} so it no longer swallows errors.',
    'We are seeing "{err}" in the logs again. Any idea where it comes from?',
    'Add a unit test for {fn} covering the empty case.',
    'Please review {file}; I think {fn} leaks a client on the error path.',
    'Rename {fn} to something clearer and update the call sites.',
    'Is {fn} safe to retry? Check {file}.',
    'The settlement job was slow last night. Can you profile {fn}?',
    'Make {fn} log the merchant id on failure.',
    'Check whether {file} still compiles after the kafkajs bump.',
    'Can you make the error from {fn} include the acquirer reference?',
  ],
  answers: [
    'Fixed: {fn} now rethrows with context instead of returning undefined, and {file} has a regression test. All {n} tests pass.',
    'The "{err}" errors come from the acquirer sandbox being flaky, not from our change. I added a retry with backoff around {fn}.',
    'Refactored {fn}: the transaction is now owned by the caller, which removes the double release in {file}.',
    '{fn} was doing one query per merchant; I batched it, and the job is about {n}x faster locally.',
    'Renamed and updated {n} call sites. Type-check is clean.',
    'Added the test. It exposed an off-by-one in {fn} that I also fixed in {file}.',
    'I looked through {file}: nothing obviously wrong, the timeouts line up with the acquirer outage window.',
    '{fn} is idempotent as long as the idempotency key is passed through; {file} now enforces that.',
  ],
  noise: [
    'Before we touch the Redis config again, can you check which services still read REDIS_URL directly?',
    'The async settlement dashboard is slow to load, ignore it for now.',
    'We should document the deploy process for ledger somewhere.',
    'Connection pool errors again in the logs? Probably the same pgbouncer thing as last month.',
    "Let's not touch the reconcile job until after month-end.",
    'Did the migrations run on staging yet?',
    'Remind me later to double-check which port the staging Redis is on, I keep forgetting.',
    'The p99 for payouts looked bad in Grafana this morning, we should load test again at some point.',
    'The Node upgrade is on the list but not urgent.',
    'FX rates on the merchant report looked stale yesterday, keep an eye on it.',
    'Who reviews changes to reconciliation these days? Not blocking, just curious.',
    'The rollout percentage for the settlement flag should be visible in the admin UI, can we add that later?',
    'Rounding has bitten us before, be careful with anything in src/money.',
    'Sentry is noisy this week; most of it is the acquirer sandbox.',
  ],
  testCmd: file => `pnpm vitest run ${file.startsWith('test/') ? file : 'test/'}`,
  buildCmd: 'pnpm tsc --noEmit',
  logs: r => pinoLines(r, ['payout batch settled', 'settlement published', 'refund applied', 'fx rates refreshed', 'acquirer responded', 'lock acquired', 'lock released', 'request completed', 'retrying acquirer call'], int(r, 8, 30)),
  configs: [
    { path: '.env.example', text: r => `NODE_ENV=development\nPORT=3000\nDATABASE_URL=postgres://ledger:ledger@localhost:5432/ledger\nREDIS_URL=redis://localhost:6379/0\nKAFKA_BROKERS=localhost:9092\nLOG_LEVEL=debug\nFX_CACHE_SECONDS=${int(r, 60, 900)}` },
    { path: 'docker-compose.yml', text: () => 'services:\n  postgres:\n    image: postgres:16\n    ports: ["5432:5432"]\n    environment:\n      POSTGRES_PASSWORD: ledger\n  redis:\n    image: redis:7-alpine\n    ports: ["6379:6379"]\n  kafka:\n    image: bitnami/kafka:3.7\n    ports: ["9092:9092"]' },
    { path: 'src/kafka/topics.ts', text: () => "export const TOPICS = {\n  settlementLegacy: 'ledger.settlement.v1',\n  refunds: 'ledger.refunds.v1',\n  payouts: 'ledger.payouts.v1',\n} as const" },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'k6 run load/refunds.js' }, callText: 'Load testing the refunds endpoint.', output: k6(r, 'POST /v1/refunds', 'load/refunds.js', `${(r() * 300 + 200).toFixed(1)}ms`, `${(r() * 0.8 + 0.5).toFixed(2)}s`) }),
    r => ({ tool: 'shell', args: { command: "psql $DATABASE_URL -c 'select state, count(*) from payouts group by 1'" }, callText: 'Checking payout states.', output: ` state     | count\n-----------+-------\n pending   |  ${int(r, 10, 900)}\n settled   | ${int(r, 10000, 90000)}\n failed    |   ${int(r, 1, 90)}\n(3 rows)` }),
  ],
  facts: [
    { key: 'node-v1', at: 0.03, where: 'tool', answer: '20.11.1', call: { tool: 'shell', args: { command: 'cat .nvmrc && head -5 Dockerfile' }, text: 'Checking the runtime version first.' }, text: '20.11.1\nFROM node:20.11.1-bookworm-slim AS build\nWORKDIR /app\nCOPY package.json pnpm-lock.yaml ./\nRUN corepack enable && pnpm fetch' },
    { key: 'redis-staging', at: 0.06, where: 'user', answer: '6380', text: 'Quick heads-up before you touch the cache layer: staging Redis is no longer on the default port. The ops sidecar grabbed it, so on staging Redis listens on 6380 now. Production is unchanged.' },
    { key: 'owner', at: 0.09, where: 'user', answer: 'Priya Raman', text: 'For anything touching reconciliation, loop in Priya Raman: the nightly recon job is hers and she reviews every change to it.' },
    { key: 'cron', at: 0.11, where: 'tool', answer: '15 2 * * *', call: { tool: 'shell', args: { command: 'ssh ledger-worker-1 crontab -l' }, text: 'Looking at how the jobs are scheduled on the worker.' }, text: '# ledger jobs (managed by ansible, do not edit by hand)\nMAILTO=ledger-alerts@acme.io\n15 2 * * * cd /srv/ledger && node dist/jobs/reconcile.js --since=yesterday >> /var/log/ledger/reconcile.log 2>&1\n*/10 * * * * cd /srv/ledger && node dist/jobs/fx-refresh.js\n0 6 * * 1 cd /srv/ledger && node dist/jobs/weekly-report.js' },
    { key: 'flag-v1', at: 0.15, where: 'assistant', answer: '10% of merchants', text: 'The `ledger.async-settlement` flag is live for 10% of merchants, bucketed by a hash of the merchant id. I will watch the settlement lag panel before widening it.' },
    { key: 'topic', at: 0.19, where: 'assistant', answer: 'published to `ledger.settlement.v2`', prompt: 'Where do settlement events go these days? I see two topics in Kafka UI.', text: 'Settlement events are published to `ledger.settlement.v2` with the merchant id as the message key, so ordering per merchant holds. The v1 topic stays only for the legacy finance dashboard and will be dropped in Q1.' },
    { key: 'deploy', at: 0.27, where: 'user', answer: 'between 14:00 and 16:00 UTC', text: 'Process note: ledger may only be deployed between 14:00 and 16:00 UTC on weekdays. Finance closes the books at 17:00 and wants an hour of quiet before that.' },
    { key: 'hmac', at: 0.33, where: 'tool', answer: "const HMAC_ALGO = 'sha256'", call: { tool: 'shell', args: { command: 'rg -n "HMAC" src test' }, text: 'Finding where webhook signatures are checked.' }, text: "src/acquirers/adyen/webhookSignature.ts:12:import { createHmac, timingSafeEqual } from 'node:crypto'\nsrc/acquirers/adyen/webhookSignature.ts:88:const HMAC_ALGO = 'sha256' // Adyen signs notifications with HMAC over the payload fields, base64\nsrc/acquirers/stripe/client.ts:41:  // Stripe verifies through its SDK; no manual HMAC here\ntest/webhook.test.ts:19:    const hmac = sign(payload, 'test-key')" },
    { key: 'pool', at: 0.38, where: 'assistant', answer: 'from 20 to 48', prompt: 'We keep hitting "timeout exceeded when trying to connect" at peak. Can you give the API more database headroom?', text: 'Done. I raised `max` on the pg Pool in src/db/pool.ts from 20 to 48 and set idleTimeoutMillis to 10_000. With 6 API replicas that is 288, still under the server\'s max_connections of 300, so we do not need pgbouncer yet.' },
    { key: 'redis-prod', at: 0.47, where: 'tool', answer: 'cache-prod.ledger.internal:6379', call: { tool: 'shell', args: { command: 'kubectl -n ledger get secret ledger-env -o json | jq -r ".data | map_values(@base64d) | to_entries[] | \\"\\(.key)=\\(.value)\\""' }, text: 'Reading the production environment.' }, text: 'NODE_ENV=production\nPORT=8080\nDATABASE_URL=postgres://ledger@pg-prod.ledger.internal:5432/ledger\nREDIS_URL=redis://cache-prod.ledger.internal:6379/2\nKAFKA_BROKERS=kafka-1.prod:9092,kafka-2.prod:9092,kafka-3.prod:9092\nLOG_LEVEL=info\nFX_CACHE_SECONDS=600\nSENTRY_ENVIRONMENT=production' },
    { key: 'migration', at: 0.52, where: 'tool', answer: 'INV-88213', call: { tool: 'shell', args: { command: 'pnpm db:migrate' }, text: 'Applying the pending migrations.' }, text: '> ledger@3.8.0 db:migrate\n> node-pg-migrate up\n\n### MIGRATION 0041_refund_reason (UP) ###\nALTER TABLE refunds ADD COLUMN reason text;\n### MIGRATION 0042_invoice_external_ref (UP) ###\nALTER TABLE invoices ADD COLUMN external_ref text;\nCREATE UNIQUE INDEX invoices_external_ref_key ON invoices (external_ref);\nerror: could not create unique index "invoices_external_ref_key"\nDETAIL:  Key (external_ref)=(INV-88213) is duplicated.\nRolling back attempted migration ...\nError: Migration failed. Reverting...' },
    { key: 'rounding-test', at: 0.545, where: 'tool', answer: 'expected 29, received 28', call: { tool: 'shell', args: { command: 'pnpm vitest run test/money.test.ts' }, text: 'Running the money tests.' }, text: ' ✓ test/money.test.ts > toMinorUnits > converts 12.00 EUR 3ms\n × test/money.test.ts > toMinorUnits > converts 0.285 EUR to cents 5ms\n   → AssertionError: expected 29, received 28\n ✓ test/money.test.ts > fromMinorUnits > round-trips JPY 1ms\n\n1 failed, 2 passed in 0.61s' },
    { key: 'rounding', at: 0.56, where: 'assistant', answer: 'became 28 cents instead of 29', text: 'Root cause found: toMinorUnits() multiplied by 100 and called Math.round on a float, so 0.285 EUR became 28 cents instead of 29. It now uses decimal.js with ROUND_HALF_EVEN, and I added property tests over 10k random amounts.' },
    { key: 'fx', at: 0.64, where: 'user', answer: 'LEDGER_FX_PROVIDER=openexchangerates', text: 'Can you set LEDGER_FX_PROVIDER=openexchangerates for staging? The ECB feed only publishes once a day and merchants in Brazil were seeing yesterday\'s BRL rate.' },
    { key: 'sentry', at: 0.68, where: 'tool', answer: 'LEDGER-3F9', call: { tool: 'shell', args: { command: 'sentry-cli issues list --project ledger --query is:unresolved' }, text: 'Listing unresolved Sentry issues.' }, text: "+------------+--------------------------------------------------------------------+-----------+\n| Issue      | Title                                                              | Events    |\n+------------+--------------------------------------------------------------------+-----------+\n| LEDGER-3C1 | Error: connect ETIMEDOUT 10.0.4.17:5432                            | 88        |\n| LEDGER-3F9 | TypeError: Cannot read properties of undefined (reading 'currency') | 1,204     |\n|            |   src/payouts/batch.ts in buildPayoutFile                          |           |\n| LEDGER-3D4 | KafkaJSNumberOfRetriesExceeded                                     | 17        |\n| LEDGER-3E2 | AbortError: This operation was aborted                             | 9         |\n+------------+--------------------------------------------------------------------+-----------+" },
    { key: 'flag-v2', at: 0.71, where: 'user', answer: 'set the flag to 50%', text: "Error budget looks healthy after two weeks. Let's widen async settlement to half of all merchants: set the flag to 50%." },
    { key: 'node-v2', at: 0.76, where: 'assistant', answer: '22.12.0', text: 'Upgraded the runtime: .nvmrc and the Dockerfile base image now pin Node 22.12.0 (bookworm-slim). The only code change needed was replacing the deprecated `url.parse` call in src/api/server.ts.' },
    { key: 'flaky', at: 0.83, where: 'tool', answer: 'expected 2 to equal 3', call: { tool: 'shell', args: { command: 'pnpm vitest run test/settlement.retry.test.ts' }, text: 'Re-running the settlement retry tests.' }, text: ' ✓ test/settlement.retry.test.ts > gives up after the retry budget 14ms\n ✓ test/settlement.retry.test.ts > does not retry a 400 3ms\n × test/settlement.retry.test.ts > retries a 409 from the acquirer three times 212ms\n   → AssertionError: expected 2 to equal 3\n   ❯ test/settlement.retry.test.ts:64:23\n ✓ test/settlement.retry.test.ts > backs off exponentially 31ms\n\n1 failed, 3 passed in 1.12s' },
    { key: 'latency', at: 0.88, where: 'tool', answer: 'p(99)=1.31s', call: { tool: 'shell', args: { command: 'k6 run load/payouts.js' }, text: 'Load testing the payouts endpoint.' }, text: r => k6(r, 'POST /v1/payouts', 'load/payouts.js', '412.7ms', '1.31s') },
  ],
  questions: [
    { q: 'Which port does Redis use in staging?', facts: ['redis-staging'], cat: 'distractor' },
    { q: 'production REDIS_URL', facts: ['redis-prod'], cat: 'distractor' },
    { q: 'How many Postgres connections may one API instance hold at most?', facts: ['pool'], cat: 'paraphrase' },
    { q: 'pg pool max connections', facts: ['pool'], cat: 'keyword' },
    { q: 'could not create unique index', facts: ['migration'], cat: 'error' },
    { q: 'Which invoice reference was duplicated and broke the migration?', facts: ['migration'], cat: 'question' },
    { q: 'external_ref_key', facts: ['migration'], cat: 'identifier' },
    { q: 'What percentage of merchants get async settlement now, after the latest rollout change?', facts: ['flag-v2'], cat: 'revised' },
    { q: 'async-settlement rollout latest', facts: ['flag-v2'], cat: 'revised' },
    { q: 'Who owns the nightly reconciliation job?', facts: ['owner'], cat: 'question' },
    { q: 'AssertionError: expected 2 to equal 3', facts: ['flaky'], cat: 'error' },
    { q: 'Which settlement retry test failed?', facts: ['flaky'], cat: 'question' },
    { q: 'HMAC_ALGO', facts: ['hmac'], cat: 'identifier' },
    { q: 'What hash algorithm is used to verify Adyen webhooks?', facts: ['hmac'], cat: 'question' },
    { q: 'How slow was the payout endpoint at the 99th percentile under load?', facts: ['latency'], cat: 'number' },
    { q: 'payouts load test p99', facts: ['latency'], cat: 'keyword' },
    { q: 'When are we allowed to ship ledger releases?', facts: ['deploy'], cat: 'paraphrase' },
    { q: 'which node version are we on now', facts: ['node-v2'], cat: 'revised' },
    { q: 'kafka topic for settlement events', facts: ['topic'], cat: 'keyword' },
    { q: 'FX_PROVIDER', facts: ['fx'], cat: 'identifier' },
    { q: 'Why did we change the exchange-rate source?', facts: ['fx'], cat: 'paraphrase' },
    { q: 'Why were some amounts off by one cent?', facts: ['rounding', 'rounding-test'], cat: 'paraphrase' },
    { q: 'toMinorUnits Math.round float', facts: ['rounding'], cat: 'keyword' },
    { q: 'At what time does the reconcile job run each night?', facts: ['cron'], cat: 'number' },
    { q: "Cannot read properties of undefined (reading 'currency')", facts: ['sentry'], cat: 'error' },
    { q: 'sentry issue id for the currency crash in buildPayoutFile', facts: ['sentry'], cat: 'keyword' },
    { q: 'ledger may only be deployed between', facts: ['deploy'], cat: 'exact' },
  ],
}

// ---- project: streamline (English, Python clickstream ETL) -------------------------------------------

function pyLog(r: Rng, count: number): string {
  const lines: string[] = []
  for (let index = 0; index < count; index += 1) {
    lines.push(`2026-10-${String(int(r, 10, 30)).padStart(2, '0')} ${String(int(r, 0, 23)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')},${int(r, 100, 999)} ${pick(r, ['INFO', 'INFO', 'INFO', 'WARNING', 'ERROR'])} streamline.${pick(r, ['run', 'transforms.sessionize', 'transforms.dedupe', 'io.s3', 'io.parquet', 'quality.checks'])}: ${pick(r, ['processed partition', 'wrote parquet file', 'skipped empty hour', 'retrying S3 request', 'schema drift detected', 'dedupe dropped rows', 'validated partition'])} dt=2026-10-${String(int(r, 1, 31)).padStart(2, '0')} hour=${String(int(r, 0, 23)).padStart(2, '0')} rows=${int(r, 1000, 900000)}`)
  }
  return lines.join('\n')
}

const STREAMLINE: Project = {
  id: 'en-streamline',
  language: 'en',
  day: 3,
  files: ['streamline/run.py', 'streamline/transforms/sessionize.py', 'streamline/transforms/enrich_geo.py', 'streamline/transforms/dedupe.py', 'streamline/io/parquet.py', 'streamline/io/s3.py', 'streamline/quality/checks.py', 'streamline/config.py', 'dags/clickstream_daily_rollup.py', 'tests/test_sessionize.py', 'tests/test_dedupe.py', 'tests/test_enrich_geo.py'],
  fns: ['sessionize', 'dedupe_events', 'enrich_geo', 'partition_for', 'read_partition', 'write_parquet', 'load_sessions', 'validate_schema', 'compute_session_gaps', 'normalize_user_agent', 'hash_ip', 'drop_bots'],
  errors: ["botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation", 'pyarrow.lib.ArrowInvalid: Schema at index 3 was different', "KeyError: 'context.campaign.source'", 'ValueError: cannot reindex on an axis with duplicate labels', "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.segment.io', port=443): Read timed out. (read timeout=30)", 'AssertionError: expected 24 hourly partitions, found 23', 'MemoryError', 'TypeError: unhashable type: \'list\''],
  commits: ['fix(dedupe): keep the first event per key', 'feat(geo): add city-level enrichment', 'chore: bump pandas to 2.2.3', 'perf(sessionize): vectorize the gap computation', 'test: fixtures for late-arriving events', 'fix(s3): retry SlowDown with jitter', 'feat(quality): row count check per hour', 'refactor(io): one writer for all sinks', 'docs: partition layout'],
  prompts: [
    'Can you look at why {fn} is so slow on a full day of data?',
    'Run the tests for {file}.',
    'We got "{err}" in last night\'s run. What happened?',
    'Add type hints to {fn} in {file}.',
    '{fn} should skip bot traffic. Can you add that?',
    'Review {file}, I think {fn} reads the whole partition into memory.',
    'Please add a test for {fn} with an empty partition.',
    'Is {fn} deterministic? We need reruns to produce identical files.',
    'Make {fn} log how many rows it dropped.',
    'Can we parallelize {fn} across hours?',
  ],
  answers: [
    'Done: {fn} now streams row groups instead of loading the whole partition; peak memory on a full day dropped by about {n}x.',
    'The "{err}" came from a transient S3 issue; the retry picked it up. No data loss, the partition validated.',
    'Added the type hints and a test in {file}; mypy is clean.',
    '{fn} now drops known bots by user agent before sessionizing; that removed about {n}% of events.',
    'Yes, {fn} is deterministic once the input is sorted by (anonymous_id, ts); I added that sort in {file}.',
    'Parallelized {fn} across hours with a process pool of {n} workers; the run is much faster now.',
  ],
  noise: [
    'The raw bucket layout confuses everyone; we should write it down.',
    'Dedup still lets a few duplicates through on Android, but that is a different issue.',
    'Memory on the sessionize workers is tight, keep that in mind.',
    'The DAG schedule might need to change once the backfill is done.',
    'Late events are a recurring headache; analytics keeps asking about them.',
    'Timezones again? Let us make sure everything is UTC end to end.',
    'I never remember how we anonymize IPs, remind me later.',
    'Who was our contact for the Segment export again? Not urgent.',
    'BigQuery permissions have been flaky since the project move.',
    'The null checks on the sessions table are too strict, maybe.',
    'We should pin versions more carefully after last time.',
  ],
  testCmd: file => `pytest -q ${file.startsWith('tests/') ? file : 'tests/'}`,
  buildCmd: 'mypy streamline',
  logs: r => pyLog(r, int(r, 8, 30)),
  configs: [
    { path: 'streamline.yaml', text: r => `source:\n  bucket: \${RAW_BUCKET}\n  prefix_template: "dt={dt}/hour={hour}/"\nsink:\n  bucket: \${CURATED_BUCKET}\n  format: parquet\n  compression: zstd\nsessionize:\n  gap_minutes: ${int(r, 20, 45)}\n  max_session_hours: 12\ndedupe:\n  window_hours: 24` },
    { path: 'dags/clickstream_daily_rollup.py', text: () => 'with DAG(\n    dag_id="clickstream_daily_rollup",\n    schedule="@daily",\n    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),\n    catchup=False,\n) as dag:\n    rollup = PythonOperator(task_id="rollup", python_callable=run_rollup)' },
    { path: '.env.example', text: () => 'RAW_BUCKET=\nCURATED_BUCKET=\nAWS_REGION=eu-west-1\nGOOGLE_CLOUD_PROJECT=acme-analytics\nSEGMENT_WRITE_KEY=' },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'airflow dags list-runs -d clickstream_daily_rollup --limit 5' }, callText: 'Checking recent DAG runs.', output: `dag_id                   | run_id                               | state   | execution_date\nclickstream_daily_rollup | scheduled__2026-10-${int(r, 10, 28)}T00:00:00+00:00 | success | 2026-10-${int(r, 10, 28)}\nclickstream_daily_rollup | scheduled__2026-10-${int(r, 10, 28)}T00:00:00+00:00 | failed  | 2026-10-${int(r, 10, 28)}` }),
    r => ({ tool: 'shell', args: { command: 'bq query --nouse_legacy_sql "select count(*) from clickstream.sessions where dt = current_date()"' }, callText: 'Counting today\'s sessions.', output: `+----------+\n|   f0_    |\n+----------+\n| ${int(r, 100000, 9000000)} |\n+----------+` }),
  ],
  facts: [
    { key: 'raw-bucket', at: 0.05, where: 'user', answer: 's3://acme-clickstream-raw/v3/', text: "Context for this work: raw events land in s3://acme-clickstream-raw/v3/ partitioned by dt= and hour=, written by the Segment S3 destination. Don't write anything back there." },
    { key: 'python', at: 0.09, where: 'tool', answer: 'requires-python = ">=3.11,<3.13"', call: { tool: 'read_file', args: { path: 'pyproject.toml' }, text: 'Reading the project metadata.' }, text: '[project]\nname = "streamline"\nversion = "0.14.2"\nrequires-python = ">=3.11,<3.13"\ndependencies = [\n  "pandas>=2.2",\n  "pyarrow",\n  "boto3>=1.34",\n  "google-cloud-bigquery>=3.25",\n  "great-expectations>=1.1",\n]\n\n[tool.mypy]\nstrict = true' },
    { key: 'schedule', at: 0.13, where: 'tool', answer: 'schedule="30 */2 * * *"', call: { tool: 'read_file', args: { path: 'dags/clickstream_hourly.py' }, text: 'Looking at the hourly DAG.' }, text: 'from airflow import DAG\nfrom airflow.operators.python import PythonOperator\nimport pendulum\n\nwith DAG(\n    dag_id="clickstream_hourly",\n    schedule="30 */2 * * *",\n    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),\n    catchup=False,\n    max_active_runs=1,\n    default_args={"retries": 2, "retry_delay": pendulum.duration(minutes=5)},\n) as dag:\n    sessionize = PythonOperator(task_id="sessionize", python_callable=run_sessionize)\n    load = PythonOperator(task_id="load_sessions", python_callable=run_load)\n    sessionize >> load' },
    { key: 'chunk-v1', at: 0.22, where: 'assistant', answer: 'batch_size=250_000', text: 'sessionize now reads the parquet files with iter_batches(batch_size=250_000) instead of loading whole days, which keeps peak RSS around 3 GiB on a busy Monday.' },
    { key: 'merge-path', at: 0.26, where: 'tool', answer: 'bigquery_merge.py', call: { tool: 'shell', args: { command: 'tree streamline -L 2' }, text: 'Getting an overview of the package.' }, text: 'streamline\n├── __init__.py\n├── config.py\n├── run.py\n├── io\n│   ├── parquet.py\n│   └── s3.py\n├── quality\n│   └── checks.py\n├── sinks\n│   ├── __init__.py\n│   └── bigquery_merge.py\n└── transforms\n    ├── dedupe.py\n    ├── enrich_geo.py\n    └── sessionize.py\n\n5 directories, 12 files' },
    { key: 'contact', at: 0.30, where: 'user', answer: 'Tomasz Wójcik', text: 'If the Segment export breaks over the weekend, ping Tomasz Wójcik in #data-platform; he has the vendor escalation contacts.' },
    { key: 'dedupe', at: 0.36, where: 'assistant', answer: '(anonymous_id, event_id)', prompt: 'Finance sees double-counted purchases from some mobile users. Can you dig in?', text: 'Changed dedup to key on (anonymous_id, event_id) instead of message_id. The iOS SDK 4.2 regenerates message_id after an app reinstall, which is where the double-counted purchase events came from.' },
    { key: 'pyarrow', at: 0.40, where: 'tool', answer: 'pyarrow==17.0.0', call: { tool: 'shell', args: { command: 'grep -n -B1 -A1 pyarrow requirements.lock' }, text: 'Checking how pyarrow is pinned.' }, text: '41-# pinned: pyarrow 18 switched parquet timestamps to nanoseconds and BigQuery rejects them\n42:pyarrow==17.0.0\n43-pandas==2.2.3' },
    { key: 'oom', at: 0.44, where: 'tool', answer: 'Unable to allocate 11.2 GiB', call: { tool: 'shell', args: { command: 'python -m streamline.run sessionize --date 2026-10-14' }, text: 'Reproducing the failed run locally.' }, text: r => `${pyLog(r, 6)}\nTraceback (most recent call last):\n  File "/app/streamline/run.py", line 57, in main\n    result = step.run(ctx)\n  File "/app/streamline/transforms/sessionize.py", line 132, in run\n    gaps = np.diff(ts.values.astype("int64"))\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate 11.2 GiB for an array with shape (1503238553,) and data type int64` },
    { key: 'tz', at: 0.49, where: 'assistant', answer: 'America/Los_Angeles instead of UTC', text: "Found it: the dt partition was derived in America/Los_Angeles instead of UTC, so everything between 16:00 and midnight Pacific landed in the next day's partition. partition_for() now converts to UTC first." },
    { key: 'curated-bucket', at: 0.58, where: 'tool', answer: 's3://acme-clickstream-curated/sessions/dt=2026-10-31/', call: { tool: 'shell', args: { command: 'aws s3 ls --recursive --summarize "$CURATED_BUCKET/sessions/" | tail -4' }, text: 'Checking what the sink wrote.' }, text: '2026-11-01 03:12:44   81234112 s3://acme-clickstream-curated/sessions/dt=2026-10-31/part-00000.zstd.parquet\n2026-11-01 03:12:51   80998347 s3://acme-clickstream-curated/sessions/dt=2026-10-31/part-00001.zstd.parquet\n\nTotal Objects: 744\n   Total Size: 58.1 GiB' },
    { key: '403', at: 0.63, where: 'tool', answer: 'bigquery.tables.updateData', call: { tool: 'shell', args: { command: 'python -m streamline.run load_sessions --date 2026-10-20' }, text: 'Re-running the load step.' }, text: r => `${pyLog(r, 4)}\nTraceback (most recent call last):\n  File "/app/streamline/sinks/__init__.py", line 33, in load\n    job.result()\ngoogle.api_core.exceptions.Forbidden: 403 Access Denied: Table acme-analytics:clickstream.sessions: Permission bigquery.tables.updateData denied on table acme-analytics:clickstream.sessions (or it may not exist).` },
    { key: 'chunk-v2', at: 0.69, where: 'user', answer: '50k rows', text: 'Workers got downsized to 4 GiB. Please drop the batch size to 50k rows; the 250k setting OOMs on the new nodes.' },
    { key: 'salt', at: 0.74, where: 'assistant', answer: 'CLICKSTREAM_IP_SALT', text: 'IPs are never stored raw: ip_hash = sha256(salt || ip), with the salt read from the CLICKSTREAM_IP_SALT secret and rotated every quarter by the platform team.' },
    { key: 'late', at: 0.81, where: 'user', answer: 'more than 72 hours after', text: 'Rule from the analytics team: events that arrive more than 72 hours after their timestamp go to clickstream.quarantine and are never merged into sessions.' },
    { key: 'null', at: 0.86, where: 'tool', answer: '3.8% unexpected', call: { tool: 'shell', args: { command: 'great_expectations checkpoint run clickstream_daily' }, text: 'Running the data quality checkpoint.' }, text: 'Validation results for clickstream.sessions (dt=2026-10-30)\n  ✔ expect_table_row_count_to_be_between(min_value=1000000)\n  ✔ expect_column_values_to_be_unique(column=session_id)\n  ✖ expect_column_values_to_not_be_null(column=user_agent): 3.8% unexpected (mostly=0.99)\n  ✔ expect_column_values_to_be_in_set(column=platform)\n  ✔ expect_column_max_to_be_between(column=duration_s, max_value=43200)\nSuccess: False (4 of 5 expectations met)' },
    { key: 'backfill', at: 0.92, where: 'tool', answer: '1,284,553,907 rows written', call: { tool: 'shell', args: { command: 'python -m streamline.backfill --from 2026-10-01 --to 2026-10-31' }, text: 'Starting the October backfill.' }, text: r => `${Array.from({ length: 8 }, (_, index) => `[2026-10-${String(index * 4 + 1).padStart(2, '0')}] wrote ${int(r, 30_000_000, 50_000_000).toLocaleString('en-US')} rows in ${int(r, 200, 900)}s`).join('\n')}\n...\nbackfill 2026-10-01..2026-10-31 complete: 1,284,553,907 rows written, 0 rejected, 744 partitions` },
  ],
  questions: [
    { q: 'Where do the raw clickstream events land?', facts: ['raw-bucket'], cat: 'distractor' },
    { q: 'curated sessions bucket path', facts: ['curated-bucket'], cat: 'distractor' },
    { q: 'Why were there duplicate events from iPhones?', facts: ['dedupe'], cat: 'paraphrase' },
    { q: 'dedup key columns', facts: ['dedupe'], cat: 'keyword' },
    { q: 'Unable to allocate', facts: ['oom'], cat: 'error' },
    { q: 'How much memory did the sessionize step try to grab when it crashed?', facts: ['oom'], cat: 'number' },
    { q: 'latest parquet batch size for sessionize', facts: ['chunk-v2'], cat: 'revised' },
    { q: 'How often does the clickstream hourly DAG run?', facts: ['schedule'], cat: 'question' },
    { q: 'supported python versions', facts: ['python'], cat: 'keyword' },
    { q: 'What happens to events that show up days after they happened?', facts: ['late'], cat: 'paraphrase' },
    { q: "Why did some events end up in the wrong day's partition?", facts: ['tz'], cat: 'question' },
    { q: 'partition timezone bug', facts: ['tz'], cat: 'keyword' },
    { q: 'what share of user_agent values were null', facts: ['null'], cat: 'number' },
    { q: 'expect_column_values_to_not_be_null user_agent', facts: ['null'], cat: 'identifier' },
    { q: 'Who has the Segment vendor contacts?', facts: ['contact'], cat: 'question' },
    { q: 'tomasz wojcik', facts: ['contact'], cat: 'exact' },
    { q: 'How are IP addresses anonymized?', facts: ['salt'], cat: 'paraphrase' },
    { q: 'IP_SALT', facts: ['salt'], cat: 'identifier' },
    { q: 'How many rows did the October backfill write in total?', facts: ['backfill'], cat: 'number' },
    { q: 'Why is pyarrow pinned to 17?', facts: ['pyarrow'], cat: 'question' },
    { q: 'bigquery_merge', facts: ['merge-path'], cat: 'identifier' },
    { q: 'Which permission was missing when loading the sessions table?', facts: ['403'], cat: 'question' },
    { q: '403 Access Denied', facts: ['403'], cat: 'error' },
  ],
}

// ---- project: storefront (English, Next.js shop and CI) ---------------------------------------------

const STOREFRONT: Project = {
  id: 'en-storefront',
  language: 'en',
  day: 6,
  files: ['app/(shop)/products/[slug]/page.tsx', 'app/(shop)/cart/page.tsx', 'app/api/checkout/route.ts', 'components/ProductCard.tsx', 'components/CartDrawer.tsx', 'components/PriceBadge.tsx', 'lib/cart.ts', 'lib/api.ts', 'lib/analytics.ts', 'middleware.ts', 'e2e/search.spec.ts', 'e2e/account.spec.ts'],
  fns: ['addToCart', 'useCart', 'formatPrice', 'getProduct', 'revalidateCategory', 'trackEvent', 'applyCoupon', 'createCheckoutSession', 'mergeGuestCart', 'useDebouncedSearch', 'getRecommendations'],
  errors: ['Error: Hydration failed because the initial UI does not match what was rendered on the server.', "TypeError: Cannot read properties of null (reading 'id')", 'Error: NEXT_REDIRECT', 'Warning: Each child in a list should have a unique "key" prop.', 'Error: Failed to fetch dynamically imported module', 'FetchError: request to https://api.storefront.dev/v1/products failed, reason: socket hang up', 'Error: Timed out 5000ms waiting for expect(locator).toHaveText()'],
  commits: ['feat(search): debounce the search box', 'fix(cart): merge the guest cart on login', 'chore: bump next to 15.1', 'perf(images): lazy-load below-the-fold images', 'test(e2e): stabilize account spec', 'fix(checkout): handle Stripe 402', 'feat(pdp): recommendations carousel', 'ci: shard playwright across 4 runners', 'refactor: move price formatting to lib'],
  prompts: [
    'The {fn} hook re-renders too often. Can you look?',
    'Run the e2e tests for {file}.',
    'We get "{err}" on the product page sometimes. Ideas?',
    'Please move {fn} into lib and add a unit test.',
    'Can you make {file} a server component?',
    'Check that {fn} handles a missing price.',
    'Review {file} for accessibility issues.',
    'Why does the CI job for {file} take so long?',
    '{fn} should debounce. Can you add that?',
  ],
  answers: [
    'Fixed: {fn} memoizes its selector now, so the drawer renders once per cart change instead of {n} times.',
    'The "{err}" came from a date rendered with the server timezone; {file} now formats on the client.',
    'Moved {fn} to lib and added {n} unit tests; the e2e suite still passes.',
    'Converted {file} to a server component; the client bundle for that route shrank a bit.',
    'Added the missing-price branch to {fn}; it now shows "Price on request".',
    'The slow part of CI was installing browsers; I cached them. {file} runs in about {n} minutes now.',
  ],
  noise: [
    'The brand colors are a moving target, marketing changes them every quarter.',
    'E2E tests are flaky again, especially around checkout.',
    'Bundle size keeps creeping up, we should look at it at some point.',
    'Product images look blurry on retina screens, not urgent.',
    'Accessibility audit is scheduled for next month.',
    'I can never remember where the Stripe keys for previews are configured.',
    'Locale handling is a mess, Austrian users complained again.',
    'Storybook builds are slow on CI.',
    'Analytics: legal wants us to reconsider our tracking setup.',
    'Lighthouse scores dropped after the last release, someone should check.',
    'The admin panel talks to the API from another origin, remember that when changing headers.',
  ],
  testCmd: file => `pnpm playwright test ${file.startsWith('e2e/') ? file : 'e2e/'}`,
  buildCmd: 'pnpm tsc --noEmit',
  logs: r => Array.from({ length: int(r, 8, 25) }, () => `${pick(r, ['GET', 'GET', 'POST'])} ${pick(r, ['/', '/products/linen-shirt', '/cart', '/api/checkout', '/category/summer', '/_next/data/build/index.json'])} ${pick(r, [200, 200, 200, 304, 404, 500])} in ${int(r, 8, 1400)}ms`).join('\n'),
  configs: [
    { path: 'next.config.mjs', text: () => "/** @type {import('next').NextConfig} */\nexport default {\n  reactStrictMode: true,\n  experimental: { ppr: false },\n  images: { remotePatterns: [{ hostname: 'cdn.storefront.dev' }] },\n}" },
    { path: '.env.example', text: () => 'NEXT_PUBLIC_API_URL=http://localhost:4000\nNEXT_PUBLIC_STRIPE_PK=\nSTRIPE_SECRET_KEY=\nREVALIDATE_TOKEN=' },
    { path: 'tailwind.config.ts', text: () => "export default {\n  content: ['./app/**/*.tsx', './components/**/*.tsx'],\n  theme: { extend: { colors: { brand: { DEFAULT: 'var(--brand)', muted: 'var(--brand-muted)' } } } },\n}" },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'npx lighthouse https://staging.storefront.dev/ --only-categories=performance --quiet' }, callText: 'Measuring the home page.', output: `performance: ${int(r, 60, 95)}\nlargest-contentful-paint: ${(r() * 3 + 1).toFixed(1)} s\ncumulative-layout-shift: 0.0${int(r, 1, 9)}\ntotal-blocking-time: ${int(r, 50, 600)} ms` }),
    r => ({ tool: 'shell', args: { command: 'pnpm next lint' }, callText: 'Linting.', output: r() < 0.5 ? '✔ No ESLint warnings or errors' : `./components/${pick(r, ['ProductCard', 'CartDrawer', 'PriceBadge'])}.tsx\n${int(r, 3, 90)}:${int(r, 1, 30)}  Warning: React Hook useEffect has a missing dependency.  react-hooks/exhaustive-deps` }),
  ],
  facts: [
    { key: 'color', at: 0.03, where: 'user', answer: '#0F766E', text: 'Design update: brand primary is #0F766E now, not the old #14B8A6. Marketing switched palettes last week. Please update the tokens in tailwind.config.ts.' },
    { key: 'cache', at: 0.07, where: 'tool', answer: "pnpm-store-${{ runner.os }}-${{ hashFiles('pnpm-lock.yaml') }}", call: { tool: 'read_file', args: { path: '.github/workflows/ci.yml' }, text: 'Reading the CI workflow.' }, text: "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: pnpm/action-setup@v4\n      - uses: actions/cache@v4\n        with:\n          path: ~/.local/share/pnpm/store\n          key: pnpm-store-${{ runner.os }}-${{ hashFiles('pnpm-lock.yaml') }}\n      - run: pnpm install --frozen-lockfile\n      - run: pnpm test\n      - run: pnpm playwright test --shard=${{ matrix.shard }}/4" },
    { key: 'isr', at: 0.12, where: 'assistant', answer: 'revalidate: 300', text: 'Category pages use ISR with revalidate: 300; product pages are revalidated on demand via POST /api/revalidate with the x-revalidate-token header.' },
    { key: 'heap', at: 0.29, where: 'tool', answer: 'Reached heap limit Allocation failed', call: { tool: 'shell', args: { command: 'pnpm build:storybook' }, text: 'Building Storybook to reproduce the CI failure.' }, text: '<--- Last few GCs --->\n[2231:0x6c1e000]   182211 ms: Mark-Compact 4046.2 (4128.9) -> 4031.7 (4129.4) MB, 2011.23 / 0.00 ms  (average mu = 0.121, current mu = 0.018) allocation failure\n\n<--- JS stacktrace --->\n\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n 1: 0xb8b6b0 node::Abort() [node]\n 2: 0xa8e8d1  [node]\n 3: 0xd6f4c0 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [node]\n ELIFECYCLE  Command failed.' },
    { key: 'heap-fix', at: 0.30, where: 'assistant', answer: '--max-old-space-size=6144', text: 'Storybook builds again with NODE_OPTIONS=--max-old-space-size=6144 set in the build:storybook script; peak heap was about 4.7 GB, so 6 GB leaves some margin.' },
    { key: 'bundle-v1', at: 0.34, where: 'tool', answer: '212 kB', call: { tool: 'shell', args: { command: 'pnpm build' }, text: 'Building to see the bundle sizes.' }, text: 'Route (app)                              Size     First Load JS\n┌ ○ /                                    5.2 kB          231 kB\n├ ● /category/[slug]                     3.9 kB          228 kB\n├ ƒ /products/[slug]                     9.8 kB          239 kB\n└ ○ /cart                                4.4 kB          226 kB\n+ First Load JS shared by all            212 kB\n  ├ chunks/framework.js                  45 kB\n  └ other shared chunks (total)          167 kB' },
    { key: 'images', at: 0.41, where: 'assistant', answer: 'lib/cloudinaryLoader.ts', text: 'Product images now go through Cloudinary with f_auto,q_auto,w_800; the custom loader for next/image lives in lib/cloudinaryLoader.ts and is wired in next.config.mjs.' },
    { key: 'pw', at: 0.46, where: 'tool', answer: 'applies coupon SPRING25', call: { tool: 'shell', args: { command: 'pnpm playwright test e2e/checkout.spec.ts' }, text: 'Running the checkout e2e spec.' }, text: "Running 9 tests using 4 workers\n\n  ✓  1 [chromium] › e2e/checkout.spec.ts:12:5 › guest checkout › pays with card (6.1s)\n  ✘  2 [chromium] › e2e/checkout.spec.ts:57:5 › guest checkout › applies coupon SPRING25 (31.2s)\n  ✓  3 [chromium] › e2e/checkout.spec.ts:88:5 › logged in › reuses saved address (4.0s)\n\n  1) [chromium] › e2e/checkout.spec.ts:57:5 › guest checkout › applies coupon SPRING25\n\n    Error: Timed out 5000ms waiting for expect(locator).toBeVisible()\n\n    Locator: getByTestId('coupon-applied')\n    Expected: visible\n    Received: <element(s) not found>\n\n  1 failed\n  8 passed (48.3s)" },
    { key: 'pr', at: 0.50, where: 'tool', answer: '7-day expiry', call: { tool: 'shell', args: { command: 'gh pr view 1432' }, text: 'Looking at the cart PR.' }, text: 'feat(cart): persist cart in localStorage with 7-day expiry #1432\nMerged • mkowalski wants to merge 6 commits into main from cart-persist\n\n  Guests lose their cart on reload. This stores it in localStorage and drops it after seven days of inactivity.\n\n  + lib/cart.ts\n  + lib/cart.test.ts' },
    { key: 'stripe', at: 0.55, where: 'user', answer: 'set in the Vercel project settings', text: 'Reminder: preview deployments must use the Stripe test publishable key. NEXT_PUBLIC_STRIPE_PK for previews is set in the Vercel project settings, never committed in .env.local.' },
    { key: 'cors', at: 0.61, where: 'user', answer: 'has been blocked by CORS policy', text: "The admin panel is broken since this morning: Access to fetch at 'https://api.storefront.dev/v1/orders' from origin 'https://admin.storefront.dev' has been blocked by CORS policy: No 'Access-Control-Allow-Origin' header is present on the requested resource." },
    { key: 'lighthouse', at: 0.72, where: 'tool', answer: 'largest-contentful-paint: 3.9 s', call: { tool: 'shell', args: { command: 'npx lighthouse https://staging.storefront.dev/products/linen-shirt --only-categories=performance --quiet' }, text: 'Measuring a product page.' }, text: 'performance: 71\nlargest-contentful-paint: 3.9 s\ncumulative-layout-shift: 0.02\ntotal-blocking-time: 420 ms\nspeed-index: 4.1 s' },
    { key: 'bundle-v2', at: 0.79, where: 'tool', answer: '164 kB', call: { tool: 'shell', args: { command: 'ANALYZE=false pnpm build' }, text: 'Rebuilding after removing moment and lodash.' }, text: 'Route (app)                              Size     First Load JS\n┌ ○ /                                    5.0 kB          181 kB\n├ ● /category/[slug]                     3.7 kB          178 kB\n├ ƒ /products/[slug]                     9.1 kB          188 kB\n└ ○ /cart                                4.2 kB          176 kB\n+ First Load JS shared by all            164 kB\n  ├ chunks/framework.js                  45 kB\n  └ other shared chunks (total)          119 kB' },
    { key: 'axe', at: 0.84, where: 'tool', answer: '.price-badge--sale', call: { tool: 'shell', args: { command: 'pnpm test:a11y' }, text: 'Running the accessibility checks.' }, text: 'axe-core 4.10 on /category/summer\n\ncolor-contrast (serious): Elements must meet minimum color contrast ratio thresholds\n  2 nodes: .price-badge--sale, .price-badge--sale > span\n  Fix: foreground #F87171 on #FEE2E2 has a ratio of 2.4:1 (needs 4.5:1)\n\nlink-name (passed)\nimage-alt (passed)\n\n1 violation' },
    { key: 'i18n', at: 0.90, where: 'assistant', answer: 'de-AT → de → en', text: 'Locale fallback is now de-AT → de → en and fr-CA → fr → en, configured in i18n/fallbacks.ts; automatic locale detection stays off.' },
    { key: 'analytics', at: 0.94, where: 'user', answer: 'Plausible at stats.storefront.dev', text: "Decision: we're dropping Google Analytics. Self-hosted Plausible at stats.storefront.dev replaces it from the next release; remove gtag from the root layout." },
  ],
  questions: [
    { q: 'CI cache key for the pnpm store', facts: ['cache'], cat: 'keyword' },
    { q: 'Which end-to-end test timed out on the coupon?', facts: ['pw'], cat: 'question' },
    { q: "getByTestId('coupon-applied')", facts: ['pw'], cat: 'error' },
    { q: 'brand primary color hex', facts: ['color'], cat: 'keyword' },
    { q: 'latest First Load JS shared by all size', facts: ['bundle-v2'], cat: 'revised' },
    { q: 'How big was the shared bundle before the optimization?', facts: ['bundle-v1'], cat: 'revised' },
    { q: 'cloudinaryLoader', facts: ['images'], cat: 'identifier' },
    { q: 'How are product pictures optimized?', facts: ['images'], cat: 'paraphrase' },
    { q: 'Cloudinary 图片参数是什么', facts: ['images'], cat: 'mixed', lang: 'mixed' },
    { q: 'Which element failed the color contrast check?', facts: ['axe'], cat: 'question' },
    { q: 'Where is the Stripe publishable key configured for preview builds?', facts: ['stripe'], cat: 'question' },
    { q: 'locale fallback chain for de-AT', facts: ['i18n'], cat: 'keyword' },
    { q: 'JavaScript heap out of memory', facts: ['heap', 'heap-fix'], cat: 'error' },
    { q: 'How much heap did we give the Storybook build?', facts: ['heap-fix'], cat: 'number' },
    { q: 'How often are category pages regenerated?', facts: ['isr'], cat: 'paraphrase' },
    { q: 'Which analytics tool replaces GA?', facts: ['analytics'], cat: 'paraphrase' },
    { q: 'LCP on the product page', facts: ['lighthouse'], cat: 'number' },
    { q: 'How long does a saved cart survive?', facts: ['pr'], cat: 'paraphrase' },
    { q: 'blocked by CORS policy', facts: ['cors'], cat: 'error' },
    { q: 'Which origin was blocked from calling the orders API?', facts: ['cors'], cat: 'question' },
    { q: 'persist cart in localStorage', facts: ['pr'], cat: 'exact' },
  ],
}

// ---- project: inventory (Chinese, Go inventory service) ---------------------------------------------

function zapLines(r: Rng, count: number): string {
  const lines: string[] = []
  for (let index = 0; index < count; index += 1) {
    lines.push(JSON.stringify({ level: pick(r, ['info', 'info', 'info', 'warn', 'error']), ts: `2026-11-0${int(r, 1, 9)}T${String(int(r, 0, 23)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}.${int(r, 100, 999)}+0800`, caller: `${pick(r, ['stock/reserve.go', 'sync/worker.go', 'api/handler.go', 'mq/producer.go'])}:${int(r, 20, 300)}`, msg: pick(r, ['库存预占成功', '同步完成', '消息发送成功', '请求处理完成', '库存不足', '重试中', '获取锁失败']), sku: int(r, 100000, 199999), cost_ms: int(r, 1, 800) }))
  }
  return lines.join('\n')
}

const INVENTORY: Project = {
  id: 'zh-inventory',
  language: 'zh',
  day: 9,
  files: ['internal/stock/deduct.go', 'internal/stock/reserve.go', 'internal/stock/ledger.go', 'internal/sync/worker.go', 'internal/lock/redislock.go', 'internal/mq/producer.go', 'internal/api/handler.go', 'cmd/inventory-svc/main.go', 'internal/pricing/client.go', 'internal/stock/deduct_test.go', 'internal/sync/worker_test.go'],
  fns: ['DeductStock', 'ReserveStock', 'ReleaseReservation', 'SyncWarehouse', 'PublishStockChanged', 'AcquireLock', 'RenewLock', 'LoadSkuSnapshot', 'ReconcileDaily', 'BatchUpsert', 'GetAvailable'],
  errors: ['dial tcp 10.2.3.14:3306: i/o timeout', 'redis: connection pool timeout', "Error 1062 (23000): Duplicate entry '100871-12' for key 'uk_sku_wh'", 'context canceled', '库存不足: sku=100871 need=3 available=1', 'panic: runtime error: invalid memory address or nil pointer dereference', 'sql: transaction has already been committed or rolled back'],
  commits: ['fix(stock): 扣减失败时释放预占', 'feat(sync): 支持按仓库增量同步', 'chore: 升级 go-redis 到 v9.6', 'refactor(lock): 抽出续期逻辑', 'test(stock): 补充并发扣减用例', 'fix(mq): 发送失败重试', 'perf(ledger): 批量写入流水', 'docs: 库存状态流转图'],
  prompts: [
    '帮我看一下 {file} 里的 {fn}，压测的时候为什么会超时？',
    '跑一下 {file} 相关的单元测试。',
    '"{err}" 这个报错又出现了，查一下原因。',
    '把 {fn} 的错误处理改一下，别把错误吞掉。',
    '{fn} 的命名不太清楚，重命名一下，调用方一起改。',
    '给 {fn} 补一个并发场景的测试。',
    '评审一下 {file}，我怀疑 {fn} 没有释放连接。',
    '{fn} 能不能加个指标，统计一下耗时？',
    '看看 {fn} 在重试的时候是不是幂等的。',
    '顺便把 {file} 里的日志级别调低一点，太吵了。',
  ],
  answers: [
    '已修改 {file}：{fn} 现在失败时会返回带上下文的错误，不再直接吞掉，补了 {n} 个单元测试，全部通过。',
    '查了一下日志，"{err}" 是下游抖动导致的，和这次改动无关，已经加了带退避的重试。',
    '{fn} 已重命名，{n} 处调用方都同步修改了，编译通过。',
    '并发测试补上了，跑了 {n} 轮没有出现超扣。',
    '{fn} 之前每个 SKU 查一次库，改成批量查询后本地快了大约 {n} 倍。',
    '看过了，{fn} 在重试时用的是同一个幂等键，可以安全重试，{file} 里加了注释说明。',
  ],
  noise: [
    'Redis 的配置回头再统一整理一下，现在太乱了。',
    '分布式锁那块代码有点乱，有空重构一下。',
    '超卖的问题之前也出现过一次，这次要彻底解决。',
    '对账脚本跑得有点慢，之后再优化。',
    '同步任务的监控面板加一下吧。',
    'MQ 消费延迟的告警阈值是不是太敏感了？',
    '慢查询日志帮我留意一下。',
    '测试环境又挂了，先别管它。',
    '我记不清测试环境 Redis 端口是多少了，回头确认一下。',
    '价格服务最近挺不稳定的，超时很多。',
    '发布流程要不要加个审批？',
    '仓库编码和名称的对应关系最好写进文档。',
  ],
  testCmd: file => `go test ./${file.split('/').slice(0, -1).join('/')}/... -count=1`,
  buildCmd: 'go build ./... && go vet ./...',
  logs: r => zapLines(r, int(r, 8, 28)),
  configs: [
    { path: 'configs/local.yaml', text: r => `server:\n  port: 8081\nmysql:\n  dsn: root:root@tcp(127.0.0.1:3306)/inventory?parseTime=true\n  max_open_conns: ${int(r, 20, 100)}\nredis:\n  addr: 127.0.0.1:6379\n  db: 0\nrocketmq:\n  nameserver: 127.0.0.1:9876` },
    { path: 'internal/mq/topics.go', text: () => 'package mq\n\n// 旧 topic，仅供报表使用\nconst TopicStockChangedLegacy = "stock_changed_v2"\nconst TopicReservation = "stock_reserved_v1"' },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'kubectl -n retail get pods -l app=inventory-svc' }, callText: '看一下 Pod 状态。', output: `NAME                             READY   STATUS    RESTARTS   AGE\ninventory-svc-7c9d8f6b5-${int(r, 1000, 9999)}   1/1     Running   ${int(r, 0, 3)}          ${int(r, 1, 9)}d\ninventory-svc-7c9d8f6b5-${int(r, 1000, 9999)}   1/1     Running   0          ${int(r, 1, 9)}d` }),
    r => ({ tool: 'shell', args: { command: 'mysql -e "select status, count(*) from stock_reservation group by status"' }, callText: '查一下预占单状态分布。', output: `+----------+----------+\n| status   | count(*) |\n+----------+----------+\n| RESERVED |     ${int(r, 100, 9999)} |\n| RELEASED |    ${int(r, 10000, 99999)} |\n| DEDUCTED |   ${int(r, 100000, 999999)} |\n+----------+----------+` }),
  ],
  facts: [
    { key: 'go', at: 0.03, where: 'tool', answer: 'go 1.22.4', call: { tool: 'shell', args: { command: 'head -12 go.mod' }, text: '先看一下依赖。' }, text: 'module git.example.cn/retail/inventory-svc\n\ngo 1.22.4\n\nrequire (\n\tgithub.com/apache/rocketmq-client-go/v2 v2.1.2\n\tgithub.com/go-sql-driver/mysql v1.8.1\n\tgithub.com/redis/go-redis/v9 v9.6.1\n\tgo.uber.org/zap v1.27.0\n)' },
    { key: 'redis-test', at: 0.06, where: 'user', answer: '6380', text: '先说一下环境：测试环境的 Redis 端口已经改成 6380 了，6379 被监控 agent 占着。生产那边没动。' },
    { key: 'owner', at: 0.10, where: 'user', answer: '王海燕', text: '库存对账脚本一直是王海燕在维护，改之前先跟她确认一下。' },
    { key: 'batch-v1', at: 0.16, where: 'assistant', answer: '每批 500 条', text: '同步任务改成批量写入了：每批 500 条，单批超时 5 秒，失败的批次进重试队列，不会阻塞后面的批次。' },
    { key: 'retry', at: 0.20, where: 'assistant', answer: '退避时间依次是 100ms、400ms、1.6s', text: '扣库存失败会最多重试 3 次，退避时间依次是 100ms、400ms、1.6s，超过之后写入 dead_letter 表人工处理。' },
    { key: 'mq', at: 0.25, where: 'assistant', answer: 'stock_changed_v3', text: '库存变更消息发到 RocketMQ 的 topic stock_changed_v3，消费组是 cg-inventory-sync，消息 key 用 sku_id，保证同一个 SKU 顺序消费。' },
    { key: 'lock', at: 0.37, where: 'assistant', answer: '过期时间我设成了 8 秒', prompt: '扣库存偶尔会出现两个请求同时拿到锁的情况，帮忙看下锁的实现。', text: '分布式锁的过期时间我设成了 8 秒，续期间隔 3 秒；扣库存的事务最长 2 秒左右，这样不会出现锁提前释放。改动在 internal/lock/redislock.go。' },
    { key: 'oversell', at: 0.45, where: 'user', answer: 'SKU 100234', text: '线上出现超卖了：SKU 100234 的可售库存变成了 -17，客服那边已经收到投诉，优先查这个。' },
    { key: 'deadlock', at: 0.47, where: 'tool', answer: 'Deadlock found when trying to get lock', call: { tool: 'shell', args: { command: 'kubectl -n retail logs deploy/inventory-svc --since=1h | grep -i deadlock' }, text: '查一下最近一小时的死锁日志。' }, text: '{"level":"error","ts":"2026-11-03T10:21:07.112+0800","caller":"stock/deduct.go:112","msg":"扣减库存失败","sku":100234,"err":"Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"}\n{"level":"error","ts":"2026-11-03T10:21:07.540+0800","caller":"stock/deduct.go:112","msg":"扣减库存失败","sku":100234,"err":"Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"}' },
    { key: 'redis-prod', at: 0.50, where: 'tool', answer: 'redis-prod-01.inv.internal:6379', call: { tool: 'read_file', args: { path: 'configs/prod.yaml' }, text: '看一下生产配置。' }, text: 'server:\n  port: 8081\nmysql:\n  dsn: inv_rw:${MYSQL_PASSWORD}@tcp(mysql-inv-master.internal:3306)/inventory?parseTime=true\n  max_open_conns: 120\nredis:\n  addr: redis-prod-01.inv.internal:6379\n  db: 3\n  pool_size: 64\nrocketmq:\n  nameserver: rmq-ns-1.internal:9876;rmq-ns-2.internal:9876' },
    { key: 'warehouse', at: 0.55, where: 'tool', answer: '"id": 12, "name": "华东一号仓"', call: { tool: 'shell', args: { command: "curl -s localhost:8081/v1/warehouses | jq -c '.[] | {id, name}'" }, text: '查一下仓库列表。' }, text: '{"id": 11, "name": "华北二号仓"}\n{"id": 12, "name": "华东一号仓"}\n{"id": 13, "name": "华南三号仓"}\n{"id": 14, "name": "西南一号仓"}' },
    { key: 'grpc', at: 0.58, where: 'tool', answer: 'pricing.v1.PriceService/BatchGet', call: { tool: 'shell', args: { command: 'go test ./internal/pricing/... -run TestBatchGet -v' }, text: '跑一下价格客户端的测试。' }, text: '=== RUN   TestBatchGetOK\n--- PASS: TestBatchGetOK (0.02s)\n=== RUN   TestBatchGetTimeout\n    client_test.go:87: rpc error: code = DeadlineExceeded desc = context deadline exceeded (calling pricing.v1.PriceService/BatchGet)\n--- FAIL: TestBatchGetTimeout (3.00s)\nFAIL\nFAIL\tgit.example.cn/retail/inventory-svc/internal/pricing\t3.041s' },
    { key: 'batch-v2', at: 0.73, where: 'user', answer: '每批 200 条', text: '同步批次调小一点，改成每批 200 条。500 条的时候从库延迟能到 40 秒。' },
    { key: 'slow', at: 0.80, where: 'tool', answer: 'Rows_examined: 3821934', call: { tool: 'shell', args: { command: 'pt-query-digest --limit 1 /var/log/mysql/slow.log' }, text: '看一下最慢的那条 SQL。' }, text: '# Query 1: 0.42 QPS, 2.03x concurrency, ID 0x7A1F3C... at byte 48211\n# Time range: 2026-11-05T09:00:02 to 2026-11-05T10:59:58\n# Query_time: 4.812  Lock_time: 0.000 Rows_sent: 20  Rows_examined: 3821934\nSELECT sku_id, qty, created_at FROM stock_ledger WHERE warehouse_id = 12 AND sku_id = 100871 ORDER BY created_at DESC LIMIT 20\\G\n# EXPLAIN: type: ALL  possible_keys: NULL  key: NULL  rows: 3790211  Extra: Using where; Using filesort' },
    { key: 'index', at: 0.82, where: 'assistant', answer: 'idx_wh_sku_ctime', text: '给 stock_ledger 加了联合索引 idx_wh_sku_ctime (warehouse_id, sku_id, created_at)，这条查询从 4.8 秒降到 35 毫秒，EXPLAIN 已经走 ref。' },
    { key: 'freeze', at: 0.88, where: 'user', answer: '11 月 4 日起', text: '通知一下：双十一前一周开始冻结发布，也就是 11 月 4 日起只允许修 P0 问题，其他需求都往后排。' },
  ],
  questions: [
    { q: '测试环境 Redis 用的哪个端口', facts: ['redis-test'], cat: 'distractor' },
    { q: '生产环境 redis 地址', facts: ['redis-prod'], cat: 'distractor' },
    { q: '扣减库存用的锁多久失效？', facts: ['lock'], cat: 'paraphrase' },
    { q: 'redislock 过期时间', facts: ['lock'], cat: 'keyword' },
    { q: '哪个商品的库存被扣成负数了', facts: ['oversell'], cat: 'paraphrase' },
    { q: '超卖 SKU', facts: ['oversell'], cat: 'keyword' },
    { q: 'Deadlock found when trying to get lock', facts: ['deadlock'], cat: 'error' },
    { q: 'deduct.go 死锁', facts: ['deadlock'], cat: 'mixed', lang: 'mixed' },
    { q: '对账脚本归谁负责', facts: ['owner'], cat: 'paraphrase' },
    { q: '最新的同步批次大小是多少', facts: ['batch-v2'], cat: 'revised' },
    { q: '库存变更消息发到哪个 topic', facts: ['mq'], cat: 'question' },
    { q: 'cg-inventory', facts: ['mq'], cat: 'identifier' },
    { q: '项目用的 Go 版本', facts: ['go'], cat: 'keyword' },
    { q: 'stock_ledger 慢查询扫描了多少行', facts: ['slow'], cat: 'number' },
    { q: '那个慢查询最后是怎么优化的', facts: ['index'], cat: 'paraphrase' },
    { q: 'idx_wh_sku', facts: ['index'], cat: 'identifier' },
    { q: '什么时候开始封版', facts: ['freeze'], cat: 'paraphrase' },
    { q: '调用价格服务超时的报错', facts: ['grpc'], cat: 'paraphrase' },
    { q: 'PriceService/BatchGet', facts: ['grpc'], cat: 'identifier' },
    { q: '扣库存失败会重试几次', facts: ['retry'], cat: 'question' },
    { q: '12 号仓库叫什么名字', facts: ['warehouse'], cat: 'number' },
    { q: '双十一前一周开始冻结发布', facts: ['freeze'], cat: 'exact' },
  ],
}

// ---- project: recsys (Chinese, Python recommendation system) -----------------------------------------

const RECSYS: Project = {
  id: 'zh-recsys',
  language: 'zh',
  day: 12,
  files: ['recsys/ranking/train.py', 'recsys/ranking/model.py', 'recsys/recall/item2vec.py', 'recsys/recall/merge.py', 'recsys/features/item_stats.py', 'recsys/serving/server.py', 'recsys/serving/cache.py', 'recsys/eval/offline_auc.py', 'tests/test_merge.py', 'tests/test_item_stats.py'],
  fns: ['train_epoch', 'build_dataset', 'merge_recall', 'item2vec_recall', 'compute_item_ctr', 'serve_rank', 'load_checkpoint', 'offline_auc', 'sample_negatives', 'export_onnx'],
  errors: ['RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!', 'ValueError: Input contains NaN', "KeyError: 'item_id'", 'grpc._channel._InactiveRpcError: StatusCode.UNAVAILABLE', 'redis.exceptions.TimeoutError: Timeout reading from socket', 'onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: Got invalid dimensions for input'],
  commits: ['feat(recall): 新增 item2vec 召回', 'fix(rank): 修复负采样重复', 'chore: 升级 torch 到 2.5', 'perf(serving): 特征缓存命中率优化', 'test: 补充召回合并用例', 'feat(eval): 按人群拆分 AUC', 'refactor(features): 统一时间窗口参数'],
  prompts: [
    '帮我看一下 {file}，{fn} 为什么这么慢？',
    '跑一下 {file} 的测试。',
    '训练日志里出现了 "{err}"，帮忙查一下。',
    '{fn} 里的硬编码参数挪到配置文件里去。',
    '给 {fn} 加一点日志，方便排查。',
    '评审一下 {file}，{fn} 的实现有没有问题？',
    '{fn} 能不能支持多卡？',
    '离线评估的结果和线上对不上，看看 {fn} 是不是有问题。',
    '把 {fn} 的单测补全一下。',
  ],
  answers: [
    '改好了：{fn} 里的参数都挪到了配置里，{file} 加了 {n} 个测试，全部通过。',
    '"{err}" 是数据里混进了空值导致的，已在 {fn} 之前加了过滤。',
    '{fn} 慢是因为逐条调用 Redis，改成 pipeline 之后快了大约 {n} 倍。',
    '{fn} 已经支持 DDP 多卡训练，单机 {n} 卡线性加速比还可以。',
    '看过了，{file} 里的 {fn} 实现没问题，离线和线上差异来自特征时效。',
  ],
  noise: [
    '排序模型的版本管理有点乱，之后统一一下。',
    '特征穿越的问题之前也出现过，大家注意一下。',
    'GPU 资源比较紧张，实验排队很久。',
    '显存经常不够用，batch 别开太大。',
    'AB 实验的报表能不能自动发到群里？',
    '召回那边的候选数量是不是可以再调一调？',
    '冷启动策略产品那边还在讨论。',
    '我忘了特征平台那边找谁对接了，回头问问。',
    '实时链路的 Kafka 积压告警最近很多。',
    '学习率这些超参回头统一记录一下。',
    '向量索引的参数还需要再压测。',
  ],
  testCmd: file => `pytest -q ${file.startsWith('tests/') ? file : 'tests/'}`,
  buildCmd: 'ruff check recsys && mypy recsys',
  logs: r => Array.from({ length: int(r, 8, 25) }, () => `[2026-11-${String(int(r, 10, 20)).padStart(2, '0')} ${String(int(r, 0, 23)).padStart(2, '0')}:${String(int(r, 0, 59)).padStart(2, '0')}] ${pick(r, ['INFO', 'INFO', 'WARN'])} epoch=${int(r, 1, 20)} step=${int(r, 100, 90000)} loss=${(r() * 0.4 + 0.3).toFixed(4)} auc=${(r() * 0.05 + 0.74).toFixed(4)} lr=${(r() * 3e-4).toExponential(2)}`).join('\n'),
  configs: [
    { path: 'configs/ranker_v3.yaml', text: r => `model:\n  name: dcn_v2\n  embedding_dim: ${pick(r, [16, 32, 64])}\n  cross_layers: 3\ntrain:\n  batch_size: 2048\n  epochs: ${int(r, 3, 10)}\n  optimizer: adam\nfeatures:\n  set: v3` },
    { path: 'configs/serving.yaml', text: r => `server:\n  port: 50051\n  workers: ${int(r, 4, 16)}\ncache:\n  redis: redis://rec-cache.internal:6379/1\n  ttl_seconds: ${int(r, 60, 600)}` },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv' }, callText: '看一下显卡占用。', output: `index, memory.used [MiB], utilization.gpu [%]\n0, ${int(r, 1000, 80000)} MiB, ${int(r, 0, 100)} %\n1, ${int(r, 1000, 80000)} MiB, ${int(r, 0, 100)} %` }),
    r => ({ tool: 'shell', args: { command: 'python -m recsys.eval.offline_auc --model latest' }, callText: '跑一下离线评估。', output: `全量 AUC: 0.7${int(r, 40, 79)}\n新用户 AUC: 0.7${int(r, 0, 39)}\n老用户 AUC: 0.7${int(r, 40, 79)}\nGAUC: 0.6${int(r, 50, 99)}` }),
  ],
  facts: [
    { key: 'gpu', at: 0.05, where: 'user', answer: '4 张 A100 80G', text: '提醒一下，训练集群只有 4 张 A100 80G，别一次提交太多实验，排队会很久。' },
    { key: 'model-v1', at: 0.08, where: 'tool', answer: 'ranker-2026.09.3', call: { tool: 'read_file', args: { path: 'deploy/ranker/values.yaml' }, text: '看一下线上部署配置。' }, text: 'image: registry.internal/recsys/ranker-serving:1.8.2\nreplicas: 6\nmodel_version: ranker-2026.09.3\nresources:\n  limits:\n    cpu: "8"\n    memory: 16Gi\nfeature_cache_ttl: 300' },
    { key: 'faiss', at: 0.15, where: 'assistant', answer: 'IVF4096,PQ32', text: '物品向量维度定为 128，索引用 faiss 的 IVF4096,PQ32，nprobe 设 64，召回率和延迟比较平衡。' },
    { key: 'airflow', at: 0.20, where: 'tool', answer: "recsys_daily_train.py:14:    schedule='0 3 * * *'", call: { tool: 'shell', args: { command: 'grep -n schedule dags/*.py' }, text: '查一下各个 DAG 的调度时间。' }, text: "dags/recsys_daily_train.py:14:    schedule='0 3 * * *',\ndags/recsys_feature_backfill.py:11:    schedule=None,\ndags/recsys_eval.py:9:    schedule='30 6 * * *'," },
    { key: 'path', at: 0.28, where: 'tool', answer: 'recsys/features/user_profile_builder.py', call: { tool: 'shell', args: { command: 'git grep -l build_user_profile' }, text: '找一下用户画像是在哪里构建的。' }, text: 'recsys/features/user_profile_builder.py\nrecsys/features/__init__.py\ntests/features/test_user_profile_builder.py' },
    { key: 'recall', at: 0.31, where: 'user', answer: '每一路最多取 800 个候选', text: '召回阶段每一路最多取 800 个候选，多路合并去重后截断到 2000 个再送精排。' },
    { key: 'feature-count', at: 0.35, where: 'tool', answer: '217 features', call: { tool: 'shell', args: { command: 'python -m recsys.features.describe --set v4' }, text: '看一下 v4 特征集。' }, text: 'feature set v4: 217 features (dense 143, sparse 74)\nnew in v4: user_ctr_7d, item_ctr_3d, cate_pref_30d, hour_of_day\nremoved: user_ctr_30d_raw\nstorage: feature-store://recsys/v4' },
    { key: 'leak', at: 0.40, where: 'assistant', answer: 'user_ctr_7d 的统计窗口', prompt: '新模型离线 AUC 涨了很多，但是线上没效果，帮忙排查一下。', text: '查到原因了：特征 user_ctr_7d 的统计窗口包含了样本当天的点击，相当于把标签泄漏进了训练数据，所以离线 AUC 虚高。已改为截止到前一天。' },
    { key: 'oom', at: 0.43, where: 'tool', answer: 'Tried to allocate 2.50 GiB', call: { tool: 'shell', args: { command: 'python train.py --config configs/ranker_v4.yaml' }, text: '用新配置开始训练。' }, text: 'epoch 1/8:  12%|█▏        | 1450/12000 [03:11<23:12,  7.58it/s]\nTraceback (most recent call last):\n  File "train.py", line 211, in <module>\n    main()\n  File "recsys/ranking/train.py", line 97, in train_epoch\n    loss.backward()\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.' },
    { key: 'dedupe', at: 0.53, where: 'assistant', answer: '布隆过滤器', text: '曝光去重用的是布隆过滤器，误判率 0.1%，每个用户只保留最近 3 天的曝光记录。' },
    { key: 'contact', at: 0.60, where: 'user', answer: '周明', text: '特征平台那边的接口人是周明（工号 A10423），字段变更要提前找他排期。' },
    { key: 'lr', at: 0.65, where: 'assistant', answer: '峰值学习率 3e-4', text: '学习率调度改成 warmup 2000 步后余弦衰减，峰值学习率 3e-4，batch size 4096，训练曲线稳定多了。' },
    { key: 'lag', at: 0.70, where: 'tool', answer: '614407', call: { tool: 'shell', args: { command: 'kafka-consumer-groups.sh --bootstrap-server kafka:9092 --describe --group recsys-realtime' }, text: '看一下实时消费组的积压。' }, text: 'GROUP            TOPIC             PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG\nrecsys-realtime  user_behavior     0          88123411        88731218        607807\nrecsys-realtime  user_behavior     1          88120087        88734494        614407\nrecsys-realtime  user_behavior     2          88131902        88753009        621107' },
    { key: 'cold', at: 0.77, where: 'user', answer: '注册 72 小时内', text: '新用户冷启动策略：注册 72 小时内先用热门榜兜底，之后再切换到个性化推荐。' },
    { key: 'model-v2', at: 0.85, where: 'assistant', answer: 'ranker-2026.11.1', text: '线上排序模型已经切到 ranker-2026.11.1，离线 AUC 0.781（旧版 0.772），灰度两天没有异常。' },
    { key: 'ab', at: 0.90, where: 'tool', answer: '+3.2%', call: { tool: 'shell', args: { command: 'python scripts/ab_report.py --exp rank_v4' }, text: '生成 AB 实验报告。' }, text: '实验: rank_v4 vs baseline（2026-11-12 ~ 2026-11-18）\n指标           | 对照组 | 实验组 | 相对变化 | p 值\n人均点击       | 4.12   | 4.25   | +3.2%    | 0.004\n人均时长(秒)   | 311    | 309    | -0.6%    | 0.41\n点击率         | 5.31%  | 5.47%  | +3.0%    | 0.006\n结论：点击显著提升，时长持平。' },
  ],
  questions: [
    { q: '现在线上用的排序模型是哪个版本', facts: ['model-v2'], cat: 'revised' },
    { q: '最新 ranker 版本', facts: ['model-v2'], cat: 'revised' },
    { q: '训练数据泄露是哪个特征导致的', facts: ['leak'], cat: 'paraphrase' },
    { q: 'user_ctr_7d leakage', facts: ['leak'], cat: 'mixed', lang: 'mixed' },
    { q: '训练用的显卡有几张', facts: ['gpu'], cat: 'paraphrase' },
    { q: 'CUDA out of memory', facts: ['oom'], cat: 'error' },
    { q: '训练时显存不够的报错', facts: ['oom'], cat: 'paraphrase' },
    { q: 'AB 实验人均点击提升了多少', facts: ['ab'], cat: 'number' },
    { q: '召回候选数量上限', facts: ['recall'], cat: 'keyword' },
    { q: 'IVF4096', facts: ['faiss'], cat: 'identifier' },
    { q: '向量索引用的什么类型', facts: ['faiss'], cat: 'question' },
    { q: '刚注册的用户推荐什么内容', facts: ['cold'], cat: 'paraphrase' },
    { q: '每天几点开始训练', facts: ['airflow'], cat: 'number' },
    { q: 'profile_builder', facts: ['path'], cat: 'identifier' },
    { q: 'recsys-realtime 消费组积压', facts: ['lag'], cat: 'keyword' },
    { q: '已经曝光过的内容怎么过滤掉', facts: ['dedupe'], cat: 'paraphrase' },
    { q: '特征平台找谁对接', facts: ['contact'], cat: 'paraphrase' },
    { q: '峰值学习率', facts: ['lr'], cat: 'exact' },
    { q: 'learning rate schedule warmup', facts: ['lr'], cat: 'mixed', lang: 'mixed' },
    { q: 'v4 特征集一共有多少个特征', facts: ['feature-count'], cat: 'number' },
  ],
}

// ---- project: vip mini program (Chinese, WeChat mini program with uni-app/Vue) ------------------------

const MINIPROGRAM: Project = {
  id: 'zh-miniprogram',
  language: 'zh',
  day: 15,
  files: ['src/pages/member/index.vue', 'src/pages/points/index.vue', 'src/pages/order/detail.vue', 'src/components/MemberCard.vue', 'src/store/user.js', 'src/api/request.js', 'src/utils/date.js', 'src/App.vue'],
  fns: ['fetchMemberInfo', 'refreshToken', 'formatDate', 'getPointsHistory', 'redeemCoupon', 'bindPhone', 'uploadAvatar', 'checkUpdate', 'trackPageView'],
  errors: ['request:fail timeout', "TypeError: Cannot read property 'length' of undefined", '[渲染层网络层错误] Failed to load local image resource', 'getPhoneNumber:fail no permission', 'MiniProgramError {"errMsg":"navigateTo:fail page not found"}', '[Vue warn]: Property "userInfo" was accessed during render but is not defined on instance.'],
  commits: ['feat(points): 积分明细分页', 'fix(member): 头像上传失败提示', 'chore: 升级 uni-app 到 3.0.0-4020', 'perf: 图片懒加载', 'fix(order): 订单详情金额格式化', 'feat(coupon): 领券中心', 'refactor(request): 统一错误码处理'],
  prompts: [
    '{file} 页面白屏了，帮忙看看。',
    '{fn} 调用太频繁了，加个防抖。',
    '真机上报 "{err}"，开发者工具里没问题，查一下。',
    '把 {fn} 抽到公共方法里。',
    '{file} 的样式在小屏手机上错位了。',
    '跑一下 {file} 的单测。',
    '{fn} 的返回结构改了，适配一下。',
    '评审一下 {file}，看看有没有内存泄漏。',
  ],
  answers: [
    '已修复：{file} 白屏是因为 {fn} 返回空数据时没有兜底，现在会显示空状态。',
    '{fn} 加了 300ms 防抖，{file} 里的重复请求没有了。',
    '"{err}" 是真机上网络权限的问题，已经在 {fn} 里加了重试和提示。',
    '{fn} 已经抽到 src/utils 里，{n} 个页面都改成了引用公共方法。',
    '小屏适配改好了，用 rpx 重新算了间距，{file} 在 iPhone SE 上显示正常。',
  ],
  noise: [
    '包体积又快超了，大家加依赖前先想想。',
    '登录相关的问题最近反馈挺多的。',
    '主题色那块设计还会再调，先别写死。',
    '测试环境和正式环境的配置别再搞混了。',
    '积分规则运营那边可能还要改。',
    '会员卡组件性能不太好，之后优化。',
    'iOS 上的兼容问题比较多，测试的时候多注意。',
    'CDN 缓存策略需要再确认一下。',
    'ESLint 报错太多了，找时间清一下。',
    '新版本的灰度比例还没定。',
    '我记不清正式环境接口域名是哪个了，先查一下再改。',
  ],
  testCmd: file => `npx vitest run ${file.replace('.vue', '.spec.js')}`,
  buildCmd: 'npm run build:mp-weixin -- --dry',
  logs: r => Array.from({ length: int(r, 8, 22) }, () => `[${pick(r, ['log', 'log', 'warn', 'error'])}] ${pick(r, ['页面加载', '请求完成', '接口返回', '用户点击', '跳转页面'])} ${pick(r, ['/pages/member/index', '/pages/points/index', '/pages/order/detail', '/pages/coupon/center'])} ${int(r, 20, 2000)}ms`).join('\n'),
  configs: [
    { path: 'src/pages.json', text: () => '{\n  "pages": [\n    { "path": "pages/member/index", "style": { "navigationBarTitleText": "会员中心" } },\n    { "path": "pages/points/index", "style": { "navigationBarTitleText": "我的积分" } }\n  ],\n  "subPackages": []\n}' },
    { path: 'src/config/env.dev.js', text: () => "export default {\n  baseURL: 'http://localhost:7001',\n  timeout: 10000,\n}" },
  ],
  extraTools: [
    r => ({ tool: 'shell', args: { command: 'npx eslint src/utils --ext .js' }, callText: '检查一下工具函数的 lint。', output: r() < 0.5 ? '✔ 0 problems' : `src/utils/${pick(r, ['date', 'format', 'storage'])}.js\n  ${int(r, 3, 90)}:${int(r, 1, 30)}  warning  Unexpected console statement  no-console` }),
  ],
  facts: [
    { key: 'appid', at: 0.04, where: 'tool', answer: 'wx8f3c2a1b9d7e6054', call: { tool: 'read_file', args: { path: 'project.config.json' }, text: '先看一下项目配置。' }, text: '{\n  "appid": "wx8f3c2a1b9d7e6054",\n  "projectname": "vip-center",\n  "compileType": "miniprogram",\n  "setting": {\n    "es6": true,\n    "minified": true,\n    "urlCheck": true\n  },\n  "libVersion": "3.6.4"\n}' },
    { key: 'theme', at: 0.07, where: 'user', answer: '#E4393C', text: '设计那边定了：主色改成 #E4393C，按钮圆角统一 8px，卡片阴影去掉。' },
    { key: 'api-test', at: 0.12, where: 'assistant', answer: 'https://api-test.vip.example.cn', text: '接口地址按环境区分：测试环境用 https://api-test.vip.example.cn，配置在 src/config/env.test.js。' },
    { key: 'pay', at: 0.22, where: 'user', answer: '下周过期', text: '支付回调地址统一用 /api/pay/notify；商户号 1611234567 的证书下周过期，记得更新。' },
    { key: 'size-v1', at: 0.33, where: 'tool', answer: '主包 2.31 MB', call: { tool: 'shell', args: { command: 'npm run build:mp-weixin' }, text: '打包看一下体积。' }, text: 'DONE  Build complete.\n运行方式：打开 微信开发者工具, 导入 dist/build/mp-weixin 运行。\n\n代码包大小检查：\n  主包 2.31 MB（限制 2 MB）✖ 超出限制\n  分包: 无\n请使用分包加载减小主包体积。' },
    { key: 'code-used', at: 0.38, where: 'tool', answer: '40163', call: { tool: 'shell', args: { command: 'kubectl -n vip logs deploy/vip-api --since=2h | grep jscode2session' }, text: '看一下登录接口的日志。' }, text: '2026-11-16 09:12:44 WARN  [auth] jscode2session failed: {"errcode":40163,"errmsg":"code been used, rid: 6724a1f3-0b2e4c61-29f1e0d8"}\n2026-11-16 09:12:45 WARN  [auth] login failed for openid=null, returning 401' },
    { key: 'code-fix', at: 0.40, where: 'assistant', answer: '同一个 code 被拿去换了两次', text: '登录失败的原因找到了：页面 onShow 里又调了一次 wx.login，同一个 code 被拿去换了两次 session_key，第二次就报 code been used。现在只在 App.onLaunch 里登录一次。' },
    { key: 'points', at: 0.47, where: 'user', answer: '积分有效期 24 个月', text: '积分规则确认了：每消费 1 元积 1 分，会员日双倍积分，积分有效期 24 个月，到期自动清零。' },
    { key: 'cdn', at: 0.52, where: 'assistant', answer: '图片缓存 30 天', text: '静态资源已经迁到腾讯云 COS，CDN 域名 static.vip-cdn.cn，图片缓存 30 天，JS/CSS 带 hash 缓存一年。' },
    { key: 'api-prod', at: 0.57, where: 'user', answer: 'https://api.vip.example.cn', text: '提醒：正式环境走 https://api.vip.example.cn，上次有人把测试地址打进了正式包，别再混了。' },
    { key: 'size-v2', at: 0.62, where: 'tool', answer: '主包 1.86 MB', call: { tool: 'shell', args: { command: 'npm run build:mp-weixin' }, text: '拆完分包再打包看看。' }, text: 'DONE  Build complete.\n\n代码包大小检查：\n  主包 1.86 MB（限制 2 MB）✔\n  分包 packageMember 0.74 MB ✔\n  分包 packageCoupon 0.41 MB ✔' },
    { key: 'lint', at: 0.66, where: 'tool', answer: "'couponList' is assigned a value but never used", call: { tool: 'shell', args: { command: 'npx eslint src --ext .vue,.js' }, text: '跑一下 lint。' }, text: "src/pages/coupon/list.vue\n  42:7  error  'couponList' is assigned a value but never used  no-unused-vars\n  88:3  warning  Unexpected console statement  no-console\n\nsrc/store/user.js\n  17:1  warning  Unexpected console statement  no-console\n\n✖ 3 problems (1 error, 2 warnings)" },
    { key: 'sentry', at: 0.70, where: 'tool', answer: "Cannot read property 'nickName' of undefined", call: { tool: 'shell', args: { command: 'sentry-cli issues list --project vip-miniprogram' }, text: '看一下线上报错。' }, text: "+-----------+-------------------------------------------------------------+--------+\n| Issue     | Title                                                       | Events |\n+-----------+-------------------------------------------------------------+--------+\n| VIP-MP-2K | TypeError: Cannot read property 'nickName' of undefined     | 312    |\n|           |   pages/member/index.js:88                                  |        |\n| VIP-MP-2H | request:fail timeout                                        | 95     |\n+-----------+-------------------------------------------------------------+--------+" },
    { key: 'vue-warn', at: 0.83, where: 'tool', answer: 'Maximum recursive updates exceeded', call: { tool: 'shell', args: { command: 'npm run dev:h5' }, text: '在 H5 下跑起来看看控制台。' }, text: '  App running at:\n  - Local:   http://localhost:5173/\n\n[Vue warn]: Maximum recursive updates exceeded in component <MemberCard>. This means you have a reactive effect that is mutating its own dependencies and thus recursively triggering itself.\n  at <MemberCard level=3 points=1280 >\n  at <Index>' },
    { key: 'ios', at: 0.87, where: 'user', answer: '显示 NaN', text: "iOS 上会员到期日期显示 NaN，安卓正常。应该是 new Date('2026-11-05 10:00') 这种带空格的格式 Safari 不认。" },
    { key: 'release', at: 0.93, where: 'assistant', answer: '先灰度 10% 用户', text: '3.4.0 版本已经提交审核，审核通过后先灰度 10% 用户，观察两天再全量。' },
  ],
  questions: [
    { q: '小程序 appid', facts: ['appid'], cat: 'keyword' },
    { q: 'wx8f3c', facts: ['appid'], cat: 'identifier' },
    { q: '为什么用户登录会失败', facts: ['code-fix', 'code-used'], cat: 'paraphrase' },
    { q: 'errcode 40163', facts: ['code-used'], cat: 'error' },
    { q: '按钮圆角多大', facts: ['theme'], cat: 'question' },
    { q: '主题色色值', facts: ['theme'], cat: 'paraphrase' },
    { q: '最新的主包大小', facts: ['size-v2'], cat: 'revised' },
    { q: '正式环境接口域名', facts: ['api-prod'], cat: 'distractor' },
    { q: '测试环境 api 地址', facts: ['api-test'], cat: 'distractor' },
    { q: '积分多久过期', facts: ['points'], cat: 'paraphrase' },
    { q: 'Maximum recursive updates exceeded', facts: ['vue-warn'], cat: 'error' },
    { q: 'MemberCard 组件无限刷新', facts: ['vue-warn'], cat: 'mixed', lang: 'mixed' },
    { q: 'iPhone 上日期显示不出来是什么原因', facts: ['ios'], cat: 'paraphrase' },
    { q: '静态资源 CDN 缓存多久', facts: ['cdn'], cat: 'question' },
    { q: 'coupon/list.vue', facts: ['lint'], cat: 'identifier' },
    { q: 'couponList 未使用', facts: ['lint'], cat: 'mixed', lang: 'mixed' },
    { q: '3.4.0 灰度比例', facts: ['release'], cat: 'keyword' },
    { q: 'nickName of undefined', facts: ['sentry'], cat: 'error' },
    { q: '商户证书什么时候过期', facts: ['pay'], cat: 'question' },
    { q: '支付回调路径', facts: ['pay'], cat: 'keyword' },
    { q: '会员日双倍积分', facts: ['points'], cat: 'exact' },
  ],
}

const PROJECTS: readonly Project[] = [LEDGER, STREAMLINE, STOREFRONT, INVENTORY, RECSYS, MINIPROGRAM]

/** A background turn: messages of one filler turn (a request, tool steps, an answer). */
export interface FillerMessage {
  readonly role: 'user' | 'assistant' | 'tool'
  readonly text: string
  readonly toolName?: string
}

/**
 * More filler turns of a session's project, from a stream of their own (the session itself is
 * unchanged): the same topics, files, functions and errors, without the planted facts or the
 * once-said topic lines. For bench:quality's many-match slice.
 */
export function fillerTurns(sessionId: string, seed: number, count: number): FillerMessage[][] {
  const project = PROJECTS.find(candidate => `quality-${candidate.id}` === sessionId)
  if (project === undefined) throw new Error(`no project for session ${sessionId}`)
  const r = mulberry32(seed)
  unusedNoise.set(project, [])
  return Array.from({ length: count }, () => fillerTurn(r, project).map(draft => ({ role: draft.role as FillerMessage['role'], text: draft.text, ...(draft.toolName === undefined ? {} : { toolName: draft.toolName }) })))
}

/** The whole labeled set; the same seed always gives the same sessions and labels. */
export function qualitySet(seed = 20261101): QualitySet {
  const sessions: QualitySession[] = []
  const questions: QualityQuestion[] = []
  PROJECTS.forEach((project, index) => {
    const built = buildSession(project, seed + index * 7919)
    sessions.push(built.session)
    questions.push(...built.questions)
  })
  return { sessions, questions }
}
