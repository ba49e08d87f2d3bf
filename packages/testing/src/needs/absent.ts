/**
 * Never-discussed questions for generated sessions: a turn whose prompt asks about a tool or setting
 * the session never mentioned. The right outcome is "not found"; a proactive recall that fires before
 * it is a false positive. Terms come from a general list of infrastructure names; a term the session
 * happens to mention is skipped (checked on the whole session text), so the label is always true.
 */
import { rng } from '../scenario.ts'
import { absentConflict, type AbsentQuestion, type AgentTurn, type Need } from './schema.ts'

interface Topic { readonly term: string; readonly en: string; readonly zh: string }

const TOPICS: readonly Topic[] = [
  { term: 'Terraform', en: 'state backend', zh: '状态后端' },
  { term: 'Kafka', en: 'topic retention', zh: '主题保留时间' },
  { term: 'GraphQL', en: 'schema stitching', zh: '模式拼接' },
  { term: 'Elasticsearch', en: 'index mapping', zh: '索引映射' },
  { term: 'RabbitMQ', en: 'dead-letter exchange', zh: '死信交换机' },
  { term: 'Prometheus', en: 'scrape interval', zh: '抓取间隔' },
  { term: 'Helm', en: 'chart version', zh: '图表版本' },
  { term: 'Istio', en: 'mTLS mode', zh: '双向认证模式' },
  { term: 'Cassandra', en: 'replication factor', zh: '副本因子' },
  { term: 'Snowflake', en: 'warehouse size', zh: '仓库规格' },
  { term: 'Datadog', en: 'monitor thresholds', zh: '监控阈值' },
  { term: 'Keycloak', en: 'realm settings', zh: '域设置' },
  { term: 'Consul', en: 'service mesh config', zh: '服务网格配置' },
  { term: 'Nginx', en: 'upstream keepalive', zh: '上游长连接' },
  { term: 'Grafana', en: 'dashboard folder', zh: '仪表盘目录' },
  { term: 'MinIO', en: 'bucket lifecycle', zh: '存储桶生命周期' },
]

export interface AbsentPlanOptions {
  readonly seed: number
  readonly count: number
  readonly chineseRatio: number
}

/**
 * Replace `count` turns in the later half (turns without facts or needs) by question-only turns and
 * return the questions. Uses its own random stream, so the rest of the session is unchanged.
 */
export function plantAbsentQuestions(turns: AgentTurn[], needs: readonly Need[], busy: ReadonlySet<number>, options: AbsentPlanOptions): AbsentQuestion[] {
  const random = rng(options.seed * 104_729 + 3)
  const free = turns.filter(turn => turn.turn > turns.length / 2 && !busy.has(turn.turn) && !needs.some(need => need.turn === turn.turn)).map(turn => turn.turn)
  const topics = TOPICS.toSorted(() => random() - 0.5)
  const questions: AbsentQuestion[] = []
  for (const topic of topics) {
    if (questions.length >= options.count || free.length === 0) break
    const turn = free.splice(Math.floor(random() * free.length), 1)[0]!
    const zh = random() < options.chineseRatio
    const prompt = zh ? `我们之前对 ${topic.term} 的${topic.zh}是怎么定的？按那个来配置。` : `What did we decide about the ${topic.term} ${topic.en}? Configure it that way.`
    const question: AbsentQuestion = { id: `a${questions.length + 1}-${topic.term.toLowerCase()}`, turn, term: topic.term, query: zh ? `${topic.term} ${topic.zh}` : `${topic.term} ${topic.en} decision` }
    const replaced: AgentTurn = { turn, prompt, steps: [{ text: zh ? '我查了一下之前的记录再作答。' : 'Checked the history before answering.' }] }
    const previous = turns[turn - 1]!
    turns[turn - 1] = replaced
    if (absentConflict({ turns, needs }, question) !== undefined) {
      turns[turn - 1] = previous
      continue
    }
    questions.push(question)
  }
  return questions.toSorted((a, b) => a.turn - b.turn)
}
