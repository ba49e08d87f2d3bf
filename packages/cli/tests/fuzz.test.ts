/**
 * Hostile input for the whole CLI, in process (`runCli`, the binary's own entry): 10 000 generated
 * argument vectors over every command against a store and dsh home written by a real session.
 * Every run ends with 0 or a documented code and a one-line message, never an untyped error
 * (exit 1 is only the catch-all's) or a stack trace; the store the read commands see is unchanged,
 * and what the writing commands (repair, reindex) leave behind, on their own copy, verifies clean.
 */
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { sessionTag } from '@dsh-shadow/store'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { ShadowCapture, ShadowCompactionEngine, ShadowRecall } from 'dsh-shadow-context'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT, runCli, type CliIo } from '../src/index.ts'

const RUNS = 10_000
/** Levels below the scratch root that the fuzz's working directory sits: no generated `..` chain is longer. */
const DEPTH = 6

let root: string
/** The dsh home (logs + store) the read-only commands see; must come out byte-for-byte the same in content. */
let pristine: string
/** A copy for repair and reindex. */
let writable: string
/** A copy whose dsh log is garbage (the store is fine): every log reader must fail typed. */
let corrupt: string
/** Where generated paths land (working directory DEPTH levels down). */
let scratch: string
let cwd: string
let sessionId: string
let previousCwd: string
let previousHome: string | undefined

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

async function cli(argv: readonly string[]): Promise<Run> {
  let stdout = ''
  let stderr = ''
  const io: CliIo = { stdout: text => void (stdout += text), stderr: text => void (stderr += text), stderrIsTTY: false }
  const code = await runCli(argv, io)
  return { code, stdout, stderr }
}

/** Every row of every table (FTS shadow tables included), hashed: "unchanged" down to the byte. */
function contentHash(file: string): string {
  if (!existsSync(file)) return 'absent'
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    const hash = createHash('sha256')
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>
    for (const { name } of tables) {
      hash.update(`\u0000table ${name}\u0000`)
      for (const row of db.prepare(`SELECT * FROM "${name.replaceAll('"', '""')}"`).all()) {
        hash.update(JSON.stringify(row, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : typeof value === 'bigint' ? String(value) : value)))
      }
    }
    return hash.digest('hex')
  } finally {
    db.close()
  }
}

/** Names and bytes of every file under a directory (the dsh logs must not change either). */
function treeHash(dir: string): string {
  const hash = createHash('sha256')
  const walk = (path: string): void => {
    for (const entry of readdirSync(path, { withFileTypes: true }).toSorted((a, b) => a.name.localeCompare(b.name))) {
      const full = join(path, entry.name)
      hash.update(`${full.slice(dir.length)}\u0000`)
      if (entry.isDirectory()) walk(full)
      else hash.update(readFileSync(full))
    }
  }
  walk(dir)
  return hash.digest('hex')
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-shadow-fuzz-'))
  pristine = join(root, 'pristine')
  writable = join(root, 'writable')
  corrupt = join(root, 'corrupt')
  scratch = join(root, 'scratch')
  const scenario = codingSession({ turns: 40, seed: 45 })
  const harness = await DshHarness.create({
    home: pristine, invariants: false, tools: scenario.tools(), model: new ScriptedModel({ contextWindow: 16_000 }),
    plugins: dshHome => [{ plugin: ShadowCapture, config: { home: dshHome } }, { plugin: ShadowRecall }],
    compaction: { plugin: ShadowCompactionEngine, config: {} },
  })
  const agent = await harness.createAgent({ sessionId: 'fuzz-session-0001', cwd: pristine })
  sessionId = agent.session.id
  await harness.play(agent, scenario.turns)
  await harness.dispose({ keepHome: true })
  cpSync(pristine, writable, { recursive: true })
  cpSync(pristine, corrupt, { recursive: true })
  for (const log of readdirSync(join(corrupt, 'sessions'), { recursive: true, encoding: 'utf8' }).filter(path => path.includes(sessionId) && statSync(join(corrupt, 'sessions', path)).isFile())) {
    writeFileSync(join(corrupt, 'sessions', log), 'not a dsh log\n'.repeat(100))
  }
  cwd = join(scratch, ...Array.from({ length: DEPTH }, (_, level) => `d${level}`))
  mkdirSync(cwd, { recursive: true })
  // Relative paths land in the scratch tree; a command given no --home uses the pristine home,
  // never the user's ~/.dsh.
  previousCwd = process.cwd()
  previousHome = process.env['DSH_HOME']
  process.chdir(cwd)
  process.env['DSH_HOME'] = pristine
})

afterAll(() => {
  if (previousCwd !== undefined) process.chdir(previousCwd)
  if (previousHome === undefined) delete process.env['DSH_HOME']
  else process.env['DSH_HOME'] = previousHome
  rmSync(root, { recursive: true, force: true })
})

describe('dsh-shadow under hostile input', () => {
  it(`ends ${RUNS} generated command lines with a documented exit code and one clear line, and changes nothing it should not`, async () => {
    const storeFile = join(pristine, 'shadow-context', 'shadow.db')
    const statsBefore = (await cli(['--json', 'stats'])).stdout
    const rowsBefore = contentHash(storeFile)
    const logsBefore = treeHash(join(pristine, 'sessions'))
    const tag = sessionTag(sessionId)
    const checkpoints = (JSON.parse((await cli(['--json', 'timeline', sessionId])).stdout) as { checkpoints: Array<{ checkpointId: string }> }).checkpoints
    expect(checkpoints.length).toBeGreaterThan(0)

    const huge = fc.string({ minLength: 1, maxLength: 4 }).map(text => text.repeat(50_000))
    const junk = fc.oneof(
      { arbitrary: fc.string({ maxLength: 30 }), weight: 4 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
      fc.constantFrom('', ' ', '-', '--', '---', '-x', '--json=1', '\u0000', 'a\u0000b', '\n', '\u001b[2J', '%s%n', '${HOME}', '"', "'", '*', 'NEAR(a b)', 'body:x', '()', '1e400', 'NaN', '-0', 'undefined', 'null', '__proto__', 'constructor'),
      { arbitrary: huge, weight: 1 },
    )
    /** Mostly well-formed, sometimes junk: the fuzz must reach deep paths as well as validation. */
    const usually = (valid: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: junk, weight: 1 })
    const segment = fc.oneof(
      { arbitrary: fc.constantFrom('..', '.', '', 'shadow-context', 'shadow.db', 'sessions', 'out.md', 'x.db', 'd0', 'd1'), weight: 3 },
      { arbitrary: fc.string({ minLength: 1, maxLength: 12 }).map(name => name.replaceAll('/', '_')), weight: 1 },
    )
    // At most DEPTH segments, so even all-`..` stays inside the scratch tree; relative paths start
    // with "./" so none begins with "~" (dsh expands that to the user's home).
    const scratchPath = fc.tuple(fc.boolean(), fc.array(segment, { maxLength: DEPTH })).map(([absolute, parts]) => (absolute ? join(cwd, ...parts) : ['.', ...parts].join('/')))
    // Junk as a path, confined too: one segment under the working directory (no "/" to go absolute
    // or climb, no leading "~" for dsh to expand), NUL, control characters and megabytes kept.
    const junkPath = junk.map(text => text.replaceAll('/', '_').replace(/^~/, '_~'))
    const reference = usually(fc.constantFrom(sessionId, sessionId.slice(0, 10), tag, 'fuzz', 'no-such-session', `${sessionId}x`))
    const seq = fc.oneof(fc.nat(120).map(String), fc.constantFrom('99999999999999999999', '9007199254740993', '1e3'))
    const pointer = usually(fc.oneof(
      fc.nat(120).map(n => `${tag}.${n}`),
      fc.constantFrom(...checkpoints.map(checkpoint => checkpoint.checkpointId), `${tag}.c999`, 'zzzzzz.c1', 'zzzzzz.1', `${tag}.`, `.${tag}`, `${tag}.-1`, `${tag}.1.2`),
      fc.tuple(fc.constantFrom(sessionId, tag, 'nope', ''), seq, seq).map(([session, from, to]) => `${session}:${from}-${to}`),
    ))
    const count = usually(fc.oneof(fc.nat(30).map(String), fc.constantFrom('0', '-1', '1.5', '1e3', '0x10', 'abc', '', '99999999999999999999', '200', '201')))
    const time = usually(fc.oneof(
      fc.constantFrom('2h ago', '30m ago', '1d ago', '10y ago', 'now', '0 ago', '-2h ago', '2026-13-45', 'yesterday'),
      fc.integer({ min: -100, max: 100 }).map(days => new Date(Date.UTC(2026, 0, 1) + days * 86_400_000).toISOString()),
    ))
    const words = fc.array(usually(fc.constantFrom('staging', 'database', 'port', 'cache', '缓存', '过期时间', 'orders', 'ECONNREFUSED', 'src/db/pool.ts', 'OR', 'AND', 'NOT', '"', '*')), { minLength: 0, maxLength: 4 })
    /** An option with its value, or nothing. */
    const maybe = (flag: string, value: fc.Arbitrary<string>): fc.Arbitrary<string[]> => fc.option(value.map(text => [flag, text]), { nil: [] as string[], freq: 2 })
    const flag = (name: string): fc.Arbitrary<string[]> => fc.constantFrom([], [name])
    const readHome = fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 3 }, fc.constant<string[]>(['--home', pristine]), fc.constant<string[]>(['--home', corrupt]), scratchPath.map(path => ['--home', path]), junkPath.map(text => ['--home', text]))
    const readStore = fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 4 }, fc.constant<string[]>(['--store', storeFile]), scratchPath.map(path => ['--store', path]), junkPath.map(text => ['--store', text]))
    const globals = (home: fc.Arbitrary<string[]>, store: fc.Arbitrary<string[]>): fc.Arbitrary<string[]> => fc.tuple(home, store, flag('--json')).map(parts => parts.flat())

    const commands: fc.Arbitrary<string[]> = fc.oneof(
      fc.tuple(fc.constant<string[]>(['sessions']), maybe('--workspace', usually(fc.constantFrom(pristine, '/nowhere')))).map(parts => parts.flat()),
      fc.tuple(fc.constant<string[]>(['timeline']), fc.option(reference, { nil: undefined })).map(([name, ref]) => ref === undefined ? name : [...name, ref]),
      fc.tuple(fc.constant<string[]>(['search']), words, fc.oneof(
        { arbitrary: reference.map(ref => ['--session', ref]), weight: 3 }, { arbitrary: fc.constant(['--all']), weight: 2 },
        fc.constantFrom([], ['--all', '--session', sessionId]),
      ), maybe('--since', time), maybe('--until', time),
        maybe('--role', usually(fc.constantFrom('user', 'assistant', 'tool', 'system'))), maybe('--tool', usually(fc.constantFrom('shell', 'read_file'))), maybe('--limit', count)).map(parts => parts.flat()),
      fc.tuple(fc.constant<string[]>(['read']), fc.option(pointer, { nil: undefined, freq: 10 }), maybe('--before', count), maybe('--after', count)).map(([name, at, ...rest]) => [...name, ...(at === undefined ? [] : [at]), ...rest.flat()]),
      fc.tuple(fc.constant<string[]>(['export']), reference, maybe('--format', usually(fc.constantFrom('md', 'jsonl'))), maybe('--output', fc.oneof(scratchPath, junkPath))).map(parts => parts.flat()),
      fc.tuple(fc.constant<string[]>(['verify']), fc.option(reference, { nil: undefined, freq: 2 })).map(([name, ref]) => ref === undefined ? name : [...name, ref]),
      fc.constant<string[]>(['stats']),
      fc.tuple(fc.constantFrom(['help'], ['--help'], ['-h']), fc.constantFrom([], ['sessions'], ['read'], ['nope'])).map(parts => parts.flat()),
      fc.tuple(fc.constantFrom('sessions', 'timeline', 'search', 'read', 'export', 'verify', 'stats'), fc.constantFrom('--help', '--bogus', '-z', '--json', '--limit')).map(parts => [...parts]),
      // unknown commands and free junk
      fc.tuple(junk, fc.array(junk, { maxLength: 3 })).map(([first, rest]) => [first, ...rest]),
    )
    // repair and reindex write: their home and store are the writable copy or scratch paths.
    const writeHome = fc.oneof({ arbitrary: fc.constant<string[]>(['--home', writable]), weight: 4 }, fc.constant<string[]>(['--home', corrupt]), scratchPath.map(path => ['--home', path]), junkPath.map(text => ['--home', text]))
    const writeStore = fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 4 }, fc.constant<string[]>(['--store', join(writable, 'shadow-context', 'shadow.db')]), scratchPath.map(path => ['--store', path]))
    const writers: fc.Arbitrary<string[]> = fc.oneof(
      fc.tuple(fc.constant<string[]>(['repair']), fc.oneof(reference.map(ref => [ref]), fc.constant<string[]>(['--all']), fc.constant<string[]>([]), reference.map(ref => [ref, '--all'])), flag('--fresh')).map(parts => parts.flat()),
      fc.constant<string[]>(['reindex']),
    )
    const isWriter = (argv: readonly string[]): boolean => argv.includes('repair') || argv.includes('reindex')
    const cases = fc.oneof(
      { arbitrary: fc.tuple(globals(readHome, readStore), commands, fc.boolean()).map(([options, command, before]) => ({ writer: false, argv: before ? [...options, ...command] : [...command, ...options] })), weight: 40 },
      { arbitrary: fc.tuple(globals(writeHome, writeStore), writers).map(([options, command]) => ({ writer: true, argv: [...options, ...command] })), weight: 1 },
    ).filter(({ writer, argv }) => writer || !isWriter(argv)) // free junk must not name a writing command

    // Always run first: inputs that once broke the CLI (a stray generator change must not lose them).
    const regressions: Array<{ writer: boolean; argv: string[] }> = [
      { writer: false, argv: ['timeline'] }, // a subcommand's usage error used to process.exit(1)
      { writer: false, argv: ['sessions', '--bogus'] },
      { writer: false, argv: ['--home', 'n'.repeat(300), '--store', storeFile, 'verify'] }, // unreadable dsh logs
      { writer: false, argv: ['--home', corrupt, 'verify'] }, // a dsh log that cannot be parsed
      { writer: true, argv: ['--home', corrupt, 'repair', '--all', '--fresh'] },
      { writer: false, argv: ['export', sessionId, '--output', '.'] }, // output path is a directory
      { writer: false, argv: ['export', sessionId, '--output', 'a\u0000b'] },
      { writer: false, argv: ['timeline', ''] }, // the empty prefix matched every session
      { writer: false, argv: ['--home', '', 'stats'] },
      { writer: false, argv: ['read', `${sessionId}:99999999999999999999-1`] },
      { writer: false, argv: ['timeline', 'x\ny\u001b[2J'.repeat(500)] }, // echoed input stays one short line
      { writer: true, argv: ['--home', writable, 'repair', 'no-such-session', '--fresh'] }, // used to empty the store
      { writer: true, argv: ['--home', writable, 'repair', sessionId.slice(0, 8)] }, // a prefix, as the help promises
      { writer: true, argv: ['--home', writable, '--store', join(scratch, 'd0'), 'repair', '--all', '--fresh'] }, // used to move a directory
    ]
    const tally = new Map<number, number>()
    const COMMANDS = ['sessions', 'timeline', 'search', 'read', 'export', 'verify', 'repair', 'reindex', 'stats']
    const reached = new Map<string, { runs: number; ok: number }>(COMMANDS.map(name => [name, { runs: 0, ok: 0 }]))
    const documented = new Set<number>([EXIT.ok, EXIT.usage, EXIT.unavailable, EXIT.notFound, ...Array.from({ length: 8 }, (_, bits) => EXIT.verify + bits)])
    let writes = 0
    const writableStore = join(writable, 'shadow-context', 'shadow.db')
    await fc.assert(fc.asyncProperty(cases, async ({ writer, argv }) => {
      const writableBefore = writer ? contentHash(writableStore) : undefined
      const run = await cli(argv)
      tally.set(run.code, (tally.get(run.code) ?? 0) + 1)
      const command = reached.get(argv.find(word => COMMANDS.includes(word)) ?? '')
      if (command !== undefined) {
        command.runs += 1
        if (run.code === EXIT.ok) command.ok += 1
      }
      if (writer) writes += 1
      const shown = `argv ${JSON.stringify(argv).slice(0, 300)} → ${run.code}: ${run.stderr.slice(0, 300)}`
      expect(documented.has(run.code), shown).toBe(true) // exit 1 is only ever the catch-all for an untyped error
      expect(run.stderr, shown).not.toMatch(/^\s+at .+[:(]\d+:\d+\)?$/m)
      // a writing command that fails has written nothing (nor set the store aside)
      if (writer && run.code !== EXIT.ok) expect(contentHash(writableStore), shown).toBe(writableBefore)
      const lines = run.stderr.split('\n')
      const messages = lines.filter(line => /^(dsh-shadow|error): /.test(line))
      if (run.code === EXIT.ok) expect(messages.filter(line => line.startsWith('dsh-shadow: ')), shown).toEqual([])
      else if (run.code >= EXIT.verify) expect(run.stdout, shown).toMatch(/verify: the store differs|"clean":false/) // the verdict is the output
      else if (messages.length === 0 && run.code === EXIT.usage) expect(run.stderr, shown).toMatch(/^Usage: dsh-shadow /) // no command (or `help <unknown>`): the usage is the answer
      else {
        expect(messages, shown).toHaveLength(1)
        expect(messages[0]!.length, shown).toBeLessThanOrEqual(1_100)
        // the message is whole on its line: after it comes nothing, or commander's usage after a blank line
        const after = lines.slice(lines.indexOf(messages[0]!) + 1)
        expect(after.join('\n') === '' || (after[0] === '' && after[1]?.startsWith('Usage: dsh-shadow ') === true), shown).toBe(true)
      }
    }), { numRuns: RUNS, seed: 20260601, examples: regressions.map(example => [example]) })

    const total = [...tally.values()].reduce((sum, value) => sum + value, 0)
    expect(total).toBeGreaterThanOrEqual(RUNS)
    const byCode = [...tally.entries()].toSorted(([a], [b]) => a - b).map(([code, runs]) => `exit ${code}: ${runs}`).join(' · ')
    console.log(`cli fuzz: ${RUNS} runs (${writes} repair/reindex) · ${tally.get(EXIT.ok) ?? 0} valid · ${RUNS - (tally.get(EXIT.ok) ?? 0)} typed errors · ${byCode}`)
    console.log(`cli fuzz by command (valid/runs): ${[...reached.entries()].map(([name, { runs, ok }]) => `${name} ${ok}/${runs}`).join(' · ')}`)
    expect(tally.get(EXIT.ok) ?? 0).toBeGreaterThan(RUNS / 10)
    // every command's own work was reached, not only argument validation
    for (const [name, { ok }] of reached) expect(ok, name).toBeGreaterThan(10)
    expect(writes).toBeGreaterThan(50)

    // the read-only commands changed nothing: same stats, same rows, same dsh logs
    expect((await cli(['--json', 'stats'])).stdout).toBe(statsBefore)
    expect(contentHash(storeFile)).toBe(rowsBefore)
    expect(treeHash(join(pristine, 'sessions'))).toBe(logsBefore)
    // what repair and reindex left behind is still a store that agrees with the dsh log
    const verified = await cli(['--home', writable, 'verify'])
    expect(verified, verified.stderr).toMatchObject({ code: EXIT.ok })
    expect(verified.stdout).toContain('verify: clean')
    expect(statSync(cwd).isDirectory()).toBe(true)
  })
})
