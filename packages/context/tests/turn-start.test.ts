import type { Session } from '@deepseek-ai/dsh-session'
import { describe, expect, it } from 'vitest'
import { currentTurnStart } from '../src/recall/plugin.ts'

const session = (events: Array<{ type: string; seq: number }>): Pick<Session, 'events'> => ({ events }) as unknown as Pick<Session, 'events'>

describe('currentTurnStart', () => {
  it('is the open turn\'s start, nothing between turns, and the latest checkpoint of a turn that compacted itself', () => {
    expect(currentTurnStart(session([{ type: 'turn/start', seq: 1 }, { type: 'user/message', seq: 2 }, { type: 'turn/end', seq: 3 }]))).toBeUndefined()
    expect(currentTurnStart(session([{ type: 'turn/end', seq: 3 }, { type: 'turn/start', seq: 4 }, { type: 'user/message', seq: 5 }, { type: 'tool/result', seq: 6 }]))).toBe(4)
    // a long turn: what its checkpoints took off the surface earlier in the turn can be recalled
    expect(currentTurnStart(session([{ type: 'turn/start', seq: 4 }, { type: 'tool/result', seq: 5 }, { type: 'compaction/summary', seq: 9 }, { type: 'tool/result', seq: 10 }, { type: 'compaction/summary', seq: 14 }, { type: 'tool/result', seq: 15 }]))).toBe(14)
    // a checkpoint of an earlier turn does not move the open turn's start
    expect(currentTurnStart(session([{ type: 'compaction/summary', seq: 2 }, { type: 'turn/end', seq: 3 }, { type: 'turn/start', seq: 4 }, { type: 'user/message', seq: 5 }]))).toBe(4)
  })
})
