/**
 * Fact families for generated agent sessions: how a fact enters the conversation (the user's words,
 * a tool output, an edit, the assistant's answer), how it may change, how a later turn needs it,
 * and how a model would search for it. Values are drawn from the seed, so sessions differ.
 */
import { pick } from '../scenario.ts'
import type { AgentCall, NeedKind } from './schema.ts'

/** Something that happens in one turn because of a fact. */
export interface FactEvent {
  readonly turn: number
  /** Appended to the turn's prompt. */
  readonly prompt?: string
  /** An extra tool step in the turn (its text is the model's reasoning before the call). */
  readonly step?: { readonly text: string; readonly call: AgentCall }
  /** Appended to the turn's final answer. */
  readonly answer?: string
}

export interface FactPlan {
  readonly kind: NeedKind
  readonly important: boolean
  readonly fact: string
  readonly query: string
  /** Appended to the prompt of the turn that needs the fact (never contains it). */
  readonly ask: string
  readonly events: readonly FactEvent[]
  readonly rerun?: AgentCall
}

export interface FactTurns {
  readonly origin: number
  /** A later turn where the value changes (changed-value and file-content families). */
  readonly update: number
  readonly zh: boolean
  /** Distinguishes facts of the same family in one session. */
  readonly serial: number
}

type Random = () => number

const int = (random: Random, low: number, high: number): number => low + Math.floor(random() * (high - low + 1))
const hex = (random: Random, length: number): string => Array.from({ length }, () => '0123456789abcdef'[Math.floor(random() * 16)]).join('')

const SERVICES = ['billing', 'ledger', 'checkout', 'notifier', 'search', 'gateway', 'inventory', 'reports']
const SERVICES_ZH = ['计费', '账本', '结算', '通知', '搜索', '网关', '库存', '报表']
const PEOPLE_ZH = ['林晓峰', '王雨桐', '陈思远', '赵一鸣', '周可欣', '孙浩然']
const TASKS = [
  'rotate the webhook secret for the {svc}-eu tenant',
  'backfill the missing invoice rows for {svc} since 2026-10-03',
  'delete the feature flag {svc}_legacy_path after the canary',
  'add an alert when {svc} queue depth exceeds 5000',
  'document the {svc} rollback runbook in docs/runbooks/{svc}.md',
  'pin the {svc} base image to node:22.19-alpine',
]
const TASKS_ZH = [
  '给{svc}服务的欧洲租户轮换回调密钥',
  '补齐{svc}服务自十月三日以来缺失的账单记录',
  '灰度结束后删除{svc}的旧路径开关',
  '为{svc}队列积压超过五千条增加告警',
  '把{svc}的回滚手册写进运维文档',
]
const LIMITS = ['RETRY_LIMIT', 'MAX_BATCH_SIZE', 'POOL_SIZE', 'RATE_LIMIT_RPS', 'LOCK_TTL_SECONDS']

function configFile(random: Random, name: string, value: number, serial: number): string {
  const lines = [
    `// src/config/limits${serial}.ts — tuned limits, reviewed by the platform team`,
    `export const REQUEST_TIMEOUT_MS = ${int(random, 10, 60) * 500}`,
    `export const ${name} = ${value}`,
    `export const HEALTHCHECK_INTERVAL_S = ${int(random, 5, 30)}`,
    `export const FEATURE_FLAGS = ['orders-v2', 'refund-async']`,
  ]
  return lines.join('\n')
}

/** A decision the user states once; later work must follow it. Not re-runnable. */
function decision(random: Random, t: FactTurns): FactPlan {
  const port = int(random, 5401, 5499)
  const svc = pick(random, t.zh ? SERVICES_ZH : SERVICES)
  if (t.zh) {
    const fact = `${svc}的预发数据库统一使用端口 ${port}`
    return {
      kind: 'decision', important: true, fact,
      query: `${svc} 预发数据库 端口 决定`,
      ask: `请按我们之前定好的端口更新${svc}的预发数据库配置。`,
      events: [{ turn: t.origin, prompt: `另外我们决定：${fact}。` }],
    }
  }
  const fact = `the ${svc} staging database moves to port ${port}`
  return {
    kind: 'decision', important: true, fact,
    query: `${svc} staging database port we decided`,
    ask: `Update the ${svc} staging connection string to the port we agreed on earlier.`,
    events: [{ turn: t.origin, prompt: `Also, we decided: ${fact}.` }],
  }
}

/** A value that only appeared in a one-off command's output (re-running would act again). */
function deployValue(random: Random, t: FactTurns): FactPlan {
  const svc = pick(random, SERVICES)
  const id = `dep-${hex(random, 8)}`
  const fact = `release ${id} promoted to canary`
  const command = `./scripts/deploy.sh ${svc} --canary --serial ${t.serial}`
  const output = [`$ ${command}`, `building ${svc}@${hex(random, 7)} …`, `pushing image registry.internal/${svc}:${hex(random, 12)}`, `health checks: 3/3 passed`, `${svc}: ${fact}`, 'done in 84.2s'].join('\n')
  return {
    kind: 'tool-value', important: true, fact,
    query: t.zh ? `${svc} 灰度发布 release id` : `${svc} canary release id from the deploy`,
    ask: t.zh ? `把刚才${svc}灰度发布的 release 编号写进变更单。` : `Put the ${svc} canary release id from the deploy into the change ticket.`,
    events: [{ turn: t.origin, step: { text: t.zh ? `开始${svc}灰度发布。` : `Deploying ${svc} to canary.`, call: { name: 'shell', args: { command }, output } } }],
  }
}

/** A number buried in a long log line of a benchmark run; re-running gives the same report file. */
function measuredValue(random: Random, t: FactTurns): FactPlan {
  const svc = pick(random, SERVICES)
  const p95 = int(random, 120, 980)
  const fact = `p95=${p95}ms`
  const command = `cat reports/load-${svc}-${t.serial}.txt`
  const rows = Array.from({ length: 14 }, (_, index) => `${svc} route=/v1/${pick(random, ['orders', 'users', 'invoices', 'refunds'])}/${index} rps=${int(random, 80, 900)} p50=${int(random, 20, 110)}ms p99=${int(random, 1000, 3000)}ms errors=${int(random, 0, 9)}`)
  rows.splice(int(random, 3, 10), 0, `${svc} route=/v1/checkout/summary rps=${int(random, 80, 900)} ${fact} errors=0`)
  return {
    kind: 'tool-value', important: false, fact,
    query: t.zh ? `${svc} checkout summary 路由 p95 延迟` : `${svc} load test p95 latency of the checkout summary route`,
    ask: t.zh ? `对比一下${svc}压测里 checkout summary 路由的 p95 和目标值。` : `Compare the ${svc} load-test p95 of the checkout summary route against our 500ms target.`,
    events: [{ turn: t.origin, step: { text: t.zh ? '看一下压测报告。' : 'Reading the load-test report.', call: { name: 'shell', args: { command }, output: `$ ${command}\n${rows.join('\n')}` } } }],
    rerun: { name: 'shell', args: { command }, output: `$ ${command}\n${rows.join('\n')}` },
  }
}

/** A path a generator printed; listing the directory shows it again. */
function generatedPath(random: Random, t: FactTurns): FactPlan {
  const name = pick(random, ['add_refund_state', 'split_ledger_entries', 'orders_idx_created', 'drop_legacy_tokens', 'user_locale'])
  const file = `db/migrations/2026110${int(random, 1, 9)}${int(random, 10, 23)}${int(random, 10, 59)}_${name}_${t.serial}.sql`
  const command = `npm run db:new-migration -- ${name}_${t.serial}`
  const listing = (extra: string): string => [`$ ls db/migrations`, '20261001090000_init.sql', '20261015113000_orders.sql', extra, ''].join('\n')
  return {
    kind: 'identifier', important: true, fact: file,
    query: t.zh ? `${name} 迁移文件 路径` : `path of the new ${name} migration file`,
    ask: t.zh ? `在刚生成的 ${name} 迁移文件里补上回滚语句。` : `Add the down migration to the ${name} migration file we generated.`,
    events: [{ turn: t.origin, step: { text: t.zh ? '生成迁移文件。' : 'Generating the migration.', call: { name: 'shell', args: { command }, output: `$ ${command}\ncreated ${file}\n` } } }],
    rerun: { name: 'shell', args: { command: 'ls db/migrations' }, output: listing(file.slice('db/migrations/'.length)) },
  }
}

/** The current content of a file the agent edited; reading the file again shows it. */
function fileContent(random: Random, t: FactTurns): FactPlan {
  const name = pick(random, LIMITS)
  const path = `src/config/limits${t.serial}.ts`
  const before = int(random, 2, 5)
  const after = int(random, 7, 9) * 11
  const fact = `export const ${name} = ${after}`
  const old = configFile(random, name, before, t.serial)
  const current = old.replace(`export const ${name} = ${before}`, fact)
  return {
    kind: 'file-content', important: false, fact,
    query: t.zh ? `${path} 中 ${name} 当前的值` : `current value of ${name} in ${path}`,
    ask: t.zh ? `根据 ${path} 里 ${name} 现在的值调整压测并发。` : `Size the load test from the current ${name} in ${path}.`,
    events: [
      { turn: t.origin, step: { text: t.zh ? `读取 ${path}。` : `Reading ${path}.`, call: { name: 'read_file', args: { path }, output: old } } },
      { turn: t.update, step: { text: t.zh ? `修改 ${name}。` : `Raising ${name}.`, call: { name: 'write_file', args: { path, content: current }, output: `wrote ${path} (1 line changed)` } } },
    ],
    rerun: { name: 'read_file', args: { path }, output: current },
  }
}

/** Open items the user listed; one is done later, another is still open when needed. */
function openItem(random: Random, t: FactTurns): FactPlan {
  const svc = pick(random, t.zh ? SERVICES_ZH : SERVICES)
  const tasks = (t.zh ? TASKS_ZH : TASKS).toSorted(() => random() - 0.5).slice(0, 3).map(task => task.replaceAll('{svc}', svc))
  const [done, open, other] = tasks as [string, string, string]
  if (t.zh) {
    return {
      kind: 'open-item', important: true, fact: open,
      query: `${svc} 上线前 待办事项`,
      ask: `${svc}上线前还剩哪些待办？挑一个还没做的开始做。`,
      events: [
        { turn: t.origin, prompt: `${svc}上线前的待办：一、${done}；二、${open}；三、${other}。` },
        { turn: t.update, prompt: `待办里"${done}"已经完成了。` },
      ],
    }
  }
  return {
    kind: 'open-item', important: true, fact: open,
    query: `${svc} open items before the release`,
    ask: `What is still open for the ${svc} release? Start on one item that is not done yet.`,
    events: [
      { turn: t.origin, prompt: `Before the ${svc} release the open items are: (1) ${done}; (2) ${open}; (3) ${other}.` },
      { turn: t.update, prompt: `Item "${done}" is done now.` },
    ],
  }
}

/** A setting stated, then changed; only the newest value is right. */
function changedValue(random: Random, t: FactTurns): FactPlan {
  const svc = pick(random, t.zh ? SERVICES_ZH : SERVICES)
  const first = int(random, 2, 6) * 1000
  const second = int(random, 7, 19) * 1000 + 500
  if (t.zh) {
    const fact = `${svc}的请求超时改为 ${second} 毫秒`
    return {
      kind: 'changed-value', important: true, fact,
      query: `${svc} 请求超时 毫秒`,
      ask: `按照最新定下的${svc}请求超时配置一下客户端。`,
      events: [
        { turn: t.origin, prompt: `${svc}的请求超时先设为 ${first} 毫秒。` },
        { turn: t.update, prompt: `更正：${fact}。` },
      ],
    }
  }
  const fact = `${svc} request timeout is now ${second} ms`
  return {
    kind: 'changed-value', important: true, fact,
    query: `${svc} request timeout setting`,
    ask: `Configure the ${svc} client with the request timeout we settled on.`,
    events: [
      { turn: t.origin, prompt: `Set the ${svc} request timeout to ${first} ms for now.` },
      { turn: t.update, prompt: `Correction: the ${fact}.` },
    ],
  }
}

/** A decision the assistant records in its answer (an owner, a naming rule). */
function assistantDecision(random: Random, t: FactTurns): FactPlan {
  if (t.zh) {
    const svc = pick(random, SERVICES_ZH)
    const fact = `${svc}模块的负责人是${pick(random, PEOPLE_ZH)}`
    return {
      kind: 'decision', important: true, fact,
      query: `${svc}模块 负责人`,
      ask: `把这个改动的评审请求发给${svc}模块的负责人。`,
      events: [{ turn: t.origin, answer: `另外记录一下：${fact}。` }],
    }
  }
  const header = `X-${pick(random, ['Trace', 'Request', 'Tenant', 'Idempotency'])}-${pick(random, ['Id', 'Key', 'Token'])}`
  const helper = pick(random, ['withRetry', 'httpClient', 'queuePublisher', 'grpcChannel'])
  const fact = `propagate the ${header} header through ${helper}`
  return {
    kind: 'decision', important: true, fact,
    query: `which header we decided to propagate through ${helper}`,
    ask: `Write the ${helper} test for the header propagation we decided on.`,
    events: [{ turn: t.origin, answer: `Decision recorded: ${fact}.` }],
  }
}

/** One line of a log dump; the logs rotate, so the command cannot show it again. */
function logDetail(random: Random, t: FactTurns): FactPlan {
  const svc = pick(random, SERVICES)
  const fact = `request_id=req-${hex(random, 10)}`
  const command = `kubectl logs deploy/${svc} --since 15m # ${t.serial}`
  const lines = Array.from({ length: 40 }, (_, index) => `2026-11-0${1 + (index % 9)}T10:${String(index).padStart(2, '0')}:07Z INFO ${svc} GET /v1/orders/${int(random, 1000, 9999)} 200 ${int(random, 5, 90)}ms`)
  lines.splice(int(random, 10, 30), 0, `2026-11-03T10:21:44Z ERROR ${svc} upstream payments-eu timed out after 30000ms ${fact}`)
  return {
    kind: 'tool-value', important: false, fact,
    query: t.zh ? `${svc} 日志里 payments-eu 超时的请求编号` : `request id of the ${svc} payments-eu upstream timeout in the logs`,
    ask: t.zh ? `用日志里那次 payments-eu 超时的请求编号去查${svc}的链路追踪。` : `Look up the ${svc} trace for the request that timed out against payments-eu in those logs.`,
    events: [{ turn: t.origin, step: { text: t.zh ? '看一下最近的日志。' : 'Pulling the recent logs.', call: { name: 'shell', args: { command }, output: lines.join('\n') } } }],
  }
}

export const FACT_FAMILIES: ReadonlyArray<(random: Random, turns: FactTurns) => FactPlan> = [
  decision, deployValue, measuredValue, generatedPath, fileContent, openItem, changedValue, assistantDecision, logDetail,
]
