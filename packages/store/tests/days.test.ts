import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dayKey, dayNumber, MAX_REFERRED_DAYS, referredDays, windowDays } from '../src/days.ts'
import { ShadowStore, type ShadowMessageInput } from '../src/index.ts'
import { SCHEMA_VERSION } from '../src/sqlite/schema.ts'
import { message, SQLITE_BEFORE_V7, tempDir } from './helpers.ts'
import { TARGETS } from './targets.ts'

const at = (day: number, hour: number): number => Date.UTC(2026, 2, day, hour)
const d = (day: number): number => dayNumber(at(day, 12))
const said = (sessionId: string, seq: number, text: string, time: number): ShadowMessageInput => message(sessionId, seq, text, { time })

describe('the days a message refers to', () => {
  it('resolves its time words against its own time, and leaves its own day out', () => {
    // 2026-03-11 is a Wednesday
    expect(referredDays('yesterday we decided to keep the pool at 20', at(11, 10))).toEqual([d(10)])
    expect(referredDays('昨天我们决定把连接池设为 20', at(11, 10))).toEqual([d(10)])
    expect(referredDays('as we said last Friday, and the day before yesterday', at(11, 10)).toSorted()).toEqual([d(6), d(9)])
    expect(referredDays('tomorrow we deploy; 后天再看', at(11, 10))).toEqual([d(12), d(13)])
    expect(referredDays('see the notes of 2026-03-02', at(11, 10))).toEqual([d(2)])
    expect(referredDays('三月五日的会议纪要', at(11, 10))).toEqual([d(5)])
    expect(referredDays('today we ship', at(11, 10))).toEqual([])
    // questions ask about a day, they do not say what happened on it
    expect(referredDays('What did we decide yesterday about the pool?', at(11, 10))).toEqual([])
    expect(referredDays('昨天定的连接池大小是多少？', at(11, 10))).toEqual([])
    expect(referredDays('Yesterday we chose 20. Should we revisit it tomorrow?', at(11, 10))).toEqual([d(10)])
    expect(referredDays('the pool is at 20', at(11, 10))).toEqual([])
    // a stretch longer than a week is not a reference to each of its days
    expect(referredDays('in the last 10 days nothing broke', at(11, 10))).toEqual([])
    const many = Array.from({ length: 9 }, (_, index) => `2026-02-0${index + 1}`).join(', ')
    expect(referredDays(many, at(11, 10))).toHaveLength(MAX_REFERRED_DAYS)
    expect(dayKey(d(10))).toBe('20260310')
  })

  it('maps a window to the days it overlaps, up to two weeks', () => {
    expect(windowDays(at(10, 17), at(10, 23))).toEqual([d(10)])
    expect(windowDays(at(9, 0), at(11, 0) - 1)).toEqual([d(9), d(10)])
    expect(windowDays(at(1, 0), at(28, 0))).toBeUndefined()
    expect(windowDays(undefined, at(10, 0))).toBeUndefined()
  })
})

describe.each(TARGETS)('a time window finds messages referring to its days on $name', target => {
  let store: ShadowStore
  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    await store.append([
      said('s', 1, 'we looked at the cache eviction today', at(10, 11)),
      said('s', 2, 'yesterday we decided the cache eviction policy is LRU', at(11, 9)),
      said('s', 3, '昨天定的缓存淘汰策略要写进文档', at(11, 10)),
      said('s', 4, 'the cache eviction policy is also in the README', at(12, 9)),
      said('s', 5, 'on Tuesday the cache eviction policy was still FIFO', at(12, 10)),
      said('other', 1, 'yesterday the cache eviction policy of another project changed', at(11, 9)),
    ])
  })
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('a question about 03-10 gets the messages of that day and those that say "yesterday" about it', async () => {
    const result = await store.search('cache eviction policy', { sessionId: 's', timeFrom: at(10, 0), timeTo: at(11, 0) - 1 })
    expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2, 5])
    // 昨天 in Chinese too; other sessions stay out
    const zh = await store.search('缓存淘汰策略', { sessionId: 's', timeFrom: at(10, 0), timeTo: at(11, 0) - 1 })
    // (the glossary also brings the English message of that day, ranked below)
    expect(zh.hits.map(hit => hit.message.seq)).toEqual([3, 1])
    expect(zh.hits.every(hit => hit.message.sessionId === 's')).toBe(true)
  })

  it('a part of a day still takes the messages that refer to the whole day', async () => {
    const evening = await store.search('cache eviction policy', { sessionId: 's', timeFrom: at(10, 17), timeTo: at(11, 0) - 1 })
    expect(evening.hits.map(hit => hit.message.seq).toSorted()).toEqual([2, 5])
  })

  it('a replaced or removed message no longer refers to its day', async () => {
    await store.append([said('s', 5, 'the cache eviction policy was still FIFO', at(12, 10))])
    const result = await store.search('cache eviction policy', { sessionId: 's', timeFrom: at(10, 0), timeTo: at(11, 0) - 1 })
    expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
  })
})

describe('schema v5 migration (SQLite)', () => {
  it('fills message_days from the stored rows of a v4 store, and forget and retention empty it', async () => {
    const dir = tempDir()
    const file = join(dir.path, 'v4.db')
    let store = await ShadowStore.open(file)
    await store.append([
      said('s', 1, 'we looked at the cache eviction today', at(10, 11)),
      said('s', 2, 'yesterday we decided the cache eviction policy is LRU', at(11, 9)),
      said('t', 1, 'yesterday, and tomorrow too', at(11, 9)),
    ])
    await store.close()
    // v4 is v5 without the table (and without v7's columns)
    let raw = new DatabaseSync(file)
    raw.exec(`${SQLITE_BEFORE_V7} DROP TABLE message_days; UPDATE meta SET value = '4' WHERE key = 'schema_version'`)
    raw.close()
    store = await ShadowStore.open(file)
    expect((await store.stats()).schemaVersion).toBe(SCHEMA_VERSION)
    const result = await store.search('cache eviction policy', { sessionId: 's', timeFrom: at(10, 0), timeTo: at(11, 0) - 1 })
    expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([1, 2])
    raw = new DatabaseSync(file, { readOnly: true })
    expect(raw.prepare('SELECT day, id FROM message_days ORDER BY id, day').all().map(row => row['day'])).toEqual([d(10), d(10), d(12)])
    raw.close()
    await store.forget('t')
    await store.close()
    raw = new DatabaseSync(file, { readOnly: true })
    expect(raw.prepare('SELECT day FROM message_days').all().map(row => row['day'])).toEqual([d(10)])
    raw.close()
    dir.cleanup()
  })
})
