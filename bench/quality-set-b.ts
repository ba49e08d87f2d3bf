/**
 * The held-out test set of bench:quality: a second generator, written separately from the first
 * (bench/quality-set.ts, the dev set ranking was tuned on) with its own projects, vocabulary and
 * session shapes — three-day sessions, long tool outputs with the answer deep inside, values
 * changed later (often as a bare reply to a question, sometimes in the other language), the same
 * topic on different days, questions that need two facts, and questions about things never said.
 *
 * Never tuned on: ranking changes are judged on the dev set; this set is only reported.
 */
import type { ShadowMessageInput } from '@dsh-shadow/store'
import type { FillerMessage } from './quality-set.ts'

// 'same-language': control questions of the cross-lingual slice (bench/quality-set-x.ts)
export type TestCategory = 'exact' | 'tool-output' | 'zh' | 'cross-lingual' | 'temporal' | 'superseded' | 'multi-hop' | 'never-said' | 'same-language'

export interface TestQuestion {
  readonly id: string
  readonly sessionId: string
  readonly query: string
  readonly category: TestCategory
  /** When the question is asked (time words resolve against it). */
  readonly askedAt: number
  /** Relevant seqs; empty for never-said. */
  readonly relevant: readonly number[]
  /** `all`: every relevant message must be in the top k (multi-hop); `any` otherwise. */
  readonly need: 'any' | 'all'
  /** For superseded values: the seqs of older statements (the newest must rank above them). */
  readonly older?: readonly number[]
}

export interface TestSession {
  readonly sessionId: string
  readonly messages: readonly ShadowMessageInput[]
  /** Names its never-said questions ask about: no message of the session holds them. */
  readonly absent?: readonly string[]
}

type Rng = () => number

function rng(seed: number): Rng {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state ^ (state >>> 16), 2_246_822_507) + 0x9e3779b9) >>> 0
    state = Math.imul(state ^ (state >>> 13), 3_266_489_909) >>> 0
    return ((state ^ (state >>> 16)) >>> 0) / 4_294_967_296
  }
}

const pick = <T>(r: Rng, items: readonly T[]): T => items[Math.floor(r() * items.length)]!
const between = (r: Rng, low: number, high: number): number => low + Math.floor(r() * (high - low + 1))

interface Vocabulary {
  readonly id: string
  readonly zh: boolean
  readonly files: readonly string[]
  readonly services: readonly string[]
  readonly asks: readonly string[]
  readonly replies: readonly string[]
  readonly commands: readonly string[]
  readonly logLine: (r: Rng) => string
  /** A setting, its values over time, and how the model asks about it. */
  readonly setting: { readonly name: string; readonly unit: string; readonly values: readonly [number, number, number]; readonly now: string; readonly later: string }
  /** Same topic, two days: what was said each day. */
  readonly topic: { readonly name: string; readonly day1: string; readonly day2: string; readonly question: string }
  readonly exact: { readonly text: string; readonly query: string }
  readonly deep: { readonly line: string; readonly query: string }
  readonly hop: { readonly first: string; readonly second: string; readonly query: string }
  readonly plain: { readonly text: string; readonly query: string }
  readonly cross?: { readonly text: string; readonly query: string }
  readonly never: readonly string[]
}

const TELEMETRY: Vocabulary = {
  id: 'telemetry',
  zh: false,
  files: ['crates/ingest/src/router.rs', 'crates/ingest/src/decode.rs', 'crates/store/src/shard.rs', 'deploy/helm/values.yaml', 'crates/query/src/plan.rs'],
  services: ['ingest', 'compactor', 'query-frontend', 'alertmanager-bridge'],
  asks: ['Look at {file} and tell me why the borrow checker complains.', 'Can you make {file} compile on stable again?', 'Profile the hot path in {file}.', 'The {service} pods restarted overnight, check it.', 'Tidy up the error handling in {file}.'],
  replies: ['Done: {file} now uses a bounded channel and clippy is quiet.', 'I split the decoder in {file}; cargo test passes.', 'The {service} restarts were OOM kills during a compaction burst; I capped the batch.', 'Replaced the unwraps in {file} with typed errors.', 'The flamegraph shows most time in hashing; switched {file} to ahash.'],
  commands: ['cargo test -p ingest', 'cargo clippy --all-targets', 'kubectl -n telemetry get pods', 'cargo bench -p store'],
  logLine: r => `${new Date(Date.UTC(2026, 4, 4, between(r, 0, 23), between(r, 0, 59), between(r, 0, 59))).toISOString()} INFO ingest::router: accepted batch tenant=t${between(r, 100, 999)} points=${between(r, 100, 9000)} lag_ms=${between(r, 1, 400)}`,
  setting: { name: 'flush_interval_ms', unit: 'ms', values: [500, 250, 750], now: 'What is flush_interval_ms set to now?', later: 'Should flush_interval_ms stay at {old}, or do you want a different value?' },
  topic: { name: 'retention', day1: 'For raw samples, keep retention at 14 days; downsampled rollups can live for a year.', day2: 'Change of plan on retention: raw samples now 30 days because the SLO reviews look a month back.', question: 'what did we decide yesterday about retention' },
  exact: { text: 'The panic is `index out of bounds: the len is 0 but the index is 0` in ShardMap::rebalance when a node leaves.', query: 'ShardMap::rebalance' },
  deep: { line: 'ERROR ingest::router: rejected batch tenant=t4711 reason=cardinality_limit series=2500117', query: 'which tenant hit the cardinality limit' },
  hop: { first: 'The nightly downsampler job writes its rollups into the table metrics_5m.', second: 'metrics_5m is owned by the capacity-planning team; page Jonas Weber before changing it.', query: 'Who owns the table the nightly downsampler writes to?' },
  plain: { text: 'We agreed to gate the new query planner behind the feature flag planner_v2 until the benchmarks settle.', query: 'which feature flag gates the new query planner' },
  never: ['Terraform state locking', 'GraphQL federation', 'Kafka consumer lag', 'Redis sentinel failover'],
}

const MOBILE: Vocabulary = {
  id: 'mobile',
  zh: false,
  files: ['app/src/main/java/com/acme/billing/InvoiceViewModel.kt', 'app/src/main/java/com/acme/billing/PaymentSheet.kt', 'api/routes/invoices.ts', 'api/db/schema.prisma', 'app/build.gradle.kts'],
  services: ['invoice-api', 'push-gateway', 'receipt-renderer'],
  asks: ['Why does {file} leak the activity?', 'Add a unit test for {file}.', 'The {service} returns 502 sometimes, look into it.', 'Can you shrink the APK? Start with {file}.', 'Migrate {file} to coroutines.'],
  replies: ['Fixed: {file} no longer holds the context; LeakCanary is clean.', 'Added the tests for {file}; they run in 3 seconds.', 'The {service} 502s came from a cold start; I raised the min instances.', 'R8 full mode plus removing an unused SDK from {file} saved 4 MB.', '{file} now uses viewModelScope; the callbacks are gone.'],
  commands: ['./gradlew testDebugUnitTest', 'npm run test --workspace api', './gradlew assembleRelease', 'adb logcat -d'],
  logLine: r => `${between(r, 10, 12)}-0${between(r, 1, 9)} 12:${between(r, 10, 59)}:${between(r, 10, 59)}.${between(r, 100, 999)}  ${between(r, 1000, 9999)}  ${between(r, 1000, 9999)} I Billing: sheet shown invoice=INV-${between(r, 10000, 99999)} amount=${between(r, 1, 900)}.00`,
  setting: { name: 'INVOICE_PAGE_SIZE', unit: '', values: [25, 50, 40], now: 'What is INVOICE_PAGE_SIZE currently?', later: 'Keep INVOICE_PAGE_SIZE at {old} or change it?' },
  topic: { name: 'offline mode', day1: 'Offline mode: cache the last 20 invoices on the device and show a banner when stale.', day2: 'Offline mode update: we drop the on-device cache entirely and only show the banner, legal does not want invoices stored on phones.', question: 'what did we decide yesterday about offline mode' },
  exact: { text: 'Crash on resume: java.lang.IllegalStateException: Fragment PaymentSheetFragment not attached to a context.', query: 'PaymentSheetFragment not attached' },
  deep: { line: 'E Billing: charge failed invoice=INV-77313 code=card_declined decline_code=insufficient_funds', query: 'which invoice failed with insufficient_funds' },
  hop: { first: 'Receipts are rendered by the receipt-renderer service from the template receipt_v3.mustache.', second: 'receipt_v3.mustache was written by Amara Okafor; she owns any change to the layout.', query: 'Who owns the template the receipt-renderer uses?' },
  plain: { text: 'Decision: refunds over 500 EUR need a second approver in the admin app.', query: 'when do refunds need a second approver' },
  never: ['Terraform state locking', 'Elasticsearch shard allocation', 'gRPC deadline propagation', 'Kubernetes HPA thresholds'],
}

const WAREHOUSE: Vocabulary = {
  id: 'warehouse',
  zh: false,
  files: ['models/marts/fct_orders.sql', 'models/staging/stg_payments.sql', 'macros/incremental_window.sql', 'dbt_project.yml', 'tests/assert_revenue_positive.sql'],
  services: ['airflow', 'snowflake', 'fivetran'],
  asks: ['Why is {file} so slow in CI?', 'Add a not_null test to {file}.', 'The {service} sync is late again, check it.', 'Refactor {file} into smaller CTEs.', 'Document the columns of {file}.'],
  replies: ['{file} now prunes partitions; the model builds in 40 seconds.', 'Added the tests to {file}; dbt test is green.', 'The {service} delay was a quota issue upstream; it caught up.', 'Split {file} into three CTEs; the lineage graph is clearer.', 'Documented {file}; dbt docs generate shows every column.'],
  commands: ['dbt build --select fct_orders+', 'dbt test --select staging', 'airflow dags list-runs -d nightly_elt', 'snowsql -q "show warehouses"'],
  logLine: r => `${between(r, 10, 23)}:${between(r, 10, 59)}:${between(r, 10, 59)}  ${between(r, 1, 99)} of 140 OK created sql incremental model analytics.model_${between(r, 100, 999)} ........ [SUCCESS ${between(r, 1, 900)} in ${between(r, 1, 60)}.${between(r, 10, 99)}s]`,
  setting: { name: 'lookback_days', unit: 'days', values: [3, 7, 5], now: 'What lookback_days do we use for the incremental models?', later: 'Is lookback_days={old} still right, or should I change it?' },
  topic: { name: 'late-arriving payments', day1: 'Late-arriving payments: we reprocess them in the nightly run only.', day2: 'New rule for late-arriving payments: a separate hourly backfill model picks them up, the nightly run no longer does.', question: 'what did we decide yesterday about late-arriving payments' },
  exact: { text: 'The failure is `Numeric value \'N/A\' is not recognized` in stg_payments at column amount_eur.', query: 'amount_eur' },
  deep: { line: '87 of 140 ERROR creating sql incremental model analytics.fct_refunds ........ [ERROR in 12.40s] Database Error: division by zero', query: 'which model failed with division by zero' },
  hop: { first: 'The revenue dashboard reads from the model fct_orders_daily.', second: 'fct_orders_daily is maintained by Li Wei from finance analytics.', query: 'Who maintains the model behind the revenue dashboard?' },
  plain: { text: 'We settled on Snowflake warehouse size MEDIUM for the nightly run; XLARGE only for month end.', query: 'what warehouse size does the nightly run use' },
  never: ['Terraform state locking', 'React Server Components', 'Redis sentinel failover', 'WebSocket reconnect backoff'],
}

const GATEWAY: Vocabulary = {
  id: 'gateway',
  zh: true,
  files: ['gateway/src/main/java/cn/acme/pay/RouteFilter.java', 'gateway/src/main/resources/application.yml', 'risk/src/main/java/cn/acme/risk/RuleEngine.java', 'deploy/k8s/gateway.yaml'],
  services: ['支付网关', '风控服务', '对账服务'],
  asks: ['看一下 {file} 为什么启动这么慢。', '给 {file} 补一个单元测试。', '{service} 昨晚有告警，帮我查一下原因。', '把 {file} 里的硬编码配置挪到配置中心。', '{file} 的日志太多了，精简一下。'],
  replies: ['{file} 启动慢是因为扫描了整个包，已经缩小了扫描范围。', '测试补好了，{file} 覆盖率到了 85%。', '{service} 的告警是下游超时引起的，已经加了熔断。', '配置已经挪走了，{file} 里不再有硬编码地址。', '日志精简完了，{file} 只保留错误和关键路径。'],
  commands: ['mvn -q test -pl gateway', 'kubectl -n pay logs deploy/gateway --tail=200', 'mvn -q verify', 'curl -s localhost:8080/actuator/health'],
  logLine: r => `2026-05-0${between(r, 4, 6)} ${between(r, 10, 23)}:${between(r, 10, 59)}:${between(r, 10, 59)}.${between(r, 100, 999)} INFO  [http-nio-8080-exec-${between(r, 1, 64)}] c.a.p.RouteFilter - 路由成功 merchant=M${between(r, 10000, 99999)} cost=${between(r, 2, 300)}ms`,
  setting: { name: 'order-db 连接池大小', unit: '', values: [20, 40, 30], now: '现在 order-db 连接池大小是多少？', later: 'order-db 连接池大小还保持 {old} 吗？' },
  topic: { name: '退款审核', day1: '退款审核：金额超过 1000 元的退款需要人工审核。', day2: '退款审核规则改了：超过 500 元就要人工审核，而且要两个人签字。', question: '昨天关于退款审核是怎么定的' },
  exact: { text: '线上报错 java.lang.NullPointerException: merchantConfig is null，出现在 RouteFilter.doFilter 第 88 行。', query: 'merchantConfig is null' },
  deep: { line: '2026-05-05 03:12:44.901 ERROR [http-nio-8080-exec-17] c.a.p.RouteFilter - 路由失败 merchant=M42424 原因=证书过期', query: '哪个商户因为证书过期路由失败' },
  hop: { first: '对账文件由对账服务每天凌晨生成，存放在 bucket recon-daily 里。', second: 'recon-daily 这个 bucket 归数据平台组的陈静管理，改权限要找她。', query: '对账文件存放的 bucket 归谁管理' },
  plain: { text: '我们决定风控规则的灰度比例先放到 10%，观察一周再全量。', query: '风控规则灰度比例是多少' },
  cross: { text: 'RuleEngine 的缓存命中率只有 62%，因为规则版本号每次发布都会变。', query: 'why is the RuleEngine cache hit rate low' },
  never: ['Terraform 状态锁', 'GraphQL 联邦', 'Flutter 热重载', 'Kafka 消费延迟'],
}

const LOGS: Vocabulary = {
  id: 'logs',
  zh: true,
  files: ['collector/pipeline.go', 'collector/parser/nginx.go', 'indexer/bulk.go', 'charts/logs/values.yaml'],
  services: ['采集器', '索引服务', '查询网关'],
  asks: ['{file} 的解析规则对不上新的日志格式，改一下。', '给 {file} 加上指标上报。', '{service} 内存一直涨，查一下。', '{file} 里的重试逻辑有问题，看看。', '把 {file} 的配置项写进文档。'],
  replies: ['{file} 的正则已经更新，新格式能解析了。', '指标加好了，{file} 现在上报吞吐和延迟。', '{service} 内存上涨是缓冲区没释放，已经修复。', '{file} 的重试改成了指数退避，最多五次。', '文档写好了，{file} 的每个配置项都有说明。'],
  commands: ['go test ./collector/...', 'kubectl -n logs top pods', 'go vet ./...', 'curl -s localhost:9200/_cat/indices'],
  logLine: r => `{"ts":"2026-05-0${between(r, 4, 6)}T${between(r, 10, 23)}:${between(r, 10, 59)}:00Z","level":"info","msg":"批量写入完成","index":"logs-${between(r, 1, 30)}","docs":${between(r, 100, 5000)},"took_ms":${between(r, 5, 900)}}`,
  setting: { name: '批量写入大小', unit: '条', values: [500, 2000, 1000], now: '批量写入大小现在是多少条', later: '批量写入大小还用 {old} 条吗？' },
  topic: { name: '索引生命周期', day1: '索引生命周期：热数据保留 7 天，之后转到温节点。', day2: '索引生命周期调整：热数据只保留 3 天，温节点保留 30 天后删除。', question: '昨天索引生命周期是怎么定的' },
  exact: { text: '报错信息是 mapper_parsing_exception: failed to parse field [status] of type [long]。', query: 'mapper_parsing_exception' },
  deep: { line: '{"ts":"2026-05-05T04:40:00Z","level":"error","msg":"批量写入失败","index":"logs-audit","reason":"磁盘水位超过阈值"}', query: '哪个索引因为磁盘水位批量写入失败' },
  hop: { first: '审计日志都写到 logs-audit 这个索引。', second: 'logs-audit 索引由安全组的王磊负责，删数据前要他同意。', query: '审计日志写入的索引由谁负责' },
  plain: { text: '决定了：查询网关的单次查询时间范围上限是 24 小时。', query: '单次查询时间范围上限' },
  cross: { text: 'indexer 的 bulk 请求超时设成了 30 秒，因为大批量在高峰期会排队。', query: 'what is the indexer bulk request timeout' },
  never: ['Terraform 状态锁', 'React 服务端组件', 'Redis 哨兵切换', 'Flutter 热重载'],
}

const PROJECTS: readonly Vocabulary[] = [TELEMETRY, MOBILE, WAREHOUSE, GATEWAY, LOGS]

const DAY = 86_400_000

interface Draft { readonly role: 'user' | 'assistant' | 'tool'; readonly text: string; readonly tool?: string; readonly mark?: string }

function fillIn(r: Rng, v: Vocabulary, template: string): string {
  return template.replace('{file}', pick(r, v.files)).replace('{service}', pick(r, v.services))
}

function longOutput(r: Rng, v: Vocabulary, lines: number, planted?: string): string {
  const out = Array.from({ length: lines }, () => v.logLine(r))
  if (planted !== undefined) out.splice(Math.floor(lines * (0.6 + r() * 0.3)), 0, planted)
  return out.join('\n')
}

function fillerTurn(r: Rng, v: Vocabulary): Draft[] {
  const drafts: Draft[] = [{ role: 'user', text: fillIn(r, v, pick(r, v.asks)) }]
  for (let step = between(r, 0, 2); step > 0; step -= 1) {
    const command = pick(r, v.commands)
    drafts.push({ role: 'assistant', text: `${v.zh ? '运行一下。' : 'Running it.'}\n[tool call shell] ${JSON.stringify({ command })}`, tool: 'shell' })
    drafts.push({ role: 'tool', text: longOutput(r, v, between(r, 4, 40)), tool: 'shell' })
  }
  drafts.push({ role: 'assistant', text: fillIn(r, v, pick(r, v.replies)) })
  return drafts
}

/** Planted turns, each at a day and a depth of that day, with marks naming the facts. */
function plantedTurns(r: Rng, v: Vocabulary): Array<{ day: number; at: number; drafts: Draft[] }> {
  const [first, second, third] = v.setting.values
  const unit = v.setting.unit === '' ? '' : ` ${v.setting.unit}`
  const turns: Array<{ day: number; at: number; drafts: Draft[] }> = [
    { day: 0, at: 0.2, drafts: [{ role: 'user', text: v.exact.text, mark: 'exact' }, { role: 'assistant', text: fillIn(r, v, pick(r, v.replies)) }] },
    { day: 0, at: 0.5, drafts: [{ role: 'user', text: fillIn(r, v, pick(r, v.asks)) }, { role: 'assistant', text: v.zh ? `${v.setting.name}先设成 ${first}${unit}。` : `I set ${v.setting.name} to ${first}${unit} for now.`, mark: 'value1' }] },
    { day: 0, at: 0.7, drafts: [{ role: 'user', text: v.topic.day1, mark: 'topic1' }, { role: 'assistant', text: v.zh ? '好的，记下了。' : 'Noted.' }] },
    { day: 0, at: 0.85, drafts: [{ role: 'user', text: v.hop.first, mark: 'hop1' }, { role: 'assistant', text: v.zh ? '明白。' : 'Understood.' }] },
    { day: 1, at: 0.3, drafts: [
      { role: 'user', text: fillIn(r, v, pick(r, v.asks)) },
      { role: 'assistant', text: `${v.zh ? '看一下日志。' : 'Checking the logs.'}\n[tool call shell] ${JSON.stringify({ command: pick(r, v.commands) })}`, tool: 'shell' },
      { role: 'tool', text: longOutput(r, v, between(r, 160, 240), v.deep.line), tool: 'shell', mark: 'deep' },
      { role: 'assistant', text: fillIn(r, v, pick(r, v.replies)) },
    ] },
    { day: 1, at: 0.5, drafts: [{ role: 'user', text: fillIn(r, v, pick(r, v.asks)) }, { role: 'assistant', text: v.setting.later.replace('{old}', `${first}${unit}`) }, { role: 'user', text: v.zh ? `改成 ${second}${unit} 吧。` : `Make it ${second}.`, mark: 'value2' }, { role: 'assistant', text: v.zh ? '已修改。' : 'Changed.' }] },
    { day: 1, at: 0.65, drafts: [{ role: 'user', text: v.topic.day2, mark: 'topic2' }, { role: 'assistant', text: v.zh ? '收到，已更新文档。' : 'Got it, I updated the docs.' }] },
    { day: 1, at: 0.8, drafts: [{ role: 'user', text: v.plain.text, mark: 'plain' }, { role: 'assistant', text: v.zh ? '好的。' : 'OK.' }] },
    { day: 2, at: 0.2, drafts: [{ role: 'user', text: v.hop.second, mark: 'hop2' }, { role: 'assistant', text: v.zh ? '记住了。' : 'Will do.' }] },
    // the third value is said in the other language
    { day: 2, at: 0.35, drafts: [{ role: 'user', text: fillIn(r, v, pick(r, v.asks)) }, { role: 'assistant', text: v.zh ? `Per the load test, ${v.setting.name} is now ${third}${unit}.` : `按压测结果，${v.setting.name} 现在改成 ${third}${unit}。`, mark: 'value3' }] },
  ]
  if (v.cross !== undefined) turns.push({ day: 2, at: 0.5, drafts: [{ role: 'assistant', text: v.cross.text, mark: 'cross' }] })
  return turns
}

function buildSession(v: Vocabulary, seed: number): { session: TestSession; questions: TestQuestion[] } {
  const r = rng(seed)
  const sessionId = `test-${v.id}`
  const start = Date.UTC(2026, 4, 4, 9, 0, 0)
  const planted = plantedTurns(r, v)
  const messages: ShadowMessageInput[] = []
  const marks = new Map<string, number>()
  let seq = 0
  let turn = 0
  const push = (draft: Draft, time: number): void => {
    const eventType = draft.role === 'user' ? 'user/message' : draft.role === 'tool' ? 'tool/result' : 'assistant/message'
    const callId = draft.tool === undefined ? null : draft.role === 'tool' ? `call_${seq - 1}` : `call_${seq}`
    messages.push({
      sessionId, seq, eventType, role: draft.role, sourceKind: draft.role === 'user' ? 'user' : draft.role === 'tool' ? 'tool' : 'model',
      turn, step: 1, toolName: draft.tool ?? null, callId, time, eventJson: JSON.stringify({ type: eventType, seq, data: { text: draft.text } }),
      text: draft.text, tokens: Math.ceil(draft.text.length / 4) + 4,
    })
    if (draft.mark !== undefined) marks.set(draft.mark, seq)
    seq += 1
  }
  for (let day = 0; day < 3; day += 1) {
    // a working day: 09:00 to 22:00 with ~22 filler turns; planted turns at their depth
    const fillers = Array.from({ length: 22 }, () => ({ at: r(), drafts: fillerTurn(r, v) }))
    const today = [...fillers, ...planted.filter(entry => entry.day === day)].toSorted((a, b) => a.at - b.at)
    let time = start + day * DAY
    const step = (13 * 3_600_000) / today.length
    for (const entry of today) {
      turn += 1
      time += step
      entry.drafts.forEach((draft, index) => push(draft, Math.floor(time + index * 20_000)))
    }
  }
  const at = (mark: string): number => {
    const found = marks.get(mark)
    if (found === undefined) throw new Error(`${v.id}: ${mark} was not placed`)
    return found
  }
  const askedAt = start + 2 * DAY + 13.5 * 3_600_000 // the third day, 22:30 (the session started at 09:00)
  const id = (name: string): string => `${v.id}-${name}`
  const ask = (name: string, query: string, category: TestCategory, relevant: number[], extra: Partial<TestQuestion> = {}): TestQuestion =>
    ({ id: id(name), sessionId, query, category, askedAt, relevant, need: 'any', ...extra })
  const questions: TestQuestion[] = [
    ask('exact', v.exact.query, 'exact', [at('exact')]),
    ask('deep', v.deep.query, 'tool-output', [at('deep')]),
    ask('now', v.setting.now, 'superseded', [at('value3')], { older: [at('value1'), at('value2')] }),
    ask('bare', v.setting.name, 'superseded', [at('value3')], { older: [at('value1'), at('value2')] }),
    // asked on the third day: "yesterday" is the second
    ask('yesterday', v.topic.question, 'temporal', [at('topic2')], { askedAt }),
    ask('hop', v.hop.query, 'multi-hop', [at('hop1'), at('hop2')], { need: 'all' }),
    ask('plain', v.plain.query, v.zh ? 'zh' : 'exact', [at('plain')]),
    ...v.never.map((term, index) => ask(`never${index + 1}`, v.zh ? `我们讨论过 ${term} 吗` : `Did we ever discuss ${term}?`, 'never-said', [])),
  ]
  if (v.cross !== undefined) questions.push(ask('cross', v.cross.query, 'cross-lingual', [at('cross')]))
  if (v.zh) questions.push(ask('zh-deep', v.deep.query, 'zh', [at('deep')]))
  // labels: the thing a never-said question names must really be absent
  const all = messages.map(message => message.text.toLowerCase()).join('\n')
  for (const term of v.never) {
    const name = neverName(term)
    if (all.includes(name)) throw new Error(`${v.id}: never-said ${name} occurs in the session`)
  }
  return { session: { sessionId, messages, absent: v.never.map(neverName) }, questions }
}

/** The name a never-said question is about, which must be absent from the session. */
function neverName(term: string): string {
  return term.split(/\s+/)[0]!.toLowerCase()
}

/**
 * More filler turns of a test session's project, from a stream of their own (the session itself
 * is unchanged): its requests, commands, log lines and replies, no planted fact. For bench:quality's
 * many-match slice.
 */
export function testFillerTurns(sessionId: string, seed: number, count: number): FillerMessage[][] {
  const vocabulary = PROJECTS.find(project => `test-${project.id}` === sessionId)
  if (vocabulary === undefined) throw new Error(`no project for session ${sessionId}`)
  const r = rng(seed)
  return Array.from({ length: count }, () => fillerTurn(r, vocabulary).map(draft => ({ role: draft.role, text: draft.text, ...(draft.tool === undefined ? {} : { toolName: draft.tool }) })))
}

export function testSet(seed = 7_340_021): { sessions: TestSession[]; questions: TestQuestion[] } {
  const sessions: TestSession[] = []
  const questions: TestQuestion[] = []
  PROJECTS.forEach((project, index) => {
    const built = buildSession(project, seed + index * 104_729)
    sessions.push(built.session)
    questions.push(...built.questions)
  })
  return { sessions, questions }
}
