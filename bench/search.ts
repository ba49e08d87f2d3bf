/**
 * bench:search — P2: ranked search over the shadow store vs a literal scan of the same messages.
 *
 * One deterministic stream of synthetic coding-agent messages (user prompts, assistant answers,
 * tool outputs with code, test logs, stack traces, paths, identifiers, numbers, error codes, ~15%
 * Chinese) in sessions of 10k messages with increasing times, with a few planted needles. The
 * first N messages of the stream fill a store of size N (default 10k, 100k, 1M), so every store
 * holds the smaller ones' messages, and the same messages sit in memory for the scan.
 *
 * Per query class (BRIEF §5: rare, medium, common ≈10% of rows, multi-word, path substring, CJK,
 * session-scoped) it times `store.search(q, { limit: 10 })` against the literal scan upstream dsh
 * proposes: a case-insensitive substring test of every message's text (here: texts lowercased once
 * in advance, which is the cheapest honest scan; a multi-word query needs every word), collecting
 * every match and returning the 10 newest. Store-wide classes search every session
 * (`allSessions`) and scan every message; the session-scoped class searches one session of 10k
 * messages and scans only that session's messages.
 *
 * Aggregates (judged per class, not on an average): the RESULT line gives the WORST class —
 * speedup_1m is the smallest speedup at the largest size among the store-wide classes (a session
 * scan covers only 10k messages, so that class is judged on growth; its speedup is printed), and
 * growth_1m_10k is the largest latency(largest)/latency(smallest) over all seven classes. Geometric
 * means are printed alongside. With BENCH_SIZES set, "1m" and "10k" mean the largest and smallest
 * sizes run.
 *
 * Env: BENCH_SIZES (default "10000,100000,1000000"), BENCH_DIR (keep the stores there instead of a
 * temp dir that is removed; stores already holding the right count are reused, not rebuilt),
 * BENCH_REPS (timed runs per query, default 7; the scan gets 5; a query whose runs pass 6 s stops
 * at 3). A third scan column lowercases every text per query, as a tool scanning the log would (the
 * naive or grep-like scan; three runs, median); RESULT's speedup_1m_grep is the worst class against it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { ShadowStore, SqliteBackend, type SearchHit, type SearchOptions, type ShadowMessage, type ShadowMessageInput } from '@dsh-shadow/store'
import { rng } from '@dsh-shadow/testing'
import { median, printTable, result } from './report.ts'

const started = performance.now()
const SIZES = (process.env['BENCH_SIZES'] ?? '10000,100000,1000000').split(',').map(value => Number(value.trim())).filter(value => value > 0).toSorted((a, b) => a - b)
if (SIZES.length === 0) throw new Error('BENCH_SIZES names no size')
const MAX = SIZES.at(-1)!
const SESSION_SIZE = 10_000
const BATCH = 4_000
const REPS = Math.max(3, Number(process.env['BENCH_REPS'] ?? 7))
const SCAN_REPS = Math.max(3, REPS - 2)
const WARMUP = 2
const MIN_REPS = 3
/** The grep-like scan is slow at 1M (about 0.4 s a query): three runs, median. */
const NAIVE_REPS = 3
/** Past this much timing per query (ours + scan), stop at MIN_REPS runs. */
const QUERY_BUDGET_MS = 6_000
const SLOW_MS = 1_000
const LIMIT = 10
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0)

const sessionId = (index: number): string => `bench-s${String(index).padStart(3, '0')}`

// ---- vocabulary -----------------------------------------------------------------------------------

const FILLER = `the the the a a to to of of and and is is in in it it that this for for we we on with be
be not as are was you can should will if then so but when which there from by at now still also
request response handler service client server config value field object array string number type
function method call result error errors fails failed failing works working check checked update
updated add added remove removed change changed test tests run running build built output input
line lines file files module import export default async await promise return returns null
undefined true false state status code path query table row rows column index key keys cache
token tokens user users session sessions order orders payment invoice job jobs queue worker
workers timer interval delay retry retries timeout limit limits memory heap leak stack trace log
logs logger level debug info warn metric metrics latency throughput p99 spike load traffic
deploy deployed release branch commit merge diff patch fix fixed bug issue ticket review
connection connections database schema migration transaction lock locks read write flush sync
event events listener handler emit stream buffer chunk parse parsed serialize encode decode
header headers body payload json yaml env variable variables option options flag flags
because since before after while during between around about maybe probably likely looks seems`
  .split(/\s+/).filter(word => word.length > 0)

const VERBS = ['handle', 'create', 'resolve', 'acquire', 'release', 'parse', 'validate', 'serialize', 'schedule', 'flush', 'load', 'sync', 'build', 'render', 'fetch', 'compute', 'apply', 'reconcile', 'refresh', 'rotate', 'dispatch', 'enqueue', 'drain', 'encode']
const NOUNS = ['Request', 'Connection', 'Session', 'Order', 'Invoice', 'Payment', 'Token', 'Cache', 'Config', 'Schema', 'Migration', 'Job', 'Queue', 'Worker', 'Header', 'Payload', 'Ledger', 'Coupon', 'Refund', 'User', 'Account', 'Report', 'Metric', 'Batch', 'Snapshotter', 'Lease', 'Cursor', 'Webhook', 'Signature', 'Route', 'Policy', 'Quota', 'Shard', 'Replica', 'Bucket', 'Upload', 'Thumbnail', 'Digest', 'Event', 'Stream']
const SUFFIXES = ['', '', '', 'Timeout', 'Async', 'Once', 'Batch', 'Safe', 'WithRetry', 'Internal']
const IDENTIFIERS: string[] = []
for (const suffix of SUFFIXES) for (const noun of NOUNS) for (const verb of VERBS) IDENTIFIERS.push(`${verb}${noun}${suffix}`)
// A fixed, shuffled-looking order so Zipf ranks are not alphabetical.
const IDENTS = IDENTIFIERS.map((name, index) => ({ name, key: (index * 2_654_435_761) % 4_294_967_291 })).toSorted((a, b) => a.key - b.key).map(entry => entry.name)

const DIRS = ['db', 'api', 'auth', 'cache', 'jobs', 'server', 'lib', 'billing', 'search', 'queue', 'storage', 'metrics', 'config', 'utils', 'workers', 'payments', 'users', 'orders', 'notify', 'session']
const NAMES = ['pool', 'client', 'index', 'routes', 'handler', 'schema', 'retry', 'logger', 'scheduler', 'middleware', 'migrate', 'types', 'service', 'repository', 'controller', 'validator', 'serializer', 'refund']
const PATHS: string[] = []
for (const name of NAMES) for (const dir of DIRS) PATHS.push(`src/${dir}/${name}.ts`)
const PATH_ORDER = PATHS.map((path, index) => ({ path, key: (index * 40_503) % 65_521 })).toSorted((a, b) => a.key - b.key).map(entry => entry.path)
// Make sure the paths the queries ask for exist with a middling rank.
for (const [rank, path] of [[9, 'src/db/pool.ts'], [31, 'src/auth/middleware.ts'], [57, 'src/payments/refund.ts'], [80, 'src/queue/worker.ts']] as const) {
  const at = PATH_ORDER.indexOf(path)
  if (at >= 0) PATH_ORDER.splice(at, 1)
  PATH_ORDER.splice(rank, 0, path)
}

const ERROR_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EADDRINUSE', 'ENOTFOUND', 'EPIPE', 'ERR_INVALID_ARG_TYPE', 'ERR_UNHANDLED_REJECTION', 'ERR_SOCKET_CLOSED', 'ENOENT', 'EACCES', 'ERR_REQUIRE_ESM']
const ERROR_TEXTS = [
  'TypeError: Cannot read properties of undefined (reading \'{field}\')', 'RangeError: Maximum call stack size exceeded',
  'Error: connect {code} 127.0.0.1:{port}', 'Error: jwt expired at {n}', 'SyntaxError: Unexpected token } in JSON at position {n}',
  'error: duplicate key value violates unique constraint "{table}_pkey"', 'Error: {code}: request to http://localhost:{port}/v1/{table} failed',
]
const TABLES = ['orders', 'users', 'invoices', 'payments', 'sessions', 'coupons', 'ledger_entries', 'refunds', 'webhooks', 'jobs']

const ZH_PHRASES = ['连接池耗尽', '数据库迁移', '内存泄漏', '回归测试', '请求超时', '缓存失效', '配置文件', '单元测试', '集成测试', '部署失败', '日志级别',
  '性能瓶颈', '并发问题', '死锁', '重试机制', '限流', '熔断', '消息队列', '定时任务', '权限校验', '签名密钥', '订单模块', '支付回调', '用户会话',
  '接口文档', '类型定义', '依赖升级', '构建缓存', '代码审查', '线上故障', '值班同事', '监控告警', '慢查询', '索引优化', '事务隔离', '幂等处理',
  '序列化错误', '空指针异常', '堆栈信息', '环境变量', '灰度发布', '压测结果', '错误码', '健康检查', '证书过期', '时区问题', '字符编码', '热更新',
  '连接泄漏', '批量导入', '分页查询', '数据一致性', '主从延迟', '磁盘空间', '文件句柄', '超时时间', '返回值', '调用链路', '异常处理', '测试用例']
const ZH_GLUE = ['我们发现', '需要先确认', '这次的问题是', '原因在于', '已经修复了', '请帮我看看', '建议', '目前', '另外', '所以', '但是', '排查后发现', '看起来是', '可能和']
const ZH_TAIL = ['有关。', '导致的。', '还没有解决。', '已经处理好了。', '需要再跑一遍。', '的时候出错。', '比较严重。', '，请确认。']

// Terms the queries ask for, injected at known rates and kept out of the filler.
const COMMON_TERMS = ['deprecated', 'flaky', 'snapshot'] // each in ~10% of messages
const MEDIUM_TERMS = ['idempotency', 'backpressure', 'tombstone'] // each in ~0.4% of messages
const PHRASES = ['connection pool exhausted', 'retry budget exceeded', 'lease renewal failed']

/** Planted needles: global message positions (the store of size N holds positions < N). */
const NEEDLES: ReadonlyArray<{ text: string; at: readonly number[] }> = [
  { text: 'zqxv-kestrel-4471', at: [1_234, 640_001] },
  { text: 'marzipanQuokkaFlush', at: [5_678, 70_000, 999_000] },
  { text: 'ERR_PLATYPUS_DRIFT', at: [9_001, 333_333] },
  { text: 'glimmerwraith', at: [4_321] },
]
const NEEDLE_AT = new Map<number, string[]>()
for (const needle of NEEDLES) for (const at of needle.at) NEEDLE_AT.set(at, [...(NEEDLE_AT.get(at) ?? []), needle.text])

// ---- generator ------------------------------------------------------------------------------------

function zipfTable(n: number, s: number): Float64Array {
  const cdf = new Float64Array(n)
  let total = 0
  for (let index = 0; index < n; index += 1) {
    total += 1 / (index + 1) ** s
    cdf[index] = total
  }
  for (let index = 0; index < n; index += 1) cdf[index]! /= total
  return cdf
}

class Generator {
  private readonly random = rng(20_260_105)
  private readonly fillerCdf = zipfTable(FILLER.length, 0.9)
  private readonly identCdf = zipfTable(IDENTS.length, 1.05)
  private readonly pathCdf = zipfTable(PATH_ORDER.length, 1.0)
  private readonly zhCdf = zipfTable(ZH_PHRASES.length, 0.8)
  private index = 0
  private turn = 0
  private step = 0
  private pendingCalls = 0
  private callCounter = 0

  private r(): number { return this.random() }
  private int(min: number, max: number): number { return min + Math.floor(this.r() * (max - min + 1)) }
  private pick<T>(items: readonly T[]): T { return items[Math.floor(this.r() * items.length)]! }
  private zipf(cdf: Float64Array): number {
    const u = this.r()
    let low = 0
    let high = cdf.length - 1
    while (low < high) {
      const mid = (low + high) >> 1
      if (cdf[mid]! < u) low = mid + 1
      else high = mid
    }
    return low
  }
  private word(): string { return FILLER[this.zipf(this.fillerCdf)]! }
  private ident(): string { return IDENTS[this.zipf(this.identCdf)]! }
  private path(): string { return PATH_ORDER[this.zipf(this.pathCdf)]! }
  private testPath(): string { return this.path().replace(/^src\//, 'tests/').replace(/\.ts$/, '.test.ts') }
  private zh(): string { return ZH_PHRASES[this.zipf(this.zhCdf)]! }
  private errorLine(): string {
    return this.pick(ERROR_TEXTS).replace(/\{(\w+)\}/g, (_, key: string) => {
      switch (key) {
        case 'code': return this.pick(ERROR_CODES)
        case 'port': return String(this.pick([5432, 6379, 8080, 3000, 9200, 27017]))
        case 'table': return this.pick(TABLES)
        case 'field': return this.pick(['id', 'userId', 'headers', 'length', 'status', 'rows'])
        default: return String(this.int(1, 99_999))
      }
    })
  }

  private sentence(words: number): string {
    const parts: string[] = []
    for (let index = 0; index < words; index += 1) {
      const roll = this.r()
      if (roll < 0.07) parts.push(this.ident())
      else if (roll < 0.1) parts.push(this.path())
      else if (roll < 0.12) parts.push(String(this.int(2, 65_000)))
      else parts.push(this.word())
    }
    const text = parts.join(' ')
    return `${text[0]!.toUpperCase()}${text.slice(1)}.`
  }

  private zhSentence(): string {
    const parts = [this.pick(ZH_GLUE), this.zh()]
    if (this.r() < 0.5) parts.push('和', this.zh())
    if (this.r() < 0.35) parts.push('（', this.r() < 0.5 ? this.ident() : this.path(), '）')
    parts.push(this.pick(ZH_TAIL))
    return parts.join('')
  }

  private prose(sentences: number, chinese: boolean): string {
    const out: string[] = []
    for (let index = 0; index < sentences; index += 1) out.push(chinese ? this.zhSentence() : this.sentence(this.int(6, 22)))
    return out.join(chinese ? '' : ' ')
  }

  private userPrompt(chinese: boolean): string {
    const fn = this.ident()
    const file = this.path()
    if (chinese) {
      return this.pick([
        `请检查 ${file} 里的 ${fn}，为什么会出现${this.zh()}？`,
        `线上日志出现 "${this.errorLine()}"，请定位原因，可能和${this.zh()}有关。`,
        `帮我跑一下 ${this.testPath()}，把失败的修好。${this.prose(1, true)}`,
        `${this.prose(this.int(1, 3), true)} 相关代码在 ${file}。`,
      ])
    }
    return this.pick([
      `Look at ${file} and tell me why ${fn} fails intermittently. ${this.sentence(this.int(5, 15))}`,
      `The CI log shows "${this.errorLine()}". Find the cause in ${file}.`,
      `Refactor ${fn} so it no longer swallows errors. ${this.sentence(this.int(5, 15))}`,
      `Run the tests in ${this.testPath()} and fix whatever breaks.`,
      `${this.sentence(this.int(8, 20))} Can you check ${fn} in ${file}?`,
    ])
  }

  private assistantAnswer(chinese: boolean): string {
    const fn = this.ident()
    const file = this.path()
    const head = chinese
      ? `已经定位：${fn} 在 ${file} 里${this.pick(['提前释放了连接', '没有处理超时', '读取了过期的配置', '吞掉了异常'])}。`
      : `I traced the problem to ${fn} in ${file}: ${this.sentence(this.int(6, 16))}`
    const body = this.prose(this.int(1, 6), chinese)
    const code = this.r() < 0.3 ? `\n\n\`\`\`ts\n${this.codeLines(this.int(3, 10), file)}\n\`\`\`\n` : ' '
    return `${head} ${body}${code}${this.prose(this.int(0, 2), chinese)}`.trim()
  }

  private assistantCalls(): { text: string; tools: string } {
    const count = this.int(1, 2)
    const tools: string[] = []
    const lines: string[] = [this.r() < 0.22 ? `先看一下 ${this.path()}。` : this.sentence(this.int(4, 12))]
    for (let index = 0; index < count; index += 1) {
      const tool = this.pick(['shell', 'read_file', 'grep', 'shell'])
      tools.push(tool)
      const args = tool === 'read_file' ? { path: this.path() } : tool === 'grep' ? { pattern: this.ident(), path: 'src' } : { command: this.pick([`npx vitest run ${this.testPath()}`, 'git status --short', `node scripts/ops.js --job ${this.ident()}`, 'npm run build']) }
      lines.push(`[tool call ${tool}] ${JSON.stringify(args)}`)
    }
    this.pendingCalls = count
    return { text: lines.join('\n'), tools: tools.join(' ') }
  }

  private codeLines(count: number, file: string): string {
    const lines = [`// ${file}`]
    for (let index = 0; index < count; index += 1) {
      const fn = this.ident()
      lines.push(this.pick([
        `export async function ${fn}(input: ${this.pick(NOUNS)}, opts = { timeoutMs: ${this.int(100, 30_000)} }) {`,
        `  const ${this.word()}${this.int(1, 9)} = await ${fn}(input, { retries: ${this.int(0, 5)} })`,
        `  if (!result.ok) throw new Error('${fn} failed: ' + result.${this.pick(['code', 'reason', 'status'])})`,
        `  logger.${this.pick(['info', 'warn', 'debug'])}({ fn: '${fn}', ms: Date.now() - started, rows: rows.length })`,
        `import { ${fn} } from '${this.path().replace(/^src\//, '../').replace(/\.ts$/, '')}'`,
        `  return { ok: true, value: ${this.word()}, count: ${this.int(0, 500)} }`,
        '}',
      ]))
    }
    return lines.join('\n')
  }

  private toolOutput(tool: string): string {
    const kind = tool === 'read_file' ? 0 : tool === 'grep' ? 3 : this.pick([1, 1, 2, 4, 5])
    const out: string[] = []
    switch (kind) {
      case 0: {
        out.push(this.codeLines(this.int(8, 60), this.path()))
        break
      }
      case 1: {
        const file = this.testPath()
        out.push(`$ npx vitest run ${file}`, '')
        const cases = this.int(4, 30)
        let failed = 0
        for (let index = 0; index < cases; index += 1) {
          const ok = this.r() > 0.12
          if (!ok) failed += 1
          out.push(` ${ok ? '✓' : '×'} ${file} > ${this.ident()} ${this.word()} ${this.word()} (${this.int(1, 900)} ms)`)
          if (!ok) out.push(`   → ${this.errorLine()}`, `     at ${this.ident()} (${this.path()}:${this.int(1, 400)}:${this.int(1, 60)})`)
        }
        out.push('', ` Test Files  1 ${failed > 0 ? 'failed' : 'passed'} (1)`, `      Tests  ${failed} failed | ${cases - failed} passed (${cases})`, `   Duration  ${this.int(200, 9000)}ms`)
        break
      }
      case 2: {
        out.push(this.errorLine())
        const frames = this.int(4, 14)
        for (let index = 0; index < frames; index += 1) out.push(`    at ${this.ident()} (${this.r() < 0.8 ? this.path() : `node:internal/${this.pick(['net', 'timers', 'process/task_queues'])}.js`}:${this.int(1, 900)}:${this.int(1, 80)})`)
        out.push(`  code: '${this.pick(ERROR_CODES)}',`, `  errno: -${this.int(1, 130)}`)
        break
      }
      case 3: {
        const hits = this.int(2, 25)
        for (let index = 0; index < hits; index += 1) out.push(`${this.path()}:${this.int(1, 800)}:  ${this.pick(['const', 'await', 'return', 'if (', 'export function'])} ${this.ident()}(${this.word()})`)
        break
      }
      case 4: {
        const lines = this.int(5, 40)
        for (let index = 0; index < lines; index += 1) {
          const time = new Date(T0 + this.index * 3_000 - this.int(0, 600_000)).toISOString()
          const zh = this.r() < 0.003 ? ` ${this.zh()}` : ''
          out.push(`${time} ${this.pick(['INFO', 'INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG'])} [${this.ident()}] req=${this.int(0, 0xffffff).toString(16).padStart(6, '0')} status=${this.pick([200, 200, 200, 201, 204, 400, 404, 409, 500, 503])} ms=${this.int(1, 4000)}${zh}`)
        }
        break
      }
      default: {
        out.push(`$ git status --short`)
        const lines = this.int(2, 12)
        for (let index = 0; index < lines; index += 1) out.push(`${this.pick([' M', 'M ', '??', ' D', 'A '])} ${this.r() < 0.5 ? this.path() : this.testPath()}`)
        out.push('', this.sentence(this.int(4, 10)))
      }
    }
    return out.join('\n')
  }

  /** The next message of the stream. */
  next(): ShadowMessageInput {
    const index = this.index
    const session = Math.floor(index / SESSION_SIZE)
    const seq = index % SESSION_SIZE
    if (seq === 0) { this.turn = 0; this.pendingCalls = 0 }
    let eventType: ShadowMessageInput['eventType']
    let role: ShadowMessageInput['role']
    let text: string
    let toolName: string | null = null
    let callId: string | null = null
    const chinese = this.r() < 0.22
    if (this.pendingCalls > 0) {
      eventType = 'tool/result'
      role = 'tool'
      toolName = this.pick(['shell', 'read_file', 'grep', 'shell'])
      callId = `call_${(this.callCounter += 1)}`
      text = this.toolOutput(toolName)
      this.pendingCalls -= 1
      this.step += 1
    } else if (this.step === 0 || this.r() < 0.18) {
      eventType = 'user/message'
      role = 'user'
      text = this.userPrompt(chinese)
      this.turn += 1
      this.step = 1
    } else if (this.r() < 0.55) {
      eventType = 'assistant/message'
      role = 'assistant'
      const calls = this.assistantCalls()
      text = calls.text
      toolName = calls.tools
      callId = toolName.split(' ').map((_, n) => `call_${this.callCounter + n + 1}`).join(' ')
    } else {
      eventType = 'assistant/message'
      role = 'assistant'
      text = this.assistantAnswer(chinese)
      this.step = 0
    }
    // Query terms at known rates.
    for (const term of COMMON_TERMS) {
      if (this.r() < 0.1) text += this.pick([`\nwarning: ${term} ${this.word()}`, ` (${term})`, `\n${this.ident()} is ${term}.`, ` ${term} ${this.word()} ${this.word()}.`])
    }
    for (const term of MEDIUM_TERMS) if (this.r() < 0.004) text += ` The ${term} ${this.word()} needs a look.`
    for (const phrase of PHRASES) if (this.r() < 0.003) text += `\nError: ${phrase} (${this.ident()}, limit=${this.int(1, 64)})`
    for (const needle of NEEDLE_AT.get(index) ?? []) text += `\nnote: saw ${needle} while running ${this.ident()}`
    this.index += 1
    const time = T0 + index * 3_000 + this.int(0, 2_000)
    const data = role === 'tool' ? { callId, toolName, content: [{ type: 'text', text }] } : { content: [{ type: 'text', text }] }
    return {
      sessionId: sessionId(session),
      seq,
      eventType,
      role,
      sourceKind: role === 'assistant' ? 'model' : role,
      turn: this.turn,
      step: this.step,
      toolName,
      callId,
      time,
      eventJson: JSON.stringify({ type: eventType, seq, time: new Date(time).toISOString(), data }),
      text,
      tokens: Math.ceil(text.length / 4),
    }
  }
}

// ---- build the stores -----------------------------------------------------------------------------

const keep = process.env['BENCH_DIR']
const dir = keep ?? mkdtempSync(join(tmpdir(), 'bench-search-'))
const stores = new Map<number, ShadowStore>()
const ingestMs = new Map<number, number>()
for (const size of SIZES) {
  const path = join(dir, `store-${size}.db`)
  if (keep === undefined) rmSync(path, { force: true })
  stores.set(size, await ShadowStore.open(path))
  ingestMs.set(size, 0)
}
const existing = new Map<number, number>()
for (const [size, store] of stores) existing.set(size, (await store.stats()).messages)

/** Lowercased text of every message, in stream (= time) order: the scan's view of the same log. */
const lower: string[] = []
/** Original texts, for the naive scan variant that lowercases per query. */
const original: string[] = []
let chineseRows = 0
let textChars = 0
const generator = new Generator()
const pending = new Map<number, ShadowMessageInput[]>(SIZES.map(size => [size, []]))
let generateMs = 0
const flush = async (size: number): Promise<void> => {
  const rows = pending.get(size)!
  if (rows.length === 0) return
  const begin = performance.now()
  await stores.get(size)!.append(rows)
  ingestMs.set(size, ingestMs.get(size)! + performance.now() - begin)
  pending.set(size, [])
}
for (let index = 0; index < MAX; index += 1) {
  const begin = performance.now()
  const row = generator.next()
  generateMs += performance.now() - begin
  lower.push(row.text.toLowerCase())
  original.push(row.text)
  textChars += row.text.length
  if (/[\u4e00-\u9fff]/.test(row.text)) chineseRows += 1
  for (const size of SIZES) {
    if (index >= size || existing.get(size) === size) continue
    const rows = pending.get(size)!
    rows.push(row)
    if (rows.length >= BATCH) await flush(size)
  }
}
const ingestRows: Array<readonly unknown[]> = []
/** Store file bytes over text bytes, per size (RESULT gives the largest). */
const bytesRatio = new Map<number, number>()
for (const size of SIZES) {
  await flush(size)
  const store = stores.get(size)!
  const fresh = existing.get(size) !== size
  const begin = performance.now()
  if (fresh) {
    if (!(store.backend instanceof SqliteBackend)) throw new Error('bench:search needs the SQLite backend')
    store.backend.optimize()
  }
  const optimizeMs = performance.now() - begin
  const stats = await store.stats()
  if (stats.messages !== size) throw new Error(`store-${size} holds ${stats.messages} messages`)
  // Index sizes from dbstat on a second connection (the backend keeps its handle private).
  const db = new DatabaseSync(store.path)
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  const bytesOf = (prefix: string): number => Number((db.prepare('SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat WHERE name LIKE ?').get(`${prefix}%`) as { n: number }).n)
  const words = bytesOf('messages_words')
  const grams = bytesOf('messages_grams')
  db.close()
  bytesRatio.set(size, stats.bytes / stats.textBytes)
  ingestRows.push([
    size, fresh ? (size / (ingestMs.get(size)! / 1000)).toFixed(0) : 'reused', fresh ? (optimizeMs / 1000).toFixed(1) : '-',
    (stats.bytes / size).toFixed(0), (stats.textBytes / size).toFixed(0), bytesRatio.get(size)!.toFixed(2), (words / size).toFixed(0), (grams / size).toFixed(0),
  ])
}
printTable('ingest (batched store.append, in-process; then optimize)', ['messages', 'rows/s', 'optimize s', 'file B/msg', 'text B/msg', 'file/text', 'words idx B/msg', 'grams idx B/msg'], ingestRows)
console.log(`stream: ${MAX} messages, ${SESSION_SIZE} per session, avg ${(textChars / MAX).toFixed(0)} chars, ${(100 * chineseRows / MAX).toFixed(1)}% with Chinese; generation ${(generateMs / 1000).toFixed(1)} s (not counted in ingest)`)

// ---- queries --------------------------------------------------------------------------------------

interface QueryClass {
  readonly name: string
  readonly session: boolean
  readonly queries: readonly string[]
}
const CLASSES: readonly QueryClass[] = [
  { name: 'rare', session: false, queries: NEEDLES.map(needle => needle.text) },
  { name: 'medium', session: false, queries: [...MEDIUM_TERMS, IDENTS[150]!] },
  { name: 'common', session: false, queries: COMMON_TERMS },
  { name: 'multi-word', session: false, queries: [...PHRASES, 'why did the migration transaction fail'] },
  { name: 'path', session: false, queries: ['db/pool', 'auth/middleware', 'payments/refund.ts', 'queue/worker'] },
  { name: 'cjk', session: false, queries: ['连接池耗尽', '数据库迁移', '内存泄漏', '证书过期'] },
  { name: 'session', session: true, queries: [MEDIUM_TERMS[0]!, COMMON_TERMS[0]!, PHRASES[0]!, 'db/pool', '数据库迁移'] },
]

/** The literal scan: every message whose lowercased text holds every piece of the query; the 10 newest. */
function scan(query: string, from: number, to: number): { newest: number[]; matches: number } {
  const pieces = query.toLowerCase().split(/\s+/).filter(piece => piece.length > 0)
  const found: number[] = []
  for (let index = from; index < to; index += 1) {
    const text = lower[index]!
    let ok = true
    for (const piece of pieces) if (!text.includes(piece)) { ok = false; break }
    if (ok) found.push(index)
  }
  return { newest: found.slice(-LIMIT).toReversed(), matches: found.length }
}

/** The same scan without the precomputed lowercase copy: `toLowerCase()` per message per query. */
function naiveScan(query: string, from: number, to: number): number {
  const pieces = query.toLowerCase().split(/\s+/).filter(piece => piece.length > 0)
  let matches = 0
  for (let index = from; index < to; index += 1) {
    const text = original[index]!.toLowerCase()
    if (pieces.every(piece => text.includes(piece))) matches += 1
  }
  return matches
}

/** The messages a hit stands for: the message, and the tool call folded into it when the store pairs them. */
function messagesOf(hit: SearchHit): ShadowMessage[] {
  return hit.call === undefined ? [hit.message] : [hit.message, hit.call]
}

interface Measure { ours: number[]; scan: number[]; naive: number[] }
const perClass = new Map<string, Map<number, Measure>>() // class -> size -> samples
const detail = new Map<number, Array<readonly unknown[]>>()
let needleChecks = 0
let needleFound = 0

for (const size of SIZES) {
  const store = stores.get(size)!
  const rows: Array<readonly unknown[]> = []
  for (const cls of CLASSES) {
    const samples: Measure = { ours: [], scan: [], naive: [] }
    const options: SearchOptions = cls.session ? { sessionId: sessionId(0), limit: LIMIT } : { sessionId: sessionId(0), allSessions: true, limit: LIMIT }
    const [from, to] = cls.session ? [0, Math.min(SESSION_SIZE, size)] : [0, size]
    for (const query of cls.queries) {
      process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)} s] ${size} ${cls.name} ${query}\n`)
      const firstBegin = performance.now()
      let last = await store.search(query, options)
      const first = performance.now() - firstBegin
      let literal = scan(query, from, to)
      // A query slower than a second is warm after one run; more runs would only burn the time budget.
      if (first < SLOW_MS) for (let run = 1; run < WARMUP; run += 1) await store.search(query, options)
      const ours: number[] = []
      const scans: number[] = []
      for (let run = 0; run < REPS; run += 1) {
        if (run >= MIN_REPS && ours.reduce((a, b) => a + b, 0) + scans.reduce((a, b) => a + b, 0) > QUERY_BUDGET_MS) break
        let begin = performance.now()
        last = await store.search(query, options)
        ours.push(performance.now() - begin)
        if (run < SCAN_REPS) {
          begin = performance.now()
          literal = scan(query, from, to)
          scans.push(performance.now() - begin)
        }
      }
      const naives: number[] = []
      for (let run = 0; run < NAIVE_REPS; run += 1) {
        const naiveBegin = performance.now()
        naiveScan(query, from, to)
        naives.push(performance.now() - naiveBegin)
      }
      const naive = median(naives)
      samples.naive.push(...naives)
      samples.ours.push(...ours)
      samples.scan.push(...scans)
      // Sanity: planted needles must come back; how many of our hits hold the query literally.
      if (cls.name === 'rare') {
        const needle = NEEDLES.find(entry => entry.text === query)!
        const got = new Set(last.hits.flatMap(hit => messagesOf(hit).map(message => `${message.sessionId}:${message.seq}`)))
        for (const at of needle.at.filter(position => position < size)) {
          needleChecks += 1
          if (got.has(`${sessionId(Math.floor(at / SESSION_SIZE))}:${at % SESSION_SIZE}`)) needleFound += 1
        }
      }
      const pieces = query.toLowerCase().split(/\s+/)
      const literalHits = last.hits.filter(hit => messagesOf(hit).some(message => pieces.every(piece => message.text.toLowerCase().includes(piece)))).length
      rows.push([cls.name, query, `${literal.matches} (${(100 * literal.matches / (to - from)).toFixed(2)}%)`, last.coverage.matched, `${literalHits}/${last.hits.length}`, median(ours), median(scans), naive, median(scans) / median(ours)])
    }
    const bySize = perClass.get(cls.name) ?? new Map<number, Measure>()
    bySize.set(size, samples)
    perClass.set(cls.name, bySize)
  }
  detail.set(size, rows)
  printTable(`queries at ${size} messages (p50 ms; scan = in-memory literal scan of ${size} messages, session class: of its ${Math.min(SESSION_SIZE, size)})`,
    ['class', 'query', 'scan matches', 'ours matched', 'ours literal hits', 'ours p50', 'scan p50', 'naive scan', 'speedup'], rows)
}

// ---- summary --------------------------------------------------------------------------------------

const small = SIZES[0]!
const large = MAX
const summary: Array<readonly unknown[]> = []
const speedups: Array<{ name: string; value: number; session: boolean }> = []
const grepSpeedups: Array<{ name: string; value: number; session: boolean }> = []
const growths: Array<{ name: string; value: number }> = []
for (const cls of CLASSES) {
  const bySize = perClass.get(cls.name)!
  const row: unknown[] = [cls.name]
  for (const size of SIZES) {
    const m = bySize.get(size)!
    row.push(median(m.ours), median(m.scan), `${(median(m.scan) / median(m.ours)).toFixed(1)}x`)
    if (size === large) row.push(`${(median(m.naive) / median(m.ours)).toFixed(1)}x`)
  }
  const growth = median(bySize.get(large)!.ours) / median(bySize.get(small)!.ours)
  const speedup = median(bySize.get(large)!.scan) / median(bySize.get(large)!.ours)
  row.push(growth.toFixed(2))
  summary.push(row)
  speedups.push({ name: cls.name, value: speedup, session: cls.session })
  grepSpeedups.push({ name: cls.name, value: median(bySize.get(large)!.naive) / median(bySize.get(large)!.ours), session: cls.session })
  growths.push({ name: cls.name, value: growth })
}
const sizeLabel = (size: number): string => (size >= 1_000_000 ? `${size / 1_000_000}M` : size >= 1000 ? `${size / 1000}k` : String(size))
printTable('per class (p50 ms over all runs of the class\'s queries)',
  ['class', ...SIZES.flatMap(size => [`ours ${sizeLabel(size)}`, `scan ${sizeLabel(size)}`, `speedup ${sizeLabel(size)}`, ...(size === large ? [`vs naive ${sizeLabel(size)}`] : [])]), `growth ${sizeLabel(large)}/${sizeLabel(small)}`], summary)

const geomean = (values: readonly number[]): number => Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length)
const storeWide = speedups.filter(entry => !entry.session)
const worstSpeedup = storeWide.reduce((a, b) => (b.value < a.value ? b : a))
const worstGrowth = growths.reduce((a, b) => (b.value > a.value ? b : a))
const worstGrep = grepSpeedups.filter(entry => !entry.session).reduce((a, b) => (b.value < a.value ? b : a))
console.log(`\nneedles returned in top ${LIMIT}: ${needleFound}/${needleChecks}`)
console.log(`targets (BRIEF §5 P2): speedup at ${sizeLabel(large)} >= 100x per store-wide class; growth ${sizeLabel(large)}/${sizeLabel(small)} <= 3x per class`)
console.log(`speedup at ${sizeLabel(large)}: worst store-wide class ${worstSpeedup.name} ${worstSpeedup.value.toFixed(1)}x; geomean store-wide ${geomean(storeWide.map(entry => entry.value)).toFixed(1)}x; session class ${speedups.find(entry => entry.session)!.value.toFixed(2)}x (vs a scan of that session only)`)
console.log(`  failing speedup: ${storeWide.filter(entry => entry.value < 100).map(entry => `${entry.name} ${entry.value.toFixed(1)}x`).join(', ') || 'none'}`)
console.log(`growth ${sizeLabel(large)}/${sizeLabel(small)}: worst class ${worstGrowth.name} ${worstGrowth.value.toFixed(2)}x; geomean ${geomean(growths.map(entry => entry.value)).toFixed(2)}x`)
console.log(`  failing growth: ${growths.filter(entry => entry.value > 3).map(entry => `${entry.name} ${entry.value.toFixed(2)}x`).join(', ') || 'none'}`)

for (const store of stores.values()) await store.close()
if (keep === undefined) rmSync(dir, { recursive: true, force: true })
console.log(`total wall time ${((performance.now() - started) / 1000).toFixed(0)} s (RESULT: worst store-wide class speedup at the largest size, worst class growth)`)
console.log(`speedup at ${sizeLabel(large)} against the grep-like scan (lowercasing each text per query, as a tool scanning the log does): worst store-wide class ${worstGrep.name} ${worstGrep.value.toFixed(1)}x`)
// Issue 14 targets: the session class >= 10x a scan of that session, every class p50 <= 2 ms, file <= 2x text (largest size).
const sessionSpeedup = speedups.find(entry => entry.session)!.value
const p50Max = CLASSES.map(cls => ({ name: cls.name, value: median(perClass.get(cls.name)!.get(large)!.ours) })).reduce((a, b) => (b.value > a.value ? b : a))
console.log(`issue 14 at ${sizeLabel(large)}: session class ${sessionSpeedup.toFixed(1)}x its session scan (target >= 10x); slowest class p50 ${p50Max.name} ${p50Max.value.toFixed(2)} ms (target <= 2 ms); file/text ${bytesRatio.get(large)!.toFixed(2)} (target <= 2)`)
result('search', {
  speedup_1m: worstSpeedup.value.toFixed(1), speedup_1m_grep: worstGrep.value.toFixed(1), growth_1m_10k: worstGrowth.value.toFixed(2),
  session_speedup_1m: sessionSpeedup.toFixed(1), p50_max_1m_ms: p50Max.value.toFixed(2), bytes_ratio: bytesRatio.get(large)!.toFixed(2),
})
