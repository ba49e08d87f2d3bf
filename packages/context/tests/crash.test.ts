/**
 * The CI slice of `bench:crash`: one SIGKILL at every failpoint and one timed kill, each followed
 * by the same checks as the full run (nothing lost, duplicated or wrongly elided; the log replays).
 */
import { describe, expect, it } from 'vitest'
import { crashRun, FAILPOINTS } from './fixtures/crash-driver.ts'
import { cleanupAfterEach } from './support.ts'

const { newHome } = cleanupAfterEach('shadow-crash-')

describe('kill -9 at every failpoint', () => {
  it('loses, duplicates and wrongly elides nothing, and always resumes', async () => {
    const schedule = [...FAILPOINTS, 'random'] as const
    const outcome = await crashRun({ home: newHome(), kills: schedule.length, seed: 7, schedule })
    console.log(`crash slice: ${JSON.stringify(outcome)}`)
    expect(outcome.kills).toBe(schedule.length)
    expect(Object.keys(outcome.byPoint).toSorted()).toEqual([...schedule].toSorted())
    expect(outcome).toMatchObject({ lost: 0, duplicated: 0, mismatched: 0, wronglyElided: 0, replayFailures: 0 })
    expect(outcome.checkpointsChecked).toBeGreaterThan(0)
  }, 240_000)
})
