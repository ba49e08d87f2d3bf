/**
 * What `dsh-shadow install` changes in a dsh home, and how to take it back: the facts about the
 * rc.8 launcher and its profiles (paths, versions, the patch blocks we own), without any I/O
 * policy. The commands in setup.ts use these.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CliError, EXIT } from './format.ts'

export const PACKAGE = 'dsh-shadow-context'
/** The only launcher that works: npm's `latest` (0.1.5-rc.2) has unpublished dependencies. */
export const LAUNCHER_VERSION = '0.1.0-rc.8'
/** rc.8's launcher wants `^1.0.16`, which resolves to 1.0.19, which lacks `registerConfig`. */
export const HMR_PACKAGE = '@deepseek-ai/cordis-plugin-hmr'
export const HMR_VERSION = '1.0.17'
export const PROFILES = ['headless', 'web'] as const
export type ProfileName = (typeof PROFILES)[number]

export const FIX = {
  node: 'install Node 22.19 or newer (for example `nvm install 22`) and put it first on PATH',
  pnpm: 'install pnpm (dsh plugin runs it): `npm install -g pnpm@10`',
  launcher: `install the pinned launcher: \`npm install -g @deepseek-ai/dsh@${LAUNCHER_VERSION}\` (npm's latest, 0.1.5-rc.2, is broken)`,
} as const

export function profileDir(home: string, profile: ProfileName): string {
  return join(home, 'profiles', profile)
}

export function patchPath(home: string, profile: ProfileName): string {
  return join(profileDir(home, profile), 'cordis.patch.yml')
}

/** Where install keeps the tarball the profile's lockfile points to (it must outlive the install). */
export function packageStash(home: string): string {
  return join(home, 'shadow-context', 'package')
}

export function manifestPath(home: string): string {
  return join(home, 'shadow-context', 'install.json')
}

/** The overlay that turns Shadow Context off for one headless run (`dsh --patch <file>`). */
export function offPatchPath(home: string): string {
  return join(home, 'shadow-context', 'off.headless.cordis.patch.yml')
}

export function presetTarget(home: string): string {
  return join(home, '.agent-presets', 'shadow-context')
}

/** What install did to one profile, so uninstall reverts exactly that. */
export interface ProfileRecord {
  readonly tarball: string
  /** sha256 of the tarball installed (a rebuilt one of the same version is installed again). */
  readonly sha: string
  readonly version: string
  /** The dependency value the HMR package had before (null: none). */
  readonly hmrBefore: string | null
  readonly hmrPinned: boolean
  readonly presetCopied: boolean
  /** Hash of the preset files as install copied them (a different one was edited by the user since). */
  readonly presetHash?: string
}

export interface InstallManifest {
  profiles: Partial<Record<ProfileName, ProfileRecord>>
}

/** What is wrong with a parsed install record (undefined: nothing). */
function recordProblem(parsed: unknown): string | undefined {
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
  if (!isObject(parsed) || !isObject(parsed['profiles'])) return 'no "profiles" object'
  for (const [name, record] of Object.entries(parsed['profiles'])) {
    if (!(PROFILES as readonly string[]).includes(name)) return `unknown profile "${name.slice(0, 40)}"`
    if (!isObject(record)) return `profile ${name}: not an object`
    const wrong = [
      ...['tarball', 'sha', 'version'].filter(key => typeof record[key] !== 'string'),
      ...(record['hmrBefore'] === null || typeof record['hmrBefore'] === 'string' ? [] : ['hmrBefore']),
      ...['hmrPinned', 'presetCopied'].filter(key => typeof record[key] !== 'boolean'),
      ...(record['presetHash'] === undefined || typeof record['presetHash'] === 'string' ? [] : ['presetHash']),
    ]
    if (wrong.length > 0) return `profile ${name}: ${wrong.join(', ')} missing or of the wrong type`
  }
  return undefined
}

/**
 * The install record; none when the file is absent. One that cannot be read is refused, not taken
 * for none: install then took its own pinned hmr for the user's and forgot the preset it copied.
 */
export function readManifest(home: string): InstallManifest {
  const path = manifestPath(home)
  if (!existsSync(path)) return { profiles: {} }
  let problem: string | undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
    problem = recordProblem(parsed)
  } catch (error) {
    problem = error instanceof Error ? error.message : String(error)
  }
  if (problem !== undefined) {
    throw new CliError(`${path} is not an install record dsh-shadow can read (${problem}); nothing was changed. It is what uninstall reverts by: put it right, or move it away (install then starts a new one), and run again`, EXIT.usage)
  }
  return parsed as InstallManifest
}

/**
 * What install does with the agent preset folder when it runs (again): nothing when it holds the
 * package's files; the user's folder as it is when it changed since install copied it (no recorded
 * hash: an install before hashes were kept, which cannot tell an edit from an older copy, so it is
 * kept too); the package's copy otherwise. Install ran again (an upgrade) used to wipe an edit.
 */
export function presetAction(state: { readonly matchesPackage: boolean; readonly exists: boolean; readonly hash: string | undefined; readonly recordedHash: string | undefined }): 'in-place' | 'keep-edited' | 'copy' {
  if (state.matchesPackage) return 'in-place'
  if (state.exists && (state.recordedHash === undefined || state.hash !== state.recordedHash)) return 'keep-edited'
  return 'copy'
}

// ---- patch blocks ---------------------------------------------------------------------------------

const BEGIN = '# >>> '
const END = '# <<< '
export const HMR_BLOCK = 'dsh-shadow: rc.8 HMR workaround'
export const ROWS_BLOCK = 'dsh-shadow-context'

function block(name: string, note: string, body: string): string {
  return `${BEGIN}${name} (${note})\n${body.trimEnd()}\n${END}${name}\n`
}

export function hmrBlock(): string {
  return block(HMR_BLOCK, 'dsh 0.1.0-rc.8 does not boot without it; `dsh-shadow uninstall` keeps it', '- id: hmr\n  disabled: false\n  config: { root: [] }')
}

/** Our rows for a profile: the headless patch shipped in the package, or the web preset default. */
export function rowsBlock(profile: ProfileName, headlessPatch: string): string {
  const body = profile === 'headless'
    ? headlessPatch.split('\n').filter(line => !line.startsWith('#')).join('\n')
    : '- id: agent-presets\n  config: { default: shadow-context }'
  return block(ROWS_BLOCK, 'added by `dsh-shadow install`; `dsh-shadow uninstall` removes it', body)
}

/** A line as YAML reads it: without the `\r` of a CRLF file or the byte-order mark of its first line. */
function bare(line: string): string {
  return line.replace(/^\uFEFF/, '').replace(/\r$/, '')
}

/** Where one of our blocks starts and ends (line indexes), `start` alone when its end marker is gone. */
function blockLines(text: string, name: string): { start: number; end: number } | undefined {
  const lines = text.split('\n').map(bare)
  const start = lines.findIndex(line => line.startsWith(`${BEGIN}${name} (`) || line === `${BEGIN}${name}`)
  if (start === -1) return undefined
  return { start, end: lines.findIndex((line, index) => index > start && line === `${END}${name}`) }
}

/** The text with one of our blocks taken out (unchanged when it is not there). */
export function withoutBlock(text: string, name: string): string {
  const found = blockLines(text, name)
  if (found === undefined || found.end === -1) return text
  const lines = text.split('\n')
  return [...lines.slice(0, found.start), ...lines.slice(found.end + 1)].join('\n')
}

export function hasBlock(text: string, name: string): boolean {
  return withoutBlock(text, name) !== text
}

/**
 * Which of our blocks has lost its end marker (hand-edited): install would add a second copy and
 * uninstall could not find where ours ends, so both refuse until the user puts the marker back.
 */
export function brokenBlock(text: string): string | undefined {
  for (const name of [ROWS_BLOCK, HMR_BLOCK]) {
    const found = blockLines(text, name)
    if (found !== undefined && found.end === -1) return `line ${found.start + 1} opens "${BEGIN}${name}" but no "${END}${name}" line follows it`
  }
  return undefined
}

/** Lines that carry YAML (not comments, not blank, not a `---` document start, which editors like to add). */
function content(text: string): string[] {
  const lines = text.split('\n').map(bare).filter(line => line.trim().length > 0 && !line.trimStart().startsWith('#'))
  return /^---(?:\s|$)/.test(lines[0] ?? '') ? lines.slice(1) : lines
}

/**
 * A user patch we can append list items to: empty, dsh's pre-written `[]`, or a block sequence
 * (every top-level line an item `- …`). Anything else (a flow list, a mapping) we refuse to touch.
 */
export function patchShape(text: string): 'empty' | 'empty-list' | 'sequence' | 'other' {
  const lines = content(text)
  if (lines.length === 0) return 'empty'
  if (lines.length === 1 && lines[0]!.trim() === '[]') return 'empty-list'
  return lines.every(line => line.startsWith('- ') || line === '-' || /^\s/.test(line)) && lines[0]!.startsWith('-') ? 'sequence' : 'other'
}

/** Remove dsh's `[]` line (the list our items start), keeping the comments above it. */
export function dropEmptyList(text: string): string {
  return text.split('\n').filter(line => bare(line).trim() !== '[]').join('\n')
}

/** The line ending a patch file uses (an editor may have saved it with CRLF). */
function eol(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n'
}

/** The text with one of our blocks replaced, where it is, by `body`; undefined when the block is not there. */
function replacedBlock(text: string, name: string, body: string): string | undefined {
  const found = blockLines(text, name)
  if (found === undefined || found.end === -1) return undefined
  const lines = text.split('\n')
  const bom = found.start === 0 && lines[0]!.startsWith('\uFEFF') ? '\uFEFF' : ''
  return [...lines.slice(0, found.start), `${bom}${body.slice(0, -1)}`, ...lines.slice(found.end + 1)].join('\n')
}

/**
 * The patch after install: the user's rows as they are, our HMR and rows blocks in the file's own line
 * ending. A block already there is rewritten where it stands, so a row of the user's after it (a
 * setting for one of our rows, `- id: shadow-recall` with `config`) stays after it; new blocks go last.
 */
export function mergedPatch(current: string, profile: ProfileName, headlessPatch: string): string {
  const ending = eol(current)
  let text = current
  let missing = ''
  for (const [name, body] of [[HMR_BLOCK, hmrBlock()], [ROWS_BLOCK, rowsBlock(profile, headlessPatch)]] as const) {
    const ours = body.replaceAll('\n', ending)
    const replaced = replacedBlock(text, name, ours)
    if (replaced === undefined) missing += ours
    else text = replaced
  }
  if (missing.length === 0) return text
  if (patchShape(withoutBlock(withoutBlock(text, ROWS_BLOCK), HMR_BLOCK)) === 'empty-list') text = dropEmptyList(text)
  return `${text.trimEnd()}${text.trim().length === 0 ? '' : ending}${missing}`
}

/** The patch after uninstall: our rows out; `[]` back when nothing else is left, so dsh still reads a list. */
export function restoredPatch(text: string, options: { readonly removeHmr: boolean }): string {
  let next = withoutBlock(text, ROWS_BLOCK)
  if (options.removeHmr) next = withoutBlock(next, HMR_BLOCK)
  const ending = eol(text)
  if (content(next).length === 0) next = `${next.trimEnd()}${next.trim().length === 0 ? '' : ending}[]${ending}`
  return next
}

// ---- the machine ----------------------------------------------------------------------------------

/** An executable on PATH, or undefined. */
export function which(command: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const folder of (env['PATH'] ?? '').split(delimiter)) {
    if (folder.length === 0) continue
    const candidate = join(folder, command)
    if (existsSync(candidate)) return candidate
  }
  return undefined
}

export function run(command: string, args: readonly string[], options: { readonly cwd?: string; readonly env: NodeJS.ProcessEnv; readonly timeoutMs?: number }): SpawnSyncReturns<string> {
  return spawnSync(command, [...args], { cwd: options.cwd, env: options.env, encoding: 'utf8', timeout: options.timeoutMs ?? 600_000, maxBuffer: 64 * 1024 * 1024 })
}

/**
 * What a failed dsh or pnpm run said, on one line: the error it threw when there is one (an uncaught
 * error ends with a stack trace and Node's version, so its last lines named neither the error nor the
 * file), else its last lines.
 */
export function failureOf(result: SpawnSyncReturns<string>): string {
  const lines = (result.stderr || result.stdout || '').trim().split('\n')
  const error = /^\w*(?:Error|Exception)(?: \[\w+\])?: /
  const at = lines.findIndex(line => error.test(line))
  if (at === -1) return lines.slice(-3).join(' | ')
  // dsh lists the rows that did not activate below its error: the one that threw says why (a
  // misspelt option of a row of the user's), the others only wait for it
  const cause = lines.slice(at + 1).find(line => /^\s*\S+: \w*(?:Error|Exception)(?: \[\w+\])?: /.test(line))
  return cause === undefined ? lines[at]!.trim() : `${lines[at]!.trim()}: ${cause.trim()}`
}

/** The profile patch dsh could not parse, when that is what `failure` (from failureOf) says. */
export function unparsedPatch(failure: string): string | undefined {
  return /failed to parse \w+ (\S+\.ya?ml): /.exec(failure)?.[1]
}

/** `22.19.0` → [22, 19, 0] (a leading `v` allowed). */
export function versionOf(text: string): number[] {
  return text.trim().replace(/^v/, '').split(/[.-]/).slice(0, 3).map(Number)
}

export function nodeIsEnough(version: string): boolean {
  const [major = 0, minor = 0] = versionOf(version)
  return major > 22 || (major === 22 && minor >= 19)
}

/** The version of a package as a profile's plugins would load it (the profile, then dsh's fallback folder). */
export function resolvedVersion(profile: string, name: string): string | undefined {
  try {
    const require = createRequire(join(profile, 'package.json'))
    return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version
  } catch {
    return undefined
  }
}

export interface ProfileManifest {
  dependencies?: Record<string, string>
  dsh?: { profile?: { bundles?: string[] } }
}

export function profileManifest(home: string, profile: ProfileName): ProfileManifest | undefined {
  try {
    return JSON.parse(readFileSync(join(profileDir(home, profile), 'package.json'), 'utf8')) as ProfileManifest
  } catch {
    return undefined
  }
}

/** The installable package this CLI runs from (the packed `dsh-shadow-context`), or undefined in a source checkout. */
export function ownPackageRoot(): string | undefined {
  for (let folder = dirname(fileURLToPath(import.meta.url)); ; folder = dirname(folder)) {
    const manifest = join(folder, 'package.json')
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; bin?: unknown }
        if (parsed.name === PACKAGE && parsed.bin !== undefined) return folder
      } catch {
        // not ours; keep climbing
      }
    }
    if (dirname(folder) === folder) return undefined
  }
}

/** This CLI's version: the package it was installed from (the packed package, or packages/cli here). */
export function cliVersion(): string {
  for (let folder = dirname(fileURLToPath(import.meta.url)); ; folder = dirname(folder)) {
    const manifest = join(folder, 'package.json')
    if (existsSync(manifest)) return `${(JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version ?? 'unknown'} (Shadow Context for dsh ${LAUNCHER_VERSION})`
    if (dirname(folder) === folder) return 'unknown'
  }
}
