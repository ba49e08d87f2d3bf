/**
 * `dsh-shadow install | doctor | uninstall`: put Shadow Context into a dsh 0.1.0-rc.8 profile,
 * check it, and take it out again. Install merges (never overwrites) and records what it did in
 * `<home>/shadow-context/install.json`, so uninstall reverts exactly that and nothing else.
 */
import { createHash } from 'node:crypto'
import { copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { displayLocation, ShadowStore } from '@dsh-shadow/store'
import { CliError, EXIT, type Output } from './format.ts'
import { commandLine, sameStoreFlags } from './follow-up.ts'
import { rowOptionsCheck } from './row-check.ts'
import { updateRecord } from './install-record.ts'
import {
  brokenBlock, failureOf, FIX, hasBlock, HMR_BLOCK, HMR_PACKAGE, HMR_VERSION, LAUNCHER_VERSION, manifestPath, mergedPatch, nodeIsEnough, offPatchPath, ownPackageRoot,
  PACKAGE, packageStash, patchPath, patchShape, presetAction, presetTarget, profileDir, profileManifest, PROFILES, readManifest, resolvedVersion, restoredPatch, ROWS_BLOCK,
  run, unparsedPatch, which, withoutBlock, type InstallManifest, type ProfileName, type ProfileRecord,
} from './profile.ts'

export interface SetupContext {
  readonly home: string
  readonly storePath: string
  readonly env: NodeJS.ProcessEnv
  readonly output: Output
}

export interface Check {
  readonly check: string
  readonly ok: boolean
  /** What was found (ok) or what is wrong. */
  readonly detail: string
  readonly fix?: string
}

function envFor(ctx: SetupContext): NodeJS.ProcessEnv {
  return { ...ctx.env, DSH_HOME: ctx.home }
}

/** Node, pnpm and the launcher, as dsh will find them on PATH. */
export function machineChecks(ctx: SetupContext): Check[] {
  const env = envFor(ctx)
  const checks: Check[] = []
  const node = which('node', env)
  const nodeVersion = node === undefined ? undefined : run(node, ['--version'], { env }).stdout.trim()
  checks.push(nodeVersion !== undefined && nodeIsEnough(nodeVersion)
    ? { check: 'node', ok: true, detail: `${nodeVersion} (${node})` }
    : { check: 'node', ok: false, detail: nodeVersion === undefined ? 'no `node` on PATH' : `${nodeVersion} is too old: dsh 0.1.0-rc.8 needs Node >= 22.19 (on Node 20 it fails with "plugin(s) failed to load")`, fix: FIX.node })
  const pnpmBin = which('pnpm', env)
  const pnpmVersion = pnpmBin === undefined ? undefined : run(pnpmBin, ['--version'], { env, timeoutMs: 120_000 }).stdout.trim()
  checks.push(pnpmVersion !== undefined && pnpmVersion.length > 0
    ? { check: 'pnpm', ok: true, detail: `${pnpmVersion} (${pnpmBin})` }
    : { check: 'pnpm', ok: false, detail: 'no working `pnpm` on PATH (`dsh plugin` runs it)', fix: FIX.pnpm })
  const dshBin = which('dsh', env)
  const dshVersion = dshBin === undefined ? undefined : run(dshBin, ['--version'], { env, timeoutMs: 120_000 }).stdout.trim()
  checks.push(dshVersion === LAUNCHER_VERSION
    ? { check: 'launcher', ok: true, detail: `dsh ${dshVersion} (${dshBin})` }
    : { check: 'launcher', ok: false, detail: dshBin === undefined ? 'no `dsh` on PATH' : `dsh ${dshVersion || '(no version)'} at ${dshBin}; only ${LAUNCHER_VERSION} works`, fix: FIX.launcher })
  return checks
}

function report(ctx: SetupContext, checks: readonly Check[]): void {
  if (ctx.output.json) return
  for (const check of checks) ctx.output.out(check.ok ? `ok    ${check.check}: ${check.detail}` : `FAIL  ${check.check}: ${check.detail}${check.fix === undefined ? '' : ` — fix: ${check.fix}`}`)
}

function sha(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex')
}

function dsh(ctx: SetupContext, args: readonly string[], cwd?: string): void {
  const result = run(which('dsh', envFor(ctx))!, args, { env: envFor(ctx), ...(cwd === undefined ? {} : { cwd }) })
  if (result.status !== 0) throw new CliError(`\`dsh ${args.join(' ')}\` failed (exit ${result.status ?? result.signal}): ${failureOf(result)}`, EXIT.failure)
}

function pnpm(ctx: SetupContext, args: readonly string[], cwd: string): void {
  const result = run(which('pnpm', envFor(ctx))!, args, { env: envFor(ctx), cwd })
  if (result.status !== 0) throw new CliError(`\`pnpm ${args.join(' ')}\` in ${cwd} failed: ${failureOf(result)}`, EXIT.failure)
}

/** The tarball to install, kept where the profile's lockfile can find it again later. */
function stashTarball(ctx: SetupContext, given: string | undefined): { path: string; version: string } {
  let source = given
  let scratch: string | undefined
  if (source === undefined) {
    const root = ownPackageRoot()
    if (root === undefined) throw new CliError('this dsh-shadow runs from a source checkout: give the package with --package <tarball> (`npm run -s pack` prints its path)', EXIT.usage)
    scratch = mkdtempSync(join(tmpdir(), 'dsh-shadow-pack-'))
    const npm = which('npm', ctx.env)
    if (npm === undefined) throw new CliError('no `npm` on PATH to pack this package with', EXIT.unavailable)
    const packed = run(npm, ['pack', root, '--pack-destination', scratch, '--silent'], { env: ctx.env })
    if (packed.status !== 0) throw new CliError(`npm pack ${root} failed: ${packed.stderr.trim()}`, EXIT.failure)
    source = join(scratch, packed.stdout.trim().split('\n').at(-1)!)
  }
  if (!existsSync(source)) throw new CliError(`no package tarball at ${source}`, EXIT.notFound)
  const name = source.split(/[\\/]/).at(-1)!
  const match = /^dsh-shadow-context-(.+)\.tgz$/.exec(name)
  if (match === null) throw new CliError(`${source} is not a dsh-shadow-context-<version>.tgz`, EXIT.usage)
  mkdirSync(packageStash(ctx.home), { recursive: true })
  const target = join(packageStash(ctx.home), name)
  if (!existsSync(target) || sha(target) !== sha(source)) copyFileSync(source, target)
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
  return { path: target, version: match[1]! }
}

/**
 * Profiles with any trace of an install: the record, the package, or our rows in the patch (the
 * package removed by hand with `dsh plugin remove` leaves rows that stop dsh from booting).
 */
function installedProfiles(home: string, manifest: InstallManifest): ProfileName[] {
  return PROFILES.filter(profile => manifest.profiles[profile] !== undefined
    || profileManifest(home, profile)?.dependencies?.[PACKAGE] !== undefined
    || (existsSync(patchPath(home, profile)) && hasBlock(readFileSync(patchPath(home, profile), 'utf8'), ROWS_BLOCK)))
}

/** The agent preset the installed package ships. */
function presetSource(profile: string): string {
  return join(profile, 'node_modules', PACKAGE, 'presets', 'shadow-context')
}

/**
 * One hash over a preset folder's files (names and contents), to tell install's copy from an edited
 * one. Folders in it (a user's own) are hashed inside (reading one as a file threw EISDIR after the
 * package was added), links by where they point; a flat folder hashes as it always did.
 */
export function folderHash(folder: string): string {
  const hash = createHash('sha256')
  for (const entry of readdirSync(folder, { withFileTypes: true }).toSorted((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) hash.update(`${entry.name}/\0${folderHash(path)}\0`)
    else if (entry.isSymbolicLink()) hash.update(`${entry.name}@\0${readlinkSync(path)}\0`)
    else hash.update(`${entry.name}\0${sha(path)}\0`)
  }
  return hash.digest('hex')
}

/** Whether two paths hold the same: files by content, folders by `folderHash`; anything else, or a file against a folder, never. */
function sameEntry(a: string, b: string): boolean {
  const [left, right] = [lstatSync(a, { throwIfNoEntry: false }), lstatSync(b, { throwIfNoEntry: false })]
  if (left === undefined || right === undefined) return false
  if (left.isFile() && right.isFile()) return sha(a) === sha(b)
  if (left.isDirectory() && right.isDirectory()) return folderHash(a) === folderHash(b)
  return false
}

/** The preset folder holds exactly the installed package's preset files. */
function presetIsOurs(home: string, profile: string): boolean {
  const source = presetSource(profile)
  const target = presetTarget(home)
  return existsSync(source) && lstatSync(target, { throwIfNoEntry: false })?.isDirectory() === true && readdirSync(source).every(name => sameEntry(join(target, name), join(source, name)))
}

/**
 * Why the preset folder cannot be installed over or read by dsh, if it cannot: it is a file, or a
 * file the package's preset has (or dsh reads, `agent.cordis.yml`) is a folder there. Reading such
 * a folder as a file threw EISDIR from the ownership check, exit 1, with nothing said of where.
 */
function presetObstacle(home: string, profile: string): string | undefined {
  const target = presetTarget(home)
  const stat = lstatSync(target, { throwIfNoEntry: false })
  if (stat === undefined) return undefined
  if (!stat.isDirectory()) return `${target} is not a folder`
  const source = presetSource(profile)
  const names = new Set(['agent.cordis.yml', ...(existsSync(source) ? readdirSync(source) : [])])
  for (const name of [...names].toSorted()) {
    const shipped = lstatSync(join(source, name), { throwIfNoEntry: false })
    const found = lstatSync(join(target, name), { throwIfNoEntry: false })
    if (found !== undefined && found.isDirectory() && shipped?.isDirectory() !== true) return `${join(target, name)} is a folder where the preset has a file`
  }
  return undefined
}

const OFF_PATCH = [
  '# Run one headless dsh session without Shadow Context: dsh --profile headless --patch <this file> "task"',
  '- id: compaction-basic',
  '  disabled: false',
  '- id: shadow-capture',
  '  disabled: true',
  '- id: shadow-compaction',
  '  disabled: true',
  '- id: shadow-recall',
  '  disabled: true',
  '',
].join('\n')

export function install(ctx: SetupContext, profile: ProfileName, options: { readonly package?: string }): void {
  const changes: string[] = []
  const note = (line: string): void => {
    changes.push(line)
    if (!ctx.output.json) ctx.output.out(line)
  }
  const dir = profileDir(ctx.home, profile)
  const patch = patchPath(ctx.home, profile)
  const manifest = readManifest(ctx.home)
  const previous = manifest.profiles[profile]
  // Every refusal comes before the first change: a half-made install is worse than none.
  const before = existsSync(patch) ? readFileSync(patch, 'utf8') : ''
  const broken = brokenBlock(before)
  if (broken !== undefined) throw new CliError(`${patch}: ${broken}; nothing was changed. Put the end line back (or delete the block), then run install again`, EXIT.usage)
  const shape = patchShape(withoutBlock(withoutBlock(before, ROWS_BLOCK), HMR_BLOCK))
  if (shape === 'other') throw new CliError(`${patch} is not a YAML list of patch entries (a \`- …\` item per line), so its rows cannot be merged; nothing was changed. Make it a block list, then run install again`, EXIT.usage)
  const obstacle = profile === 'web' ? presetObstacle(ctx.home, dir) : undefined
  if (obstacle !== undefined) throw new CliError(`${obstacle}; nothing was changed. Move it away (or delete it), then run install again`, EXIT.usage)
  if (profile === 'web' && existsSync(presetTarget(ctx.home)) && !(previous?.presetCopied ?? false) && !presetIsOurs(ctx.home, dir)) {
    throw new CliError(`${presetTarget(ctx.home)} exists and is not the one install copied; nothing was changed. Move it away (or delete it), then run install again`, EXIT.usage)
  }

  const checks = machineChecks(ctx)
  report(ctx, checks)
  const failed = checks.filter(check => !check.ok)
  if (failed.length > 0) throw new CliError(`${failed.map(check => check.check).join(', ')} not ready; nothing was changed. ${failed.map(check => check.fix).join('; ')}`, EXIT.unavailable)

  const tarball = stashTarball(ctx, options.package)

  // 1. the package, through dsh's own plugin command (it also joins our bundle layer)
  const deps = profileManifest(ctx.home, profile)?.dependencies ?? {}
  const tarballSha = sha(tarball.path)
  if (deps[PACKAGE] === `file:${tarball.path}` && previous?.sha === tarballSha && existsSync(join(dir, 'node_modules', PACKAGE, 'package.json'))) {
    note(`=     ${PACKAGE} ${tarball.version} is already in profile ${profile}`)
  } else {
    // pnpm keeps the old extract of a same-named file: tarball, so a different build goes out first
    if (deps[PACKAGE] !== undefined) dsh(ctx, ['plugin', '--profile', profile, 'remove', PACKAGE])
    dsh(ctx, ['plugin', '--profile', profile, 'add', '-w', tarball.path])
    note(`+     added ${PACKAGE} ${tarball.version} to profile ${profile} (dsh plugin --profile ${profile} add -w ${tarball.path})`)
  }

  // 2. the rc.8 HMR workaround, part one: the profile loads cordis-plugin-hmr 1.0.17 before dsh's own 1.0.19
  const hmrBefore = previous !== undefined ? previous.hmrBefore : profileManifest(ctx.home, profile)?.dependencies?.[HMR_PACKAGE] ?? null
  let hmrPinned = previous?.hmrPinned ?? false
  if (profileManifest(ctx.home, profile)?.dependencies?.[HMR_PACKAGE] === HMR_VERSION && resolvedVersion(dir, HMR_PACKAGE) === HMR_VERSION) {
    note(`=     ${HMR_PACKAGE} ${HMR_VERSION} is already pinned in profile ${profile}`)
  } else {
    pnpm(ctx, ['add', '-w', `${HMR_PACKAGE}@${HMR_VERSION}`], dir)
    hmrPinned = true
    note(`+     pinned ${HMR_PACKAGE} ${HMR_VERSION} in profile ${profile} (rc.8's launcher resolves 1.0.19, which cannot boot)`)
  }

  // 3. the profile patch: our blocks merged in, the user's own rows kept as they are
  const current = existsSync(patch) ? readFileSync(patch, 'utf8') : ''
  const headlessPatch = readFileSync(join(dir, 'node_modules', PACKAGE, 'patches', 'headless.cordis.patch.yml'), 'utf8')
  const merged = mergedPatch(current, profile, headlessPatch)
  if (merged === current) note(`=     ${patch} already has the Shadow Context rows and the HMR workaround`)
  else {
    writeFileSync(patch, merged)
    note(`+     merged into ${patch}: ${profile === 'headless' ? 'compaction-basic off, shadow-capture, shadow-compaction, shadow-recall' : 'default agent preset shadow-context'}, and the hmr row on (your own rows are kept)`)
  }

  // 4. web: the agent preset folder where rc.8 reads user presets
  let presetCopied = previous?.presetCopied ?? false
  let presetHash = previous?.presetHash
  if (profile === 'web') {
    const source = presetSource(dir)
    const target = presetTarget(ctx.home)
    const action = presetAction({ matchesPackage: presetIsOurs(ctx.home, dir), exists: existsSync(target), hash: existsSync(target) ? folderHash(target) : undefined, recordedHash: presetHash })
    if (action === 'in-place') {
      presetHash = folderHash(target)
      note(`=     agent preset ${target} is in place`)
    } else if (action === 'keep-edited') {
      // the user changed the copy (a recall scope, an engine setting): install again must not wipe that
      note(`=     kept the agent preset ${target}: it was changed after install copied it (the package's is in ${source}; to take it, delete yours and run install again)`)
    } else {
      mkdirSync(join(ctx.home, '.agent-presets'), { recursive: true })
      rmSync(target, { recursive: true, force: true })
      cpSync(source, target, { recursive: true })
      presetCopied = true
      presetHash = folderHash(target)
      note(`+     copied the agent preset to ${target}`)
    }
  } else if (!existsSync(offPatchPath(ctx.home))) {
    writeFileSync(offPatchPath(ctx.home), OFF_PATCH)
    note(`+     wrote ${offPatchPath(ctx.home)} (dsh --profile headless --patch <it> runs one session without Shadow Context)`)
  }

  const record: ProfileRecord = { tarball: tarball.path, sha: tarballSha, version: tarball.version, hmrBefore, hmrPinned, presetCopied, ...(presetHash === undefined ? {} : { presetHash }) }
  // the record as it is now: another install may have written its profile's since this one read it
  updateRecord(ctx.home, fresh => {
    fresh.profiles[profile] = record
    return true
  })
  if (ctx.output.json) ctx.output.out(JSON.stringify({ profile, home: ctx.home, changes, checks }))
  else ctx.output.out(profile === 'headless'
    ? 'done: every `dsh --profile headless` session now runs Shadow Context. Try it offline: dsh-shadow try'
    : 'done: start `dsh web`; new sessions use the "Shadow Context" preset (pick "Standard" in the preset chip for a session without it)')
}

/** One line per check of an installed profile. */
export async function doctor(ctx: SetupContext, profiles: readonly ProfileName[]): Promise<Check[]> {
  const checks = machineChecks(ctx)
  const manifest = readManifest(ctx.home)
  const chosen = profiles.length > 0 ? profiles : installedProfiles(ctx.home, manifest)
  if (chosen.length === 0) checks.push({ check: 'profiles', ok: false, detail: `Shadow Context is not installed in any profile of ${ctx.home}`, fix: 'dsh-shadow install --profile headless (or web)' })
  const launcherOk = checks.every(check => check.ok || check.check !== 'launcher')
  for (const profile of chosen) {
    const dir = profileDir(ctx.home, profile)
    const fix = `dsh-shadow install --profile ${profile}`
    const pkg = (() => {
      try {
        return (JSON.parse(readFileSync(join(dir, 'node_modules', PACKAGE, 'package.json'), 'utf8')) as { version: string }).version
      } catch {
        return undefined
      }
    })()
    checks.push(pkg === undefined ? { check: `${profile}: package`, ok: false, detail: `${PACKAGE} is not installed in ${dir}`, fix } : { check: `${profile}: package`, ok: true, detail: `${PACKAGE} ${pkg}` })
    const layered = profileManifest(ctx.home, profile)?.dsh?.profile?.bundles?.includes(PACKAGE) === true
    checks.push(layered ? { check: `${profile}: bundle layer`, ok: true, detail: 'listed in the profile' } : { check: `${profile}: bundle layer`, ok: false, detail: 'the package is not in the profile\'s layer stack', fix })
    const hmr = resolvedVersion(dir, HMR_PACKAGE)
    checks.push(hmr === '1.0.16' || hmr === HMR_VERSION ? { check: `${profile}: hmr`, ok: true, detail: `${HMR_PACKAGE} ${hmr}` } : { check: `${profile}: hmr`, ok: false, detail: `the profile loads ${HMR_PACKAGE} ${hmr ?? '(none)'}, which cannot boot rc.8`, fix })
    const patch = existsSync(patchPath(ctx.home, profile)) ? readFileSync(patchPath(ctx.home, profile), 'utf8') : ''
    checks.push(hasBlock(patch, ROWS_BLOCK) && hasBlock(patch, HMR_BLOCK) ? { check: `${profile}: patch`, ok: true, detail: `${patchPath(ctx.home, profile)} has our rows and the hmr row` } : { check: `${profile}: patch`, ok: false, detail: `${patchPath(ctx.home, profile)} lacks ${hasBlock(patch, ROWS_BLOCK) ? 'the hmr row' : 'the Shadow Context rows'}`, fix })
    if (profile === 'web') {
      const preset = join(presetTarget(ctx.home), 'agent.cordis.yml')
      checks.push(statSync(preset, { throwIfNoEntry: false })?.isFile() === true ? { check: 'web: preset', ok: true, detail: presetTarget(ctx.home) } : { check: 'web: preset', ok: false, detail: `no agent preset at ${presetTarget(ctx.home)} (new sessions would fail with agent-preset-not-found)`, fix })
    }
    if (launcherOk && pkg !== undefined) {
      const args = profile === 'web' ? ['web', '--dump-config'] : ['--profile', profile, '--dump-config']
      const dump = run(which('dsh', envFor(ctx))!, args, { env: envFor(ctx), timeoutMs: 120_000 })
      const want = profile === 'web' ? 'shadow-context-host' : 'dsh-shadow-context/rows/engine'
      const failure = dump.status === 0 ? undefined : failureOf(dump)
      // a patch dsh cannot parse is the user's to correct: installing again keeps their rows as they are
      const unparsed = failure === undefined ? undefined : unparsedPatch(failure)
      checks.push(dump.status === 0 && dump.stdout.includes(want)
        ? { check: `${profile}: composed config`, ok: true, detail: `dsh ${args.join(' ')} mounts ${want}` }
        : { check: `${profile}: composed config`, ok: false, detail: failure === undefined ? `dsh ${args.join(' ')} does not mount ${want}` : `dsh ${args.join(' ')} failed: ${failure}`, fix: unparsed === undefined ? fix : `correct the YAML of ${unparsed} at the line dsh names (a profile patch is a list of \`- id: …\` rows)` })
      if (dump.status === 0) checks.push(rowOptionsCheck(profile, dump.stdout, patchPath(ctx.home, profile)))
    }
  }
  if (existsSync(ctx.storePath)) {
    try {
      const store = await ShadowStore.open(ctx.storePath, { readOnly: true })
      try {
        const problems = await store.integrityCheck()
        const stats = await store.stats()
        checks.push(problems.length === 0 ? { check: 'store', ok: true, detail: `${ctx.storePath}: ${stats.sessions} sessions, ${stats.messages} messages, ${stats.checkpoints} checkpoints` } : { check: 'store', ok: false, detail: `${ctx.storePath} is damaged: ${problems[0]}`, fix: 'dsh-shadow repair --all --fresh' })
      } finally {
        await store.close()
      }
    } catch (error) {
      checks.push({ check: 'store', ok: false, detail: `cannot open ${ctx.storePath}: ${error instanceof Error ? error.message : String(error)}`, fix: 'dsh-shadow repair --all --fresh' })
    }
  } else checks.push({ check: 'store', ok: true, detail: `no store yet at ${ctx.storePath} (created by the first session)` })
  report(ctx, checks)
  if (ctx.output.json) ctx.output.out(JSON.stringify({ ok: checks.every(check => check.ok), checks }))
  else ctx.output.out(checks.every(check => check.ok) ? 'doctor: everything is in place' : `doctor: ${checks.filter(check => !check.ok).length} problem(s)`)
  return checks
}

/**
 * Whether the preset folder is exactly what install copied: the hash install recorded, or (a
 * record without one) the package's preset, file for file with nothing added. Anything else holds
 * the user's edits, which uninstall must not delete.
 */
function presetUnchanged(home: string, profile: string, recordedHash: string | undefined): boolean {
  const hash = folderHash(presetTarget(home))
  if (recordedHash !== undefined) return hash === recordedHash
  return existsSync(presetSource(profile)) && hash === folderHash(presetSource(profile))
}

/** Where uninstall moves an edited preset: outside `.agent-presets`, so dsh no longer offers it. */
function presetBackup(home: string): string {
  return join(home, 'shadow-context', `agent-preset-edited-${new Date().toISOString().replace(/[:.]/g, '-')}`)
}

export function uninstall(ctx: SetupContext, profiles: readonly ProfileName[], options: { readonly deleteStore: boolean; readonly removeHmrFix: boolean }): void {
  const manifest = readManifest(ctx.home)
  const chosen = profiles.length > 0 ? profiles : installedProfiles(ctx.home, manifest)
  const changes: string[] = []
  const note = (line: string): void => {
    changes.push(line)
    if (!ctx.output.json) ctx.output.out(line)
  }
  if (chosen.length === 0) note(`=     Shadow Context is not installed in any profile of ${ctx.home}`)
  const dshBin = which('dsh', envFor(ctx))
  const uninstalled: ProfileName[] = []
  for (const profile of chosen) {
    const record = manifest.profiles[profile]
    const dir = profileDir(ctx.home, profile)
    const patch = patchPath(ctx.home, profile)
    // judged before the package (whose preset it is compared with) goes
    const preset = profile === 'web' && (record?.presetCopied ?? false) && existsSync(presetTarget(ctx.home))
      ? (presetUnchanged(ctx.home, dir, record?.presetHash) ? 'ours' : 'edited')
      : undefined
    // the patch first: rows naming a package that is gone would stop dsh from booting
    if (existsSync(patch)) {
      const text = readFileSync(patch, 'utf8')
      const broken = brokenBlock(text)
      if (broken !== undefined) throw new CliError(`${patch}: ${broken}; nothing more was changed. Put the end line back (or delete the block by hand), then run uninstall again`, EXIT.usage)
      const next = restoredPatch(text, { removeHmr: options.removeHmrFix })
      if (next !== text) {
        writeFileSync(patch, next)
        note(`-     removed the Shadow Context rows from ${patch} (${profile === 'headless' ? 'compaction-basic is on again' : 'new sessions use dsh\'s standard preset again'})${options.removeHmrFix ? ' and the hmr row' : '; kept the rc.8 hmr row'}`)
      }
    }
    if (profileManifest(ctx.home, profile)?.dependencies?.[PACKAGE] !== undefined) {
      if (dshBin === undefined) throw new CliError(`no \`dsh\` on PATH to remove ${PACKAGE} from profile ${profile} with; ${FIX.launcher}`, EXIT.unavailable)
      dsh(ctx, ['plugin', '--profile', profile, 'remove', PACKAGE])
      note(`-     removed ${PACKAGE} from profile ${profile}`)
    }
    if (options.removeHmrFix && (record?.hmrPinned ?? false) && profileManifest(ctx.home, profile)?.dependencies?.[HMR_PACKAGE] !== undefined) {
      if (record?.hmrBefore === null || record?.hmrBefore === undefined) pnpm(ctx, ['remove', '-w', HMR_PACKAGE], dir)
      else pnpm(ctx, ['add', '-w', `${HMR_PACKAGE}@${record.hmrBefore}`], dir)
      note(`-     unpinned ${HMR_PACKAGE} in profile ${profile}`)
    }
    if (preset !== undefined) {
      if (preset === 'ours') {
        rmSync(presetTarget(ctx.home), { recursive: true, force: true })
        note(`-     removed the agent preset ${presetTarget(ctx.home)}`)
      } else {
        // the user's edits are kept, moved where dsh does not read presets (it would offer a preset
        // whose rows are gone); a move is undone by moving it back
        const backup = presetBackup(ctx.home)
        mkdirSync(join(ctx.home, 'shadow-context'), { recursive: true })
        renameSync(presetTarget(ctx.home), backup)
        note(`kept  your edited agent preset: it was changed after install copied it, so it was moved, not deleted, from ${presetTarget(ctx.home)} to ${backup} (move it back to use it with Shadow Context installed again)`)
      }
      // the folder install created for it, when nothing else lives there
      if (readdirSync(join(ctx.home, '.agent-presets')).length === 0) rmSync(join(ctx.home, '.agent-presets'), { recursive: true, force: true })
    }
    uninstalled.push(profile)
    if (dshBin !== undefined && existsSync(dir)) {
      const args = profile === 'web' ? ['web', '--dump-config'] : ['--profile', profile, '--dump-config']
      const dump = run(dshBin, args, { env: envFor(ctx), timeoutMs: 120_000 })
      if (dump.status !== 0 || dump.stdout.includes(PACKAGE)) throw new CliError(`after uninstall \`dsh ${args.join(' ')}\` ${dump.status !== 0 ? `fails: ${failureOf(dump)}` : `still names ${PACKAGE}`}; run dsh-shadow doctor`, EXIT.failure)
      note(`ok    dsh ${args.join(' ')} composes without Shadow Context`)
    }
  }
  // the record as it is now (another install may have added a profile since), without the ones taken out
  const left = existsSync(manifestPath(ctx.home)) ? updateRecord(ctx.home, fresh => {
    for (const profile of uninstalled) delete fresh.profiles[profile]
    return Object.keys(fresh.profiles).length > 0
  }) : { profiles: {} }
  if (Object.keys(left.profiles).length === 0) {
    rmSync(offPatchPath(ctx.home), { force: true })
    rmSync(packageStash(ctx.home), { recursive: true, force: true })
  }
  if (options.deleteStore) {
    let removed = false
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(ctx.storePath + suffix)) {
        rmSync(ctx.storePath + suffix, { force: true })
        removed = true
      }
    }
    note(removed ? `-     deleted the shadow store ${ctx.storePath}` : `=     no shadow store at ${ctx.storePath}`)
  } else if (existsSync(ctx.storePath)) {
    // the line to copy keeps this one's profile, home and store (without them it named every
    // profile's uninstall, and the default store)
    const again = commandLine(['uninstall', ...profiles.flatMap(profile => ['--profile', profile]), ...sameStoreFlags(ctx, '--dsh-home'), '--delete-store'])
    const others = Object.keys(manifest.profiles)
    note(`kept  the shadow store ${displayLocation(ctx.storePath)} (your sessions' originals${others.length === 0 ? '' : `, also of profile ${others.join(', ')}, still installed`}); delete it with: ${again}`)
  }
  if (ctx.output.json) ctx.output.out(JSON.stringify({ home: ctx.home, profiles: chosen, changes }))
}
