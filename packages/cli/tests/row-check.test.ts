/** doctor's check of our rows' options, on composed configs as `dsh --dump-config` prints them. */
import { describe, expect, it } from 'vitest'
import { rowOptionsCheck } from '../src/row-check.ts'

const DUMP = [
  '# == @deepseek-ai/dsh-base',
  '- id: timer',
  "  name: '@deepseek-ai/cordis-plugin-timer'",
  '# == dsh-shadow-context',
  '- id: shadow-capture',
  '  name: dsh-shadow-context/rows/capture',
  '  config:',
  '    retention:',
  '      maxAgeDays: 30',
  '- id: shadow-compaction',
  '  name: dsh-shadow-context/rows/engine',
  '- id: shadow-recall',
  '  name: dsh-shadow-context/rows/recall',
  '  config:',
  '    scope: workspace',
  '',
].join('\n')

describe('doctor: row options', () => {
  it('passes the options our rows take, and names a misspelt or mistyped one with its row', () => {
    expect(rowOptionsCheck('headless', DUMP, '/p.yml')).toEqual({ check: 'headless: row options', ok: true, detail: '3 row(s) of ours take their options' })
    const misspelt = rowOptionsCheck('headless', DUMP.replace('maxAgeDays: 30', 'maxAge: 30'), '/p.yml')
    expect(misspelt.ok).toBe(false)
    expect(misspelt.detail).toMatch(/^row shadow-capture \(dsh-shadow-context\/rows\/capture\): ShadowCaptureConfig\.retention: unknown option "maxAge"/)
    expect(misspelt.fix).toContain('/p.yml')
    const engine = rowOptionsCheck('headless', DUMP.replace("  name: dsh-shadow-context/rows/engine", "  name: dsh-shadow-context/rows/engine\n  config: { treshold: 0.3 }"), '/p.yml')
    expect(engine.detail).toMatch(/row shadow-compaction .*unknown option "treshold"/)
    const mistyped = rowOptionsCheck('headless', DUMP.replace('scope: workspace', 'scope: everything'), '/p.yml')
    expect(mistyped.ok).toBe(false)
    expect(mistyped.detail).toMatch(/^row shadow-recall /)
  })

  it('skips a disabled row, says which row it could not check, and never fails on a dump it cannot read', () => {
    const disabled = DUMP.replace('maxAgeDays: 30', 'maxAge: 30').replace('  name: dsh-shadow-context/rows/capture', '  name: dsh-shadow-context/rows/capture\n  disabled: true')
    expect(rowOptionsCheck('headless', disabled, '/p.yml')).toMatchObject({ ok: true, detail: '2 row(s) of ours take their options' })
    const expression = rowOptionsCheck('headless', DUMP.replace('maxAgeDays: 30', 'maxAgeDays: !!js/function "() => 30"'), '/p.yml')
    expect(expression).toMatchObject({ ok: true, detail: '2 row(s) of ours take their options; not checked (a !!js value): shadow-capture' })
    expect(rowOptionsCheck('headless', '- a: [', '/p.yml')).toMatchObject({ ok: true })
    expect(rowOptionsCheck('headless', '- a: [', '/p.yml').detail).toMatch(/^not checked: /)
  })
})
