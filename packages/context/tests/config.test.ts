/**
 * Config at hostile values: each plugin refuses, with an error naming the key, what its schema's
 * range checks let through (NaN) and what Node cannot honour (a timer past 2^31 − 1 ms).
 */
import { describe, expect, it } from 'vitest'
import { resolveEngineConfig, ShadowCaptureConfigSchema } from '../src/index.ts'

// Node's longest timer (a longer one fires after 1 ms)
const MAX_TIMER_MS = 2 ** 31 - 1

describe('engine config', () => {
  it('refuses NaN for every ratio (a NaN threshold counted every step as over it: a pass at every step)', () => {
    for (const key of ['thresholdRatio', 'retainRatio', 'minRegionRatio', 'currentTurnRatio', 'maskHitRatio', 'rollupRatio']) {
      expect(() => resolveEngineConfig({ [key]: Number.NaN }), key).toThrow(new RegExp(`${key} must be a number, not NaN`))
    }
    // the edges of each range stay valid
    expect(resolveEngineConfig({ thresholdRatio: 1, retainRatio: 0, minRegionRatio: 0, currentTurnRatio: 0, maskHitRatio: 1, rollupRatio: 0 }).thresholdRatio).toBe(1)
  })
})

describe('capture config', () => {
  it('refuses a retention interval or batch delay longer than Node can time (a 30-day interval ran retention every millisecond)', () => {
    expect(() => ShadowCaptureConfigSchema({ retention: { sessionBytes: 1_000, intervalMinutes: 30 * 24 * 60 } })).toThrow(/intervalMinutes/)
    expect(() => ShadowCaptureConfigSchema({ batchDelayMs: MAX_TIMER_MS + 1 })).toThrow(/batchDelayMs/)
    expect(ShadowCaptureConfigSchema({ retention: { intervalMinutes: Math.floor(MAX_TIMER_MS / 60_000) }, batchDelayMs: MAX_TIMER_MS }).batchDelayMs).toBe(MAX_TIMER_MS)
  })
})

describe('unknown options', () => {
  it('are refused by every plugin, naming the option and the ones it knows (a misspelt one silently kept the default)', async () => {
    const { ShadowCapture, ShadowRecall, ShadowContextReader, ShadowWeb } = await import('../src/index.ts')
    const preset = (await import('../src/rows/preset.ts')).default
    expect(() => resolveEngineConfig({ treshold: 0.5 } as never)).toThrow(/ShadowEngineConfig: unknown option "treshold" \(known: thresholdRatio,/)
    // refused before the plugin touches its context (or a store): no context is needed to see it
    const ctx = {} as never
    expect(() => new ShadowCapture(ctx, { retention: { maxAge: 30 } } as never)).toThrow(/ShadowCaptureConfig.retention: unknown option "maxAge"/)
    expect(() => new ShadowCapture(ctx, { redactPattern: ['x'] } as never)).toThrow(/ShadowCaptureConfig: unknown option "redactPattern"/)
    expect(() => new ShadowRecall(ctx, { scopes: 'workspace' } as never)).toThrow(/ShadowRecallConfig: unknown option "scopes"/)
    expect(() => new ShadowContextReader(ctx, { store: 'x.db' } as never)).toThrow(/ShadowContextReaderConfig: unknown option "store"/)
    expect(() => ShadowWeb.apply(ctx, { projections: false } as never)).toThrow(/ShadowWebConfig: unknown option "projections"/)
    expect(() => preset.apply(ctx, { engines: {} } as never)).toThrow(/shadow-context preset row: unknown option "engines"/)
    // the offline try model's row too (a misspelt window ran the script at 16k)
    const tryModel = (await import('../src/rows/try-model.ts')).default
    expect(() => tryModel.apply(ctx, { contextWindw: 8_000 } as never)).toThrow(/shadow-try-model row: unknown option "contextWindw"/)
  })
})
