import { Worker } from 'node:worker_threads'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, ShadowStoreError } from '../src/index.ts'
import { parseTimeRange } from '../src/time.ts'
import { message, tempDir } from './helpers.ts'

/** referredDays in a worker with a deadline: a loop that never ends cannot be stopped from its own thread. */
function referredDaysWithDeadline(text: string, time: number, deadlineMs: number): Promise<{ ok: true; days: number[] } | { ok: false }> {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    import(workerData.module).then(({ referredDays }) => {
      parentPort.postMessage(referredDays(workerData.text, workerData.time))
    })
  `, { eval: true, workerData: { text, time, module: new URL('../src/days.ts', import.meta.url).href } })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate()
      resolve({ ok: false })
    }, deadlineMs)
    worker.once('message', (days: number[]) => {
      clearTimeout(timer)
      void worker.terminate()
      resolve({ ok: true, days })
    })
    worker.once('error', error => {
      clearTimeout(timer)
      reject(error)
    })
  })
}

const TIME_WORDS = 'yesterday 昨天 last Friday 3 days ago 前天 2026-03-10 March 3 上周五 星期一 3天前 tomorrow 后天. '

describe('referred days under hostile input', () => {
  // generous guards: each of these answers in milliseconds when bounded
  it.each([
    ['1 MB of time words', TIME_WORDS.repeat(Math.ceil(1_000_000 / TIME_WORDS.length)), Date.UTC(2026, 2, 11)],
    // past 2^53 ms a day number plus one is itself: a loop over the days of a window never ends
    ['a time of 1e300', 'yesterday we chose 20, and 3 days ago 10', 1e300],
    ['the last representable time', 'tomorrow we ship, and the day after tomorrow we rest', 8.64e15],
  ])('answers within 5 s: %s', async (_name, text, time) => {
    const result = await referredDaysWithDeadline(text, time, 5_000)
    expect(result.ok).toBe(true)
    // every day it names is a day a Date can spell (PostgreSQL keys days by their date)
    if (result.ok) for (const day of result.days) expect(Number.isNaN(new Date(day * 86_400_000).getTime())).toBe(false)
  })
})

describe('a store given times past what a Date holds', () => {
  const dir = tempDir()
  let store: ShadowStore
  beforeAll(async () => {
    store = await ShadowStore.open(join(dir.path, 'shadow.db'))
  })
  afterAll(() => {
    store.close()
    dir.cleanup()
  })

  it('refuses such a message with a typed error and writes nothing', async () => {
    const error = await store.append([message('s-far', 1, 'yesterday we chose 20', { time: 1e300 })]).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ShadowStoreError)
    expect((error as ShadowStoreError).code).toBe('INVALID_INPUT')
    expect(await store.read({ sessionId: 's-far' }, { limit: 10 }).catch(() => [])).toEqual([])
  })

  it('refuses a search window that is not a pair of times with a typed error', async () => {
    await store.append([message('s-near', 1, 'we chose a pool of 20')])
    for (const window of [{ timeFrom: Number.NaN, timeTo: 1 }, { timeFrom: 0, timeTo: 1e300 }, { timeFrom: '0' as unknown as number }]) {
      const error = await store.search('pool', { sessionId: 's-near', ...window }).catch((caught: unknown) => caught)
      expect(error, JSON.stringify(window)).toBeInstanceOf(ShadowStoreError)
      expect((error as ShadowStoreError).code).toBe('INVALID_INPUT')
    }
  })
})

describe('since/until past what a Date holds', () => {
  it('is refused with a typed error, inverted or not', () => {
    for (const [from, to] of [[2e300, 1e300], [1e300, 2e300], [0, 8.64e15 + 1]]) {
      let error: unknown
      try {
        parseTimeRange(from, to, Date.UTC(2026, 2, 11))
      } catch (caught) {
        error = caught
      }
      expect(error, `${from}..${to}`).toBeInstanceOf(ShadowStoreError)
      expect((error as ShadowStoreError).code).toBe('INVALID_INPUT')
    }
  })
})
