import { describe, expect, it } from 'vitest'
import { chineseNumber, describeWindow, TimeExpressionResolver } from '../src/when.ts'

// Asked on Thursday 2026-03-12 at 15:30 UTC; the session began on Tuesday 2026-03-10 at 09:00.
const NOW = Date.UTC(2026, 2, 12, 15, 30)
const START = Date.UTC(2026, 2, 10, 9, 0)
const resolver = new TimeExpressionResolver({ now: NOW, sessionStart: START })

function reading(query: string): string | undefined {
  const { window } = resolver.resolve(query)
  return window === undefined ? undefined : describeWindow(window)
}

describe('TimeExpressionResolver', () => {
  it.each([
    ['what did we decide yesterday about the cache', '2026-03-11 00:00–24:00 UTC'],
    ['what did we change this morning', '2026-03-12 05:00–12:00 UTC'],
    ['the port we picked yesterday evening', '2026-03-11 17:00–24:00 UTC'],
    ['what failed on the first evening', '2026-03-10 17:00–24:00 UTC'],
    ['what did we run on day 2 before noon', '2026-03-11 00:00–12:00 UTC'],
    ['the error two days ago', '2026-03-10 00:00–24:00 UTC'],
    ['what broke 3 hours ago', '2026-03-12 11:30–13:30 UTC'],
    ['anything in the last 2 hours', '2026-03-12 13:30–15:30 UTC'],
    ['what did we say on Monday', '2026-03-09 00:00–24:00 UTC'],
    ['what did we say last Tuesday', '2026-03-03 00:00–24:00 UTC'],
    ['the plan from last week', '2026-03-02 00:00–2026-03-09 00:00 UTC'],
    ['what happened on March 10', '2026-03-10 00:00–24:00 UTC'],
    ['what happened on 2026-03-11', '2026-03-11 00:00–24:00 UTC'],
    ['what happened last night', '2026-03-11 18:00–2026-03-12 06:00 UTC'],
    ['昨天我们决定了什么', '2026-03-11 00:00–24:00 UTC'],
    ['前天的数据库迁移', '2026-03-10 00:00–24:00 UTC'],
    ['今天上午改了哪个配置', '2026-03-12 00:00–12:00 UTC'],
    ['昨晚的报错', '2026-03-11 17:00–24:00 UTC'],
    ['上周三讨论的方案', '2026-03-04 00:00–24:00 UTC'],
    ['上周的计划', '2026-03-02 00:00–2026-03-09 00:00 UTC'],
    ['三月十日的日志', '2026-03-10 00:00–24:00 UTC'],
    ['3月11号的报错', '2026-03-11 00:00–24:00 UTC'],
    ['第二天晚上的测试', '2026-03-11 17:00–24:00 UTC'],
    ['两天前的超时设置', '2026-03-10 00:00–24:00 UTC'],
    ['三小时前的错误', '2026-03-12 11:30–13:30 UTC'],
  ])('%s → %s', (query, expected) => {
    expect(reading(query)).toBe(expected)
  })

  it('takes the time words out of the query and leaves other queries alone', () => {
    expect(resolver.resolve('what did we decide yesterday about the cache').rest).toBe('what did we decide about the cache')
    expect(resolver.resolve('昨天我们决定了什么').rest).toBe('我们决定了什么')
    expect(resolver.resolve('connection pool size')).toEqual({ rest: 'connection pool size' })
    expect(resolver.resolve('the timeout of the daily job')).toEqual({ rest: 'the timeout of the daily job' })
  })

  it('needs the session start for "day N" and reads dates ahead as last year', () => {
    expect(new TimeExpressionResolver({ now: NOW }).resolve('on day 2').window).toBeUndefined()
    expect(reading('the release on December 24')).toBe('2025-12-24 00:00–24:00 UTC')
  })

  it('honours a UTC offset for calendar days', () => {
    const tokyo = new TimeExpressionResolver({ now: NOW, offsetMinutes: 540 })
    expect(describeWindow(tokyo.resolve('yesterday').window!, 540)).toBe('2026-03-12 00:00–24:00 UTC+09:00')
  })

  it('reads Chinese numerals', () => {
    expect([chineseNumber('三'), chineseNumber('十'), chineseNumber('十二'), chineseNumber('二十'), chineseNumber('两'), chineseNumber('31')]).toEqual([3, 10, 12, 20, 2, 31])
  })
})
