/**
 * Writing the install record (`<home>/shadow-context/install.json`) safely when several
 * `dsh-shadow install | uninstall` run at once: each change is a read-modify-write of the freshly
 * read record under an exclusive lock file, and the new record replaces the old by a rename, so
 * a reader never sees half a file. Two installs of different profiles used to each read the
 * record at their start and write it whole at their end: the one that wrote last dropped the
 * other's profile, and uninstall then left that profile's changes in place.
 */
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname } from 'node:path'
import { CliError, EXIT } from './format.ts'
import { manifestPath, readManifest, type InstallManifest } from './profile.ts'

/** A lock older than this is a crashed holder's (a holder keeps it for one small write). */
const STALE_MS = 10_000
/** How long a change waits for a live holder before it gives up. */
const WAIT_MS = 15_000

export interface LockOptions {
  readonly waitMs?: number
  readonly staleMs?: number
}

interface LockInfo {
  readonly pid: number
  readonly host: string
  readonly token: string
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: a process of another user holds that pid, alive
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The lock's holder, when it is stale: its process gone (on this host) or the lock older than `staleMs`. Undefined: live, or gone already. */
function staleHolder(lock: string, staleMs: number): string | undefined {
  let text: string
  let age: number
  try {
    text = readFileSync(lock, 'utf8')
    age = Date.now() - statSync(lock).mtimeMs
  } catch {
    return undefined
  }
  let info: Partial<LockInfo> = {}
  try {
    info = JSON.parse(text) as Partial<LockInfo>
  } catch {
    // cut short by a crash between create and write: only its age tells
  }
  const dead = info.host === hostname() && typeof info.pid === 'number' && !alive(info.pid)
  return dead || age > staleMs ? text : undefined
}

/** Create the lock holding `content`; false when it exists. */
function created(lock: string, content: string): boolean {
  let fd: number
  try {
    fd = openSync(lock, 'wx')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
  try {
    writeSync(fd, content)
  } finally {
    closeSync(fd)
  }
  return true
}

/**
 * Run `change` holding the record's lock. A stale lock is moved aside by a rename (atomic: of two
 * processes breaking it, one moves it) and deleted if it is still the stale one; a live lock
 * moved by mistake (taken anew between the look and the move) is put back.
 */
export function withRecordLock<T>(home: string, change: () => T, options: LockOptions = {}): T {
  const lock = `${manifestPath(home)}.lock`
  mkdirSync(dirname(lock), { recursive: true })
  const mine = JSON.stringify({ pid: process.pid, host: hostname(), token: randomBytes(8).toString('hex') } satisfies LockInfo)
  const deadline = Date.now() + (options.waitMs ?? WAIT_MS)
  for (;;) {
    if (created(lock, mine)) break
    const stale = staleHolder(lock, options.staleMs ?? STALE_MS)
    if (stale !== undefined) {
      const aside = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}`
      try {
        renameSync(lock, aside)
      } catch {
        continue // another process moved or released it first
      }
      const moved = readFileSync(aside, 'utf8')
      // a fresh holder's: back where it was, unless a third took the place meanwhile (then two
      // hold it: that needs three processes within the same few microseconds of a stale lock)
      if (moved !== stale) created(lock, moved)
      rmSync(aside, { force: true })
      continue
    }
    if (Date.now() > deadline) throw new CliError(`another dsh-shadow install or uninstall holds ${lock}; the install record was not changed. Run again when it has finished (a crashed one's lock is taken over after ${Math.round((options.staleMs ?? STALE_MS) / 1000)} s)`, EXIT.unavailable)
    sleep(10 + Math.floor(Math.random() * 20))
  }
  try {
    return change()
  } finally {
    rmSync(lock, { force: true })
  }
}

/** Write the record whole: to a file beside it, then renamed over it. */
function writeRecord(home: string, manifest: InstallManifest): void {
  const path = manifestPath(home)
  mkdirSync(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileSync(temporary, `${JSON.stringify(manifest, null, 2)}\n`)
  renameSync(temporary, path)
}

/**
 * Change the record as read now, under the lock: `change` edits it in place and may return false
 * to have the file removed instead (no profile left). Returns the record as written.
 */
export function updateRecord(home: string, change: (manifest: InstallManifest) => boolean, options?: LockOptions): InstallManifest {
  return withRecordLock(home, () => {
    const manifest = readManifest(home)
    if (change(manifest)) writeRecord(home, manifest)
    else rmSync(manifestPath(home), { force: true })
    return manifest
  }, options)
}
