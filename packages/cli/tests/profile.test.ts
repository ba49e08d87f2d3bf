/** The profile patch blocks install merges and uninstall takes out: the user's rows are never touched. */
import { describe, expect, it } from 'vitest'
import { dropEmptyList, hasBlock, HMR_BLOCK, hmrBlock, nodeIsEnough, patchShape, restoredPatch, ROWS_BLOCK, rowsBlock, withoutBlock } from '../src/profile.ts'

const DSH_HEADER = '# Your patch layer for this dsh profile, applied after every bundle layer:\n# a top-level YAML array of loader patch entries.\n[]\n'
const HEADLESS = '# comment\n- id: compaction-basic\n  disabled: true\n- insert:\n    - id: shadow-capture\n      name: dsh-shadow-context/rows/capture\n'
const USER = '# mine\n- id: agent-default-model\n  config: { provider: deepseek, model: deepseek-chat }\n'

/** What install writes, given the file as it is. */
function merged(before: string, profile: 'headless' | 'web'): string {
  let base = withoutBlock(withoutBlock(before, ROWS_BLOCK), HMR_BLOCK)
  if (patchShape(base) === 'empty-list') base = dropEmptyList(base)
  return `${base.trimEnd()}${base.trim().length === 0 ? '' : '\n'}${hmrBlock()}${rowsBlock(profile, HEADLESS)}`
}

describe('profile patch blocks', () => {
  it('replaces dsh\'s empty [] with a list, and uninstall puts [] back', () => {
    const once = merged(DSH_HEADER, 'headless')
    expect(once).not.toMatch(/^\[\]$/m)
    expect(patchShape(once)).toBe('sequence')
    expect(once).toContain('- id: compaction-basic\n  disabled: true')
    expect(once).not.toContain('# comment') // the shipped patch's comments stay in the package
    expect(merged(once, 'headless')).toBe(once) // idempotent
    const restored = restoredPatch(once, { removeHmr: true })
    expect(restored).toBe(DSH_HEADER)
  })

  it('keeps the user\'s own rows before ours and exactly as they were after uninstall', () => {
    const before = `${DSH_HEADER.replace('[]\n', '')}${USER}`
    const once = merged(before, 'web')
    expect(once.startsWith(before.trimEnd())).toBe(true)
    expect(once).toContain('config: { default: shadow-context }')
    expect(hasBlock(once, ROWS_BLOCK) && hasBlock(once, HMR_BLOCK)).toBe(true)
    const kept = restoredPatch(once, { removeHmr: false })
    expect(hasBlock(kept, ROWS_BLOCK)).toBe(false)
    expect(hasBlock(kept, HMR_BLOCK)).toBe(true) // dsh rc.8 needs it to boot
    expect(restoredPatch(once, { removeHmr: true }).trimEnd()).toBe(before.trimEnd())
  })

  it('refuses to merge into a patch that is not a block list', () => {
    expect(patchShape('[{ id: hmr }]')).toBe('other')
    expect(patchShape('id: hmr\n')).toBe('other')
    expect(patchShape(USER)).toBe('sequence')
    expect(patchShape('')).toBe('empty')
  })

  it('knows which Node dsh 0.1.0-rc.8 runs on', () => {
    expect(nodeIsEnough('v22.19.0')).toBe(true)
    expect(nodeIsEnough('v24.1.0')).toBe(true)
    expect(nodeIsEnough('v22.18.9')).toBe(false)
    expect(nodeIsEnough('v20.20.2')).toBe(false)
  })
})
