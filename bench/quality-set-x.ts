/**
 * A cross-lingual-heavy slice of bench:quality, held out from the en↔zh glossary: written after
 * the glossary was committed (and frozen), by a generator of its own. Four bilingual sessions
 * (a shop, a mobile app, a data pipeline, infrastructure) where a fact is said in one language
 * and asked about in the other, each with a distractor in the question's language that shares
 * its topic but not the answer; plus same-language control questions whose distractor holds the
 * question's words in the other language (the bridge must not push the real answer down).
 *
 * The facts and questions were phrased as a user would, not chosen from the glossary: several
 * question words are not in it (coupon, lag, deduplication, blank, warehouse …), so some
 * questions are expected to miss. The slice reports how many of its question words the glossary
 * knows, next to the figures.
 */
import type { ShadowMessageInput } from '@dsh-shadow/store'
import type { TestQuestion, TestSession } from './quality-set-b.ts'

interface Fact {
  /** The message that answers. */
  readonly text: string
  readonly query: string
  /** A message in the question's language about the same topic that does not answer it. */
  readonly distractor: string
  /** Cross-lingual (answer in the other language) or a same-language control. */
  readonly kind: 'cross-lingual' | 'same-language'
}

interface Project {
  readonly id: string
  readonly facts: readonly Fact[]
}

const PROJECTS: readonly Project[] = [
  {
    id: 'shop',
    facts: [
      { kind: 'cross-lingual', text: '支付回调的重试次数改成 5 次，每次间隔 30 秒。', query: 'how many times do we retry the payment callback?', distractor: 'The payment page layout looks fine on mobile now.' },
      { kind: 'cross-lingual', text: '订单表加了一个 status 索引，查询从 2 秒降到 80 毫秒。', query: 'which index did we add to the orders table?', distractor: 'Orders from the test tenant should be hidden in the admin list.' },
      { kind: 'cross-lingual', text: 'We moved the session cache from Redis to local memory for the staging environment.', query: '预发环境的会话缓存放在哪里？', distractor: '预发环境今天下午会重新部署一次。' },
      { kind: 'cross-lingual', text: 'The refund job runs every night at 2am and writes a report to S3.', query: '退款任务每天几点运行？', distractor: '退款按钮的颜色和下单按钮不一致。' },
      { kind: 'cross-lingual', text: '优惠券提前过期的问题是时区导致的，服务器用的是 UTC。', query: 'why were coupons expiring early?', distractor: 'Coupons should not stack with the member discount.' },
      { kind: 'cross-lingual', text: 'Login fails for users with a plus sign in the email address; the validator regex is too strict.', query: '邮箱里有加号的用户为什么登录失败？', distractor: '用户反馈登录页面加载有点慢。' },
      { kind: 'same-language', text: 'The checkout timeout is 20 seconds for card payments.', query: 'what is the checkout timeout for card payments?', distractor: '支付页面的超时提示文案需要改一下。' },
      { kind: 'same-language', text: '商品列表的缓存命中率现在是 92%。', query: '缓存命中率是多少？', distractor: 'We should add a cache in front of the product list API.' },
    ],
  },
  {
    id: 'mobile',
    facts: [
      { kind: 'cross-lingual', text: '安卓安装包超过了 150MB，主要是图片资源没有压缩。', query: 'why is the android package so large?', distractor: 'The android build needs the new signing key from ops.' },
      { kind: 'cross-lingual', text: 'Push notifications stopped on iOS because the APNs certificate expired on Monday.', query: 'iOS 推送通知为什么停了？', distractor: 'iOS 的设置页面要加一个深色模式开关。' },
      { kind: 'cross-lingual', text: '首页白屏是因为接口超时以后没有兜底数据。', query: 'what caused the blank home screen?', distractor: 'The home screen banner should rotate every five seconds.' },
      { kind: 'cross-lingual', text: 'Crash rate dropped to 0.3% after we fixed the null pointer in the image loader.', query: '修复空指针之后崩溃率是多少？', distractor: '崩溃日志要同步到新的监控平台。' },
      { kind: 'cross-lingual', text: '深色模式下按钮文字看不清，设计同意改成白色。', query: 'what color will the button text be in dark mode?', distractor: 'Dark mode is enabled by default for new installs.' },
      { kind: 'cross-lingual', text: 'We will release version 2.4 to the app store on Thursday after QA signs off.', query: '2.4 版本什么时候发布？', distractor: '2.3 版本的崩溃问题已经修好了。' },
      { kind: 'same-language', text: 'The image cache on Android is capped at 64 MB.', query: 'how big is the image cache on android?', distractor: '图片缓存的清理逻辑放到后台线程里。' },
      { kind: 'same-language', text: '推送的点击率是 4.1%，比上个月高一点。', query: '推送点击率多少？', distractor: 'Push click tracking needs a new analytics event.' },
    ],
  },
  {
    id: 'pipeline',
    facts: [
      { kind: 'cross-lingual', text: 'Kafka 消费者的延迟最高到了 12 分钟，原因是分区数太少。', query: 'what caused the high latency of the kafka consumers?', distractor: 'Kafka topics are created by terraform, not by hand.' },
      { kind: 'cross-lingual', text: 'The nightly ETL job failed because the disk on worker-3 was full.', query: '夜间的 ETL 任务为什么失败了？', distractor: 'ETL 的配置文件放在 config 目录下。' },
      { kind: 'cross-lingual', text: '数据仓库的表分区改成按天，保留 90 天。', query: 'how long do we keep the warehouse partitions?', distractor: 'The warehouse dashboard shows yesterday\'s numbers after 8am.' },
      { kind: 'cross-lingual', text: 'The schema migration for the events table is scheduled for Saturday night, with a rollback script ready.', query: '事件表的迁移安排在什么时候？有回滚脚本吗？', distractor: '事件表的字段说明写在文档里了。' },
      { kind: 'cross-lingual', text: '去重逻辑用的是消息 ID 加时间戳的哈希。', query: 'how does deduplication work?', distractor: 'Deduplication should also run on the backfill path.' },
      { kind: 'cross-lingual', text: 'Throughput is about 40k events per second on three brokers.', query: '现在的吞吐量是多少？', distractor: '吞吐量的监控面板需要加一个告警。' },
      { kind: 'same-language', text: 'The backfill for March finished in 6 hours on 12 workers.', query: 'how long did the march backfill take?', distractor: '三月的数据回填需要先停掉实时任务。' },
      { kind: 'same-language', text: '实时任务的检查点间隔是 60 秒。', query: '检查点间隔是多少？', distractor: 'Checkpoint files are stored in the object store bucket.' },
    ],
  },
  {
    id: 'infra',
    facts: [
      { kind: 'cross-lingual', text: '生产环境的数据库连接池上限调到了 200。', query: 'what is the connection pool limit on the production database?', distractor: 'The production database runs on the large instance class now.' },
      { kind: 'cross-lingual', text: 'The TLS certificate for the API gateway expires on June 3rd; renewal is automated with cert-manager.', query: '网关证书什么时候过期？', distractor: '网关的限流规则要再放宽一点。' },
      { kind: 'cross-lingual', text: '日志保留时间从 7 天改成了 30 天，因为审计需要。', query: 'why did we extend log retention?', distractor: 'Log lines should include the request id.' },
      { kind: 'cross-lingual', text: 'Autoscaling kicks in when CPU stays above 70% for five minutes.', query: '自动扩缩容的触发条件是什么？', distractor: '自动扩缩容的最大副本数还没定。' },
      { kind: 'cross-lingual', text: '防火墙规则只允许办公网访问管理后台。', query: 'who can access the admin backend through the firewall?', distractor: 'The admin backend got a new sidebar menu.' },
      { kind: 'cross-lingual', text: 'Backups run every six hours and are copied to a second region.', query: '备份多久跑一次？', distractor: '备份的恢复演练下个月再做。' },
      { kind: 'same-language', text: 'The staging cluster has 3 nodes with 16 GB of memory each.', query: 'how much memory do the staging cluster nodes have?', distractor: '预发集群的节点内存告警阈值是 80%。' },
      { kind: 'same-language', text: '告警通知现在发到值班群，不再发邮件。', query: '告警通知发到哪里？', distractor: 'Alert notifications need a runbook link.' },
    ],
  },
]

/** Everyday messages of a bilingual team: the background the facts sit in. */
const FILLER = [
  'Run the tests again please.', 'All tests pass on my machine.', 'I pushed the branch, can you review it?', 'Looks good, merging now.',
  'The build is green.', 'Deploy to staging when you are ready.', 'Let me check the logs first.', 'I restarted the service.',
  'Can you update the README?', 'The config change is in the pull request.', 'We need a ticket for this.', 'I will look at it after lunch.',
  '测试又跑了一遍，都通过了。', '代码已经提交了，帮我看一下。', '合并之前先跑一下测试。', '今天先部署到预发环境。', '我看一下日志。',
  '服务已经重启了。', '文档需要更新一下。', '这个配置改动在合并请求里。', '这个问题先记一个工单。', '下午开会讨论一下。',
  'ok', '好的', 'thanks', '收到', 'done', '没问题',
]

type Rng = () => number

function rng(seed: number): Rng {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

const START = Date.UTC(2026, 5, 1, 8, 0)

function message(sessionId: string, seq: number, time: number, role: 'user' | 'assistant', text: string): ShadowMessageInput {
  const eventType = role === 'user' ? 'user/message' : 'assistant/message'
  return { sessionId, seq, eventType, role, sourceKind: role, turn: seq, step: 1, toolName: null, callId: null, time, eventJson: JSON.stringify({ type: eventType, seq, data: { text } }), text, tokens: Math.ceil(text.length / 3) }
}

export function crossLingualSet(): { sessions: TestSession[]; questions: TestQuestion[] } {
  const sessions: TestSession[] = []
  const questions: TestQuestion[] = []
  PROJECTS.forEach((project, index) => {
    const r = rng(7_001 + index)
    const sessionId = `x-${project.id}`
    const messages: ShadowMessageInput[] = []
    let time = START
    const say = (text: string): number => {
      time += 60_000 + Math.floor(r() * 20 * 60_000)
      const seq = messages.length + 1
      messages.push(message(sessionId, seq, time, seq % 2 === 1 ? 'user' : 'assistant', text))
      return seq
    }
    const relevant = new Map<Fact, number>()
    // facts and distractors in a shuffled order, each among a few filler messages
    const planted = project.facts.flatMap(fact => [{ fact, answer: true }, { fact, answer: false }]).toSorted(() => r() - 0.5)
    for (const item of planted) {
      for (let filler = 2 + Math.floor(r() * 4); filler > 0; filler -= 1) say(FILLER[Math.floor(r() * FILLER.length)]!)
      const seq = say(item.answer ? item.fact.text : item.fact.distractor)
      if (item.answer) relevant.set(item.fact, seq)
    }
    for (let filler = 0; filler < 6; filler += 1) say(FILLER[Math.floor(r() * FILLER.length)]!)
    sessions.push({ sessionId, messages })
    project.facts.forEach((fact, at) => {
      questions.push({
        id: `${sessionId}-${at + 1}`, sessionId, query: fact.query, category: fact.kind, askedAt: time + 60_000,
        relevant: [relevant.get(fact)!], need: 'any',
      })
    })
  })
  return { sessions, questions }
}
