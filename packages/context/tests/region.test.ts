import { describe, expect, it } from 'vitest'
import { frozenEnd, selectRegion, selectRollup, type PolicyNode } from '../src/engine/region.ts'

/** Shorthand: c = checkpoint, T = turn start, a = assistant with an open tool call after it, r = its result, m = plain message. */
function nodes(spec: string, tokens = 100): PolicyNode[] {
  let open = 0
  return [...spec].map((kind, index) => {
    const node: PolicyNode = { seq: index * 2, tokens, checkpoint: kind === 'c', turnStart: kind === 'T', balancedBefore: open === 0 }
    if (kind === 'a') open += 1
    if (kind === 'r') open -= 1
    return node
  })
}

describe('RegionPolicy', () => {
  it('starts after the last checkpoint and never folds one in', () => {
    const surface = nodes('ccTmmTmmTmm')
    expect(frozenEnd(surface)).toBe(2)
    const region = selectRegion(surface, { mode: 'pressure', retainTokens: 250, minRegionTokens: 0, balancedAtEnd: true })
    expect(region).toMatchObject({ startIdx: 2 })
    expect(surface.slice(region!.startIdx, region!.endIdx + 1).some(node => node.checkpoint)).toBe(false)
  })

  it('cuts only where no tool call is open', () => {
    // T a r a r m | the tail budget alone would cut between a call and its result
    const surface = nodes('TmmTarararm')
    for (let retain = 0; retain <= 1100; retain += 50) {
      const region = selectRegion(surface, { mode: 'pressure', retainTokens: retain, minRegionTokens: 0, balancedAtEnd: true })
      if (region === null) continue
      const cut = region.endIdx + 1
      expect(cut === surface.length || surface[cut]!.balancedBefore, `retain ${retain}`).toBe(true)
    }
  })

  it('prefers a turn boundary for the tail cut', () => {
    const surface = nodes('TmmmmTmmmm')
    const region = selectRegion(surface, { mode: 'pressure', retainTokens: 300, minRegionTokens: 0, balancedAtEnd: true })
    expect(region).toEqual({ startIdx: 0, endIdx: 4, tokens: 500 })
  })

  it('waits for a useful region under pressure, but not on overflow', () => {
    const surface = nodes('TmTm')
    expect(selectRegion(surface, { mode: 'pressure', retainTokens: 100, minRegionTokens: 1_000, balancedAtEnd: true })).toBeNull()
    expect(selectRegion(surface, { mode: 'overflow', retainTokens: 0, minRegionTokens: 1_000, balancedAtEnd: true })).toEqual({ startIdx: 0, endIdx: 1, tokens: 200 })
  })

  it('on overflow keeps the current turn, or at least the newest unit', () => {
    expect(selectRegion(nodes('TmmTmm'), { mode: 'overflow', retainTokens: 0, minRegionTokens: 0, balancedAtEnd: true })).toMatchObject({ startIdx: 0, endIdx: 2 })
    expect(selectRegion(nodes('Tmmmm'), { mode: 'overflow', retainTokens: 0, minRegionTokens: 0, balancedAtEnd: true })).toMatchObject({ startIdx: 0, endIdx: 3 })
    expect(selectRegion(nodes('T'), { mode: 'overflow', retainTokens: 0, minRegionTokens: 0, balancedAtEnd: true })).toBeNull()
  })

  it('rolls up the oldest checkpoints only when they outgrow their budget', () => {
    expect(selectRollup(nodes('cccTmm'), 1_000)).toBeNull()
    expect(selectRollup(nodes('cccccTmm'), 300)).toEqual({ startIdx: 0, endIdx: 2, tokens: 300 })
    expect(selectRollup(nodes('cTmm'), 10)).toBeNull()
  })
})
