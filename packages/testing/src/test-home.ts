/**
 * Vitest setup file (both configs): every test file starts with DSH_HOME naming a fresh temp dir,
 * so a plugin row or CLI call that is not given a home lands there, never in the user's ~/.dsh.
 * Harnesses and launcher homes set their own on top. Removed when the file's tests are done: an
 * `exit` handler alone never ran, since vitest ends its workers without a normal exit.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-test-home-'))
process.env['DSH_HOME'] = home
// a setup file's afterAll runs after the file's own (vitest runs after-hooks as a stack)
afterAll(() => rmSync(home, { recursive: true, force: true }))
