/**
 * The store path from config: relative paths stay inside the dsh home, only an explicit absolute
 * path may point elsewhere, and junk gets a typed StorePathError (the function never touches disk).
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_STORE_FILE, resolveStorePath, StorePathError } from '../src/store-path.ts'

let root: string
let home: string
let outside: string

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'shadow-store-path-'))
  home = join(root, 'home')
  outside = join(root, 'outside')
  mkdirSync(home)
  mkdirSync(outside)
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

function refused(path: unknown, at: unknown = home): StorePathError {
  let thrown: unknown
  try {
    resolveStorePath(path as string, at as string)
  } catch (error) {
    thrown = error
  }
  expect(thrown, `${JSON.stringify(path)} should be refused`).toBeInstanceOf(StorePathError)
  return thrown as StorePathError
}

/** Strictly inside the home: a file under it, never the home itself nor anything above it. */
function inside(target: string): boolean {
  const rest = relative(home, target)
  return rest.length > 0 && rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest)
}

describe('resolveStorePath', () => {
  it('defaults to <home>/shadow-context/shadow.db, for a missing and an empty path', () => {
    expect(resolveStorePath(undefined, home)).toBe(join(home, DEFAULT_STORE_FILE))
    expect(resolveStorePath('', home)).toBe(join(home, DEFAULT_STORE_FILE))
  })

  it('keeps relative paths inside the dsh home', () => {
    expect(resolveStorePath('custom/x.db', home)).toBe(join(home, 'custom', 'x.db'))
    expect(resolveStorePath('./x.db', home)).toBe(join(home, 'x.db'))
    expect(resolveStorePath('a/../b.db', home)).toBe(join(home, 'b.db'))
    // climbing out and straight back in ends inside: the check is on where the path lands
    expect(resolveStorePath(`../home/x.db`, home)).toBe(join(home, 'x.db'))
    // "~" is not expanded in a store path: it is a relative name like any other
    expect(resolveStorePath('~/x.db', home)).toBe(join(home, '~', 'x.db'))
    // odd but harmless names stay odd names inside the home
    expect(resolveStorePath('  ', home)).toBe(join(home, '  '))
  })

  it('takes names that merely start with dots as names inside the home', () => {
    expect(resolveStorePath('..shadow.db', home)).toBe(join(home, '..shadow.db'))
    expect(resolveStorePath('...', home)).toBe(join(home, '...'))
    expect(resolveStorePath('..x/y.db', home)).toBe(join(home, '..x', 'y.db'))
    if (sep === '/') expect(resolveStorePath('..\\x.db', home)).toBe(join(home, '..\\x.db')) // no separator on POSIX
  })

  it('refuses relative paths that climb out of the home, or name the home itself', () => {
    for (const path of ['..', '../', '../x.db', 'a/../../x.db', 'shadow-context/../../x.db', '../outside/x.db', `..${sep}..${sep}x.db`, '.', './', 'a/..']) {
      const error = refused(path)
      expect(error.message).toContain(JSON.stringify(path))
      expect(error.message).toMatch(/absolute path/) // says how to store it elsewhere on purpose
    }
  })

  it('refuses NUL anywhere, in the path and in the home', () => {
    for (const path of ['\u0000', 'x\u0000.db', 'a/\u0000/b.db', `${outside}/x\u0000.db`]) expect(refused(path).message).toMatch(/NUL/)
    expect(refused('x.db', `${home}\u0000`).message).toMatch(/NUL/)
    expect(refused(undefined, `${home}\u0000`).message).toMatch(/NUL/)
  })

  it('refuses a mistyped connection string or an unknown URL instead of taking it for a file in the home, never echoing it', () => {
    for (const path of ['postgres:/writer:hunter2-secret@db.internal/dsh', 'postgresql:writer:hunter2-secret@db/dsh', 'POSTGRES:/x', 'mysql://writer:hunter2-secret@db/dsh', 'file:///tmp/x.db']) {
      const error = refused(path)
      expect(error.message).toMatch(/postgres:\/\//)
      expect(error.message).not.toContain('hunter2')
    }
    expect(resolveStorePath('postgres://writer:pw@db/dsh', home)).toBe('postgres://writer:pw@db/dsh')
    // a file name that merely contains a colon is still a file
    expect(resolveStorePath('shadow:v2.db', home)).toBe(join(home, 'shadow:v2.db'))
  })

  it('refuses an empty or blank home: it resolved to the working directory, so the store landed in the project', () => {
    for (const blank of ['', ' ', '\t\n']) {
      expect(refused(undefined, blank).message).toMatch(/home must not be empty/)
      expect(refused('x.db', blank).message).toMatch(/home must not be empty/)
    }
  })

  it('refuses values that are not strings with a typed error', () => {
    for (const path of [42, null, {}, ['x.db'], true]) expect(refused(path).message).toMatch(/must be a string/)
    expect(refused('x.db', 42).message).toMatch(/must be a string/)
  })

  it('accepts an explicit absolute path as given (normalized), inside or outside the home', () => {
    expect(resolveStorePath(join(outside, 'x.db'), home)).toBe(join(outside, 'x.db'))
    expect(resolveStorePath(`${outside}/a/../x.db`, home)).toBe(join(outside, 'x.db'))
    expect(resolveStorePath(join(home, 'y.db'), home)).toBe(join(home, 'y.db'))
  })

  it('follows symlinks the home\'s owner put inside the home (confinement is lexical)', () => {
    // Config cannot create links; a link inside the home is its owner's choice (a store on another
    // disk, a home that is itself a link), so the path is judged by its spelling, not its target.
    symlinkSync(outside, join(home, 'elsewhere'))
    expect(resolveStorePath('elsewhere/x.db', home)).toBe(join(home, 'elsewhere', 'x.db'))
    symlinkSync(home, join(root, 'home-link'))
    expect(resolveStorePath('x.db', join(root, 'home-link'))).toBe(join(root, 'home-link', 'x.db'))
    refused('../x.db', join(root, 'home-link'))
  })

  it('never lands outside the home for 5 000 generated relative paths', () => {
    const segment = fc.oneof(
      { arbitrary: fc.constantFrom('..', '.', '', '...', '..x', 'home', 'outside', 'shadow.db', '~', ' '), weight: 3 },
      { arbitrary: fc.string({ maxLength: 6 }), weight: 1 },
    )
    const relativePath = fc.array(segment, { maxLength: 8 }).map(parts => parts.join('/')).filter(path => !isAbsolute(path))
    let accepted = 0
    let typed = 0
    fc.assert(fc.property(relativePath, path => {
      try {
        const target = resolveStorePath(path, home)
        if (path.length > 0) expect(inside(target), `${JSON.stringify(path)} → ${target}`).toBe(true)
        expect(target).toBe(path.length === 0 ? join(home, DEFAULT_STORE_FILE) : resolve(home, path))
        accepted += 1
      } catch (error) {
        if (!(error instanceof StorePathError)) throw error
        // refused only for a real reason: NUL, or landing on or above the home
        expect(path.includes('\u0000') || !inside(resolve(home, path)), JSON.stringify(path)).toBe(true)
        typed += 1
      }
    }), { numRuns: 5_000, seed: 20260602 })
    expect(accepted).toBeGreaterThan(500)
    expect(typed).toBeGreaterThan(500)
  })
})
