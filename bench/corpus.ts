/**
 * The synthetic coding-agent message stream the search and scale benchmarks share: user prompts,
 * assistant answers, tool outputs with code, test logs, stack traces, paths, identifiers, numbers,
 * error codes, ~15% Chinese, in sessions of SESSION_SIZE messages with increasing times, with query
 * terms at known rates and a few planted needles; and the query classes asked of it.
 */
import type { ShadowMessageInput } from '@dsh-shadow/store'
import { rng } from '@dsh-shadow/testing'

export const SESSION_SIZE = 10_000
export const T0 = Date.UTC(2026, 0, 5, 8, 0, 0)

export const sessionId = (index: number): string => `bench-s${String(index).padStart(3, '0')}`

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
export const NOUNS = ['Request', 'Connection', 'Session', 'Order', 'Invoice', 'Payment', 'Token', 'Cache', 'Config', 'Schema', 'Migration', 'Job', 'Queue', 'Worker', 'Header', 'Payload', 'Ledger', 'Coupon', 'Refund', 'User', 'Account', 'Report', 'Metric', 'Batch', 'Snapshotter', 'Lease', 'Cursor', 'Webhook', 'Signature', 'Route', 'Policy', 'Quota', 'Shard', 'Replica', 'Bucket', 'Upload', 'Thumbnail', 'Digest', 'Event', 'Stream']
const SUFFIXES = ['', '', '', 'Timeout', 'Async', 'Once', 'Batch', 'Safe', 'WithRetry', 'Internal']
const IDENTIFIERS: string[] = []
for (const suffix of SUFFIXES) for (const noun of NOUNS) for (const verb of VERBS) IDENTIFIERS.push(`${verb}${noun}${suffix}`)
// A fixed, shuffled-looking order so Zipf ranks are not alphabetical.
export const IDENTS = IDENTIFIERS.map((name, index) => ({ name, key: (index * 2_654_435_761) % 4_294_967_291 })).toSorted((a, b) => a.key - b.key).map(entry => entry.name)

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
export const COMMON_TERMS = ['deprecated', 'flaky', 'snapshot'] // each in ~10% of messages
export const MEDIUM_TERMS = ['idempotency', 'backpressure', 'tombstone'] // each in ~0.4% of messages
export const PHRASES = ['connection pool exhausted', 'retry budget exceeded', 'lease renewal failed']

/** Planted needles: global message positions (the store of size N holds positions < N). */
export const NEEDLES: ReadonlyArray<{ text: string; at: readonly number[] }> = [
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

export class Generator {
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

export interface QueryClass {
  readonly name: string
  readonly session: boolean
  readonly queries: readonly string[]
}
export const CLASSES: readonly QueryClass[] = [
  { name: 'rare', session: false, queries: NEEDLES.map(needle => needle.text) },
  { name: 'medium', session: false, queries: [...MEDIUM_TERMS, IDENTS[150]!] },
  { name: 'common', session: false, queries: COMMON_TERMS },
  { name: 'multi-word', session: false, queries: [...PHRASES, 'why did the migration transaction fail'] },
  { name: 'path', session: false, queries: ['db/pool', 'auth/middleware', 'payments/refund.ts', 'queue/worker'] },
  { name: 'cjk', session: false, queries: ['连接池耗尽', '数据库迁移', '内存泄漏', '证书过期'] },
  { name: 'session', session: true, queries: [MEDIUM_TERMS[0]!, COMMON_TERMS[0]!, PHRASES[0]!, 'db/pool', '数据库迁移'] },
]
