/** The profile patch blocks install merges and uninstall takes out: the user's rows are never touched. */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../src/main.ts'
import { folderHash } from '../src/setup.ts'
import { brokenBlock, hasBlock, HMR_BLOCK, mergedPatch, nodeIsEnough, patchShape, presetAction, restoredPatch, ROWS_BLOCK } from '../src/profile.ts'

const DSH_HEADER = '# Your patch layer for this dsh profile, applied after every bundle layer:\n# a top-level YAML array of loader patch entries.\n[]\n'
const HEADLESS = '# comment\n- id: compaction-basic\n  disabled: true\n- insert:\n    - id: shadow-capture\n      name: dsh-shadow-context/rows/capture\n'
const USER = '# mine\n- id: agent-default-model\n  config: { provider: deepseek, model: deepseek-chat }\n'

/** Every file under a dsh home with its content, and every folder: what a refused command must leave as it was. */
function homeTree(home: string): string[] {
  return readdirSync(home, { recursive: true, encoding: 'utf8' }).toSorted().map(name => {
    try {
      return `${name}: ${readFileSync(join(home, name), 'utf8')}`
    } catch {
      return `${name}/`
    }
  })
}

/** What install writes, given the file as it is. */
const merged = (before: string, profile: 'headless' | 'web'): string => mergedPatch(before, profile, HEADLESS)
const crlf = (text: string): string => text.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n')

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

  it('keeps a row of the user\'s after our block where it is when install runs again (it was moved before our insert, where it set nothing)', () => {
    const setting = '- id: shadow-recall\n  config: { scope: workspace }\n'
    for (const ending of ['\n', '\r\n']) {
      const once = merged(ending === '\n' ? DSH_HEADER : crlf(DSH_HEADER), 'headless')
      const edited = `${once}${setting.replaceAll('\n', ending)}`
      expect(merged(edited, 'headless')).toBe(edited)
      // a changed shipped patch is rewritten in place, the user's row still after it
      const newer = mergedPatch(edited, 'headless', `${HEADLESS}    - id: shadow-extra\n      name: dsh-shadow-context/rows/extra\n`)
      expect(newer).toContain('shadow-extra')
      expect(newer.replaceAll('\r\n', '\n').endsWith(`# <<< ${ROWS_BLOCK}\n${setting}`)).toBe(true)
      expect(restoredPatch(newer, { removeHmr: true }).replaceAll('\r\n', '\n')).toBe(`${DSH_HEADER.replace('[]\n', '')}${setting}`)
    }
  })

  it('finds its blocks in a patch an editor saved with CRLF or a byte-order mark, and keeps that line ending', () => {
    const before = `${DSH_HEADER.replace('[]\n', '')}${USER}`
    for (const saved of [crlf(merged(before, 'headless')), `\uFEFF${merged(before, 'headless')}`, `\uFEFF${crlf(merged(before, 'headless'))}`]) {
      expect(hasBlock(saved, ROWS_BLOCK) && hasBlock(saved, HMR_BLOCK)).toBe(true)
      expect(merged(saved, 'headless')).toBe(saved) // install again: no second copy of our rows
      const restored = restoredPatch(saved, { removeHmr: true })
      expect(restored).not.toContain('dsh-shadow')
      expect(restored.replace('\uFEFF', '').replaceAll('\r\n', '\n').trimEnd()).toBe(before.trimEnd())
    }
    // a CRLF file gets CRLF rows, and `[]` back in CRLF when nothing else is left
    const fresh = merged(crlf(DSH_HEADER), 'web')
    expect(fresh.split('\n').slice(0, -1).every(line => line.endsWith('\r'))).toBe(true)
    expect(restoredPatch(fresh, { removeHmr: true })).toBe(crlf(DSH_HEADER))
    // a user list that starts with a byte-order mark, or with a document start, is still a list
    expect(patchShape(`\uFEFF${USER}`)).toBe('sequence')
    const documented = `---\n${USER}`
    expect(patchShape(documented)).toBe('sequence')
    expect(merged(documented, 'web').startsWith(documented)).toBe(true)
    expect(restoredPatch(merged(documented, 'web'), { removeHmr: true })).toBe(documented)
    expect(patchShape('---\n[]\n')).toBe('empty-list')
  })

  it('names a block whose end marker was deleted by hand (install and uninstall refuse it)', () => {
    const once = merged(USER, 'headless')
    expect(brokenBlock(once)).toBeUndefined()
    const cut = once.split('\n').filter(line => line !== `# <<< ${ROWS_BLOCK}`).join('\n')
    expect(brokenBlock(cut)).toMatch(/^line \d+ opens "# >>> dsh-shadow-context" but no "# <<< dsh-shadow-context" line follows it$/)
    expect(brokenBlock(USER)).toBeUndefined()
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

  it('keeps an agent preset the user changed after install copied it, and replaces only its own older copy', () => {
    expect(presetAction({ matchesPackage: true, exists: true, hash: 'a', recordedHash: 'b' })).toBe('in-place')
    expect(presetAction({ matchesPackage: false, exists: false, hash: undefined, recordedHash: undefined })).toBe('copy')
    // the copy install made (an older package's), unchanged: the package's new one replaces it
    expect(presetAction({ matchesPackage: false, exists: true, hash: 'a', recordedHash: 'a' })).toBe('copy')
    // edited since (a recall scope, an engine setting): kept; also when no hash was recorded (cannot tell)
    expect(presetAction({ matchesPackage: false, exists: true, hash: 'edited', recordedHash: 'a' })).toBe('keep-edited')
    expect(presetAction({ matchesPackage: false, exists: true, hash: 'edited', recordedHash: undefined })).toBe('keep-edited')
  })

  it('hashes an edited preset folder that holds a folder of its own (install read it as a file: EISDIR after the package was added)', () => {
    const folder = mkdtempSync(join(tmpdir(), 'dsh-shadow-preset-hash-'))
    try {
      writeFileSync(join(folder, 'agent.cordis.yml'), '# preset\n')
      const sha = (text: string): string => createHash('sha256').update(text).digest('hex')
      // a flat folder hashes as before, so a recorded hash of install's own copy still matches it
      expect(folderHash(folder)).toBe(sha(`agent.cordis.yml\0${sha('# preset\n')}\0`))
      mkdirSync(join(folder, 'prompts'))
      writeFileSync(join(folder, 'prompts', 'review.md'), 'one')
      const withFolder = folderHash(folder)
      writeFileSync(join(folder, 'prompts', 'review.md'), 'two')
      expect(folderHash(folder)).not.toBe(withFolder)
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it('refuses a web install over a preset folder it did not copy before it changes anything', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-preset-'))
    try {
      mkdirSync(join(home, '.agent-presets', 'shadow-context'), { recursive: true })
      writeFileSync(join(home, '.agent-presets', 'shadow-context', 'agent.cordis.yml'), '# my own preset\n')
      mkdirSync(join(home, 'profiles', 'web'), { recursive: true })
      writeFileSync(join(home, 'profiles', 'web', 'cordis.patch.yml'), DSH_HEADER)
      const tree = (): string[] => homeTree(home)
      const before = tree()
      let stderr = ''
      // whatever this machine has on PATH (a launcher or not), the refusal comes first
      const code = await runCli(['install', '--profile', 'web', '--dsh-home', home], { stdout: () => undefined, stderr: text => void (stderr += text), stderrIsTTY: false })
      expect(stderr).toMatch(/agent-presets\/shadow-context exists and is not the one install copied; nothing was changed/)
      expect(code).toBe(2)
      expect(tree()).toEqual(before)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('refuses a web install where a preset file is a folder, or the preset folder a file, before it changes anything', async () => {
    // the ownership check read the folder as a file: EISDIR, exit 1, and no word of which path
    const record = (presetCopied: boolean): string => JSON.stringify({ profiles: { web: { tarball: '/x/dsh-shadow-context-0.1.0.tgz', sha: 'a', version: '0.1.0', hmrBefore: null, hmrPinned: false, presetCopied } } })
    const cases = [
      { name: 'a folder for agent.cordis.yml', record: undefined, make: (preset: string) => mkdirSync(join(preset, 'agent.cordis.yml'), { recursive: true }), says: /shadow-context\/agent\.cordis\.yml is a folder where the preset has a file; nothing was changed/ },
      { name: 'a folder for a shipped file, copied before', record: record(true), make: (preset: string) => mkdirSync(join(preset, 'README.md'), { recursive: true }), says: /shadow-context\/README\.md is a folder where the preset has a file; nothing was changed/ },
      { name: 'a file for the preset folder', record: record(true), make: (preset: string) => writeFileSync(preset, '# not a folder\n'), says: /agent-presets\/shadow-context is not a folder; nothing was changed/ },
    ]
    for (const { name, record: recorded, make, says } of cases) {
      const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-preset-dir-'))
      try {
        // the installed package's preset, as dsh plugin add leaves it in the profile
        const shipped = join(home, 'profiles', 'web', 'node_modules', 'dsh-shadow-context', 'presets', 'shadow-context')
        mkdirSync(shipped, { recursive: true })
        writeFileSync(join(shipped, 'agent.cordis.yml'), '# preset\n')
        writeFileSync(join(shipped, 'README.md'), '# readme\n')
        writeFileSync(join(home, 'profiles', 'web', 'cordis.patch.yml'), DSH_HEADER)
        if (recorded !== undefined) {
          mkdirSync(join(home, 'shadow-context'), { recursive: true })
          writeFileSync(join(home, 'shadow-context', 'install.json'), recorded)
        }
        mkdirSync(join(home, '.agent-presets'), { recursive: true })
        make(join(home, '.agent-presets', 'shadow-context'))
        const before = homeTree(home)
        let stderr = ''
        const code = await runCli(['install', '--profile', 'web', '--dsh-home', home], { stdout: () => undefined, stderr: text => void (stderr += text), stderrIsTTY: false })
        expect(stderr, name).toMatch(says)
        expect(code, name).toBe(2)
        expect(homeTree(home), name).toEqual(before)
      } finally {
        rmSync(home, { recursive: true, force: true })
      }
    }
  })

  it('refuses an install record it cannot read (cut short, or not its shape) before it changes anything', async () => {
    // read as no record at all, install went on: it took our own pinned hmr for the user's and
    // forgot it had copied the preset (uninstall then left it); a record of the wrong shape threw a
    // TypeError after the package was added
    for (const record of ['{"profiles": {"headless": {"tarball": "/x.tgz", "sha', '{"profiles": "headless"}', '{"profiles": {"web": {"tarball": 5}}}', '[]']) {
      const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-record-'))
      try {
        mkdirSync(join(home, 'shadow-context'), { recursive: true })
        writeFileSync(join(home, 'shadow-context', 'install.json'), record)
        mkdirSync(join(home, 'profiles', 'headless'), { recursive: true })
        writeFileSync(join(home, 'profiles', 'headless', 'cordis.patch.yml'), merged(DSH_HEADER, 'headless'))
        const tree = (): string[] => homeTree(home)
        const before = tree()
        for (const command of [['install', '--profile', 'headless'], ['uninstall']]) {
          let stderr = ''
          const code = await runCli([...command, '--dsh-home', home], { stdout: () => undefined, stderr: text => void (stderr += text), stderrIsTTY: false })
          expect(stderr, `${command[0]} over ${record}`).toMatch(/install\.json is not an install record dsh-shadow can read .*; nothing was changed/)
          expect(code).toBe(2)
          expect(tree()).toEqual(before)
        }
      } finally {
        rmSync(home, { recursive: true, force: true })
      }
    }
  })

  /** A web install as install leaves it (record, patch, preset), without the package: no launcher is asked. */
  function webInstalled(home: string, preset: string): void {
    mkdirSync(join(home, 'profiles', 'web'), { recursive: true })
    writeFileSync(join(home, 'profiles', 'web', 'cordis.patch.yml'), merged(DSH_HEADER, 'web'))
    mkdirSync(join(home, '.agent-presets', 'shadow-context'), { recursive: true })
    writeFileSync(join(home, '.agent-presets', 'shadow-context', 'agent.cordis.yml'), preset)
    const record = { tarball: join(home, 'x.tgz'), sha: 'x', version: '0.1.0', hmrBefore: null, hmrPinned: false, presetCopied: true, presetHash: folderHash(join(home, '.agent-presets', 'shadow-context')) }
    mkdirSync(join(home, 'shadow-context'), { recursive: true })
    writeFileSync(join(home, 'shadow-context', 'install.json'), JSON.stringify({ profiles: { web: record } }))
  }

  /** runCli with no launcher on PATH (a real one would check the composed config). */
  async function noLauncher(argv: readonly string[]): Promise<{ code: number; stdout: string }> {
    let stdout = ''
    const path = process.env['PATH']
    process.env['PATH'] = ''
    const code = await runCli(argv, { stdout: text => void (stdout += text), stderr: () => undefined, stderrIsTTY: false }).finally(() => {
      process.env['PATH'] = path
    })
    return { code, stdout }
  }

  it('uninstall moves an agent preset the user edited aside, says where, and removes only an unchanged one', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-preset-edited-'))
    try {
      const preset = join(home, '.agent-presets', 'shadow-context')
      webInstalled(home, '# preset as installed\n')
      writeFileSync(join(preset, 'agent.cordis.yml'), '# preset as installed\n# my recall scope: workspace\n')
      const edited = await noLauncher(['uninstall', '--profile', 'web', '--dsh-home', home, '--keep-store'])
      expect(edited.code).toBe(0)
      // deleted before: the user's edits were gone without a word
      const backups = readdirSync(join(home, 'shadow-context')).filter(name => name.startsWith('agent-preset-edited-'))
      expect(backups).toHaveLength(1)
      const backup = join(home, 'shadow-context', backups[0]!)
      expect(readFileSync(join(backup, 'agent.cordis.yml'), 'utf8')).toBe('# preset as installed\n# my recall scope: workspace\n')
      expect(edited.stdout).toContain(`kept  your edited agent preset`)
      expect(edited.stdout).toContain(`to ${backup}`)
      // dsh no longer offers it (its rows are gone); the rest of the uninstall went on
      expect(readdirSync(home)).not.toContain('.agent-presets')
      expect(hasBlock(readFileSync(join(home, 'profiles', 'web', 'cordis.patch.yml'), 'utf8'), ROWS_BLOCK)).toBe(false)
      rmSync(home, { recursive: true, force: true })
      // the copy install made, unchanged: removed as before
      webInstalled(home, '# preset as installed\n')
      const unchanged = await noLauncher(['uninstall', '--profile', 'web', '--dsh-home', home, '--keep-store'])
      expect(unchanged.code).toBe(0)
      expect(unchanged.stdout).toContain(`removed the agent preset ${preset}`)
      expect(readdirSync(home)).not.toContain('.agent-presets')
      expect(readdirSync(join(home, 'shadow-context')).filter(name => name.startsWith('agent-preset-edited-'))).toEqual([])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('uninstall of one profile suggests deleting the store with that profile, home and store, not every profile\'s uninstall', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-keep-store-'))
    try {
      const store = join(home, 'team store.db')
      writeFileSync(store, '')
      const web = await noLauncher(['uninstall', '--profile', 'web', '--dsh-home', home, '--store', store, '--keep-store'])
      expect(web.code).toBe(0)
      expect(web.stdout).toContain(`delete it with: dsh-shadow uninstall --profile web --dsh-home ${home} --store '${store}' --delete-store\n`)
      mkdirSync(join(home, 'shadow-context'), { recursive: true })
      writeFileSync(join(home, 'shadow-context', 'shadow.db'), '')
      const all = await noLauncher(['uninstall', '--dsh-home', home, '--keep-store'])
      expect(all.stdout).toContain(`delete it with: dsh-shadow uninstall --dsh-home ${home} --delete-store\n`)
      expect(existsSync(store)).toBe(true)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('uninstall finds our rows in a profile whose package and install record are gone, and takes them out', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-rows-only-'))
    try {
      const patch = join(home, 'profiles', 'headless', 'cordis.patch.yml')
      mkdirSync(join(home, 'profiles', 'headless'), { recursive: true })
      const before = `${DSH_HEADER.replace('[]\n', '')}${USER}`
      writeFileSync(patch, merged(before, 'headless')) // `dsh plugin remove` took the package; the rows still name it
      let stdout = ''
      // no launcher to ask (a real one would check the composed config): the patch is what matters here
      const path = process.env['PATH']
      process.env['PATH'] = ''
      const code = await runCli(['uninstall', '--dsh-home', home], { stdout: text => void (stdout += text), stderr: () => undefined, stderrIsTTY: false }).finally(() => {
        process.env['PATH'] = path
      })
      expect(stdout).toContain('removed the Shadow Context rows')
      expect(code).toBe(0)
      const after = readFileSync(patch, 'utf8')
      expect(hasBlock(after, ROWS_BLOCK)).toBe(false)
      expect(hasBlock(after, HMR_BLOCK)).toBe(true) // rc.8 still needs it
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
