/**
 * The install record under concurrent installs (install-record.ts): writers in several processes
 * never lose one another's profile, and a crashed writer's lock is taken over.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CliError } from '../src/format.ts'
import { updateRecord, withRecordLock } from '../src/install-record.ts'
import { manifestPath, readManifest, type ProfileRecord } from '../src/profile.ts'

const WRITER = new URL('./fixtures/record-writer.ts', import.meta.url).pathname
const homes: string[] = []
afterEach(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-shadow-record-lock-'))
  homes.push(dir)
  return dir
}

function writer(dir: string, profile: string, count: number): Promise<{ violations: number; writes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', WRITER, dir, profile, String(count)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', chunk => void (out += String(chunk)))
    child.stderr.on('data', chunk => void (err += String(chunk)))
    child.once('error', reject)
    child.once('close', code => (code === 0 ? resolve(JSON.parse(out) as { violations: number; writes: number }) : reject(new Error(`writer ${profile} exited ${code}: ${err}`))))
  })
}

const record = (version: string): ProfileRecord => ({ tarball: '/stash/x.tgz', sha: 'a', version, hmrBefore: null, hmrPinned: false, presetCopied: false })

describe('the install record', () => {
  it('keeps every profile while writers in several processes rewrite it at once', async () => {
    const dir = home()
    // two writers per profile would overwrite each other's version by design: one per profile,
    // each writing hundreds of times while the other does
    const results = await Promise.all([writer(dir, 'headless', 300), writer(dir, 'web', 300)])
    expect(results).toEqual([{ violations: 0, writes: 300 }, { violations: 0, writes: 300 }])
    expect(readManifest(dir).profiles).toMatchObject({ headless: { version: '299' }, web: { version: '299' } })
    // neither the lock nor a temporary file is left
    expect(readdirSync(join(dir, 'shadow-context'))).toEqual(['install.json'])
  }, 120_000)

  it('takes over the lock of a writer that died holding it', () => {
    const dir = home()
    mkdirSync(join(dir, 'shadow-context'), { recursive: true })
    const lock = `${manifestPath(dir)}.lock`
    // a pid no process has (beyond pid_max), on this host
    writeFileSync(lock, JSON.stringify({ pid: 2 ** 30, host: hostname(), token: 'dead' }))
    updateRecord(dir, manifest => {
      manifest.profiles.headless = record('1')
      return true
    }, { waitMs: 0 })
    expect(readManifest(dir).profiles.headless?.version).toBe('1')
    expect(existsSync(lock)).toBe(false)
    // a lock cut short before its holder wrote it, old: taken over by its age
    writeFileSync(lock, '')
    utimesSync(lock, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
    updateRecord(dir, manifest => {
      manifest.profiles.web = record('2')
      return true
    }, { waitMs: 0 })
    expect(readManifest(dir).profiles).toMatchObject({ headless: { version: '1' }, web: { version: '2' } })
  })

  it('waits for a live holder, then gives up with a typed error and leaves the record as it was', () => {
    const dir = home()
    updateRecord(dir, manifest => {
      manifest.profiles.headless = record('1')
      return true
    })
    let thrown: unknown
    withRecordLock(dir, () => {
      try {
        updateRecord(dir, manifest => {
          delete manifest.profiles.headless
          return false
        }, { waitMs: 50 })
      } catch (error) {
        thrown = error
      }
    })
    expect(thrown).toBeInstanceOf(CliError)
    expect((thrown as CliError).message).toMatch(/another dsh-shadow install or uninstall holds .*install\.json\.lock; the install record was not changed/)
    expect(readManifest(dir).profiles.headless?.version).toBe('1')
    // released: the next change goes through
    expect(updateRecord(dir, () => false, { waitMs: 0 }).profiles.headless?.version).toBe('1')
    expect(existsSync(manifestPath(dir))).toBe(false)
  })
})
