/**
 * Vitest setup file (both configs): every test file starts with DSH_HOME naming a fresh temp dir,
 * so a plugin row or CLI call that is not given a home lands there, never in the user's ~/.dsh.
 * Harnesses and launcher homes set their own on top. Removed when the test process exits.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-test-home-'))
process.env['DSH_HOME'] = home
process.once('exit', () => rmSync(home, { recursive: true, force: true }))
