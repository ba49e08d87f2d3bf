/**
 * The CLI as a new user meets it: version, the README's examples, one-line typo errors, honest
 * verify, wide tables, highlights, JSON errors, and the breaks of issue 12 item 11 (chmod of a
 * directory, expired rows as JSON, EPIPE, streamed export, terminal control sequences, repair of a
 * mistyped home). Each assertion here failed on the code before this change.
 */
import { spawn } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ShadowStore } from '@dsh-shadow/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/main.ts'
import { BIN, cliHome, runBin, type BinResult } from './support.ts'

let home: string
let sessionId: string
const scratch: string[] = []

function cli(...args: string[]): BinResult {
  return runBin(home, args)
}

/** A copy of the home a test may damage. */
function copyHome(): string {
  const copy = mkdtempSync(join(tmpdir(), 'dsh-shadow-polish-copy-'))
  cpSync(home, copy, { recursive: true })
  scratch.push(copy)
  return copy
}

/** The CLI in this process, with a terminal of this width (and colour) or a pipe. */
async function inProcess(args: readonly string[], terminal?: { columns: number; color: boolean }, at = home): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(['--home', at, ...args], {
    stdout: text => void (stdout += text),
    stderr: text => void (stderr += text),
    stderrIsTTY: false,
    ...(terminal === undefined ? {} : { stdoutColumns: terminal.columns, color: terminal.color }),
  })
  return { code, stdout, stderr }
}

/** The CLI in this process on another home, as a pipe. */
async function inProcessAt(at: string, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return inProcess(args, undefined, at)
}

beforeAll(async () => {
  ;({ home, sessionId } = await cliHome('dsh-shadow-polish-', 'polish-session-0001'))
})

afterAll(() => {
  rmSync(home, { recursive: true, force: true })
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true })
})

describe('dsh-shadow for a new user', () => {
  it('has --version', () => {
    const version = cli('--version')
    expect(version.code).toBe(0)
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+ \(Shadow Context for dsh 0\.1\.0-rc\.8\)\n$/)
  })

  it('runs every example of its README', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    const block = /## Example\n\n(?:[^\n]+\n\n)?```text\n([\s\S]*?)```/.exec(readme)![1]!
    const lines = block.split('\n').filter(line => line.startsWith('$ dsh-shadow '))
    expect(lines.length).toBeGreaterThanOrEqual(5)
    const checkpoint = (JSON.parse(cli('--json', 'timeline', sessionId).stdout) as { checkpoints: Array<{ checkpointId: string }> }).checkpoints[0]!.checkpointId
    for (const line of lines) {
      // the README names its session "demo-session" and checkpoint "k7q2mz.c3"; here they are this home's
      const args = line.slice('$ dsh-shadow '.length).replace(/ && echo clean$/, '').replaceAll('demo-session', sessionId).replaceAll('k7q2mz.c3', checkpoint)
        .match(/"[^"]*"|\S+/g)!.map(word => word.replace(/^"(.*)"$/, '$1'))
      const result = runBin(copyHome(), args)
      expect(result.code, `${line}\n${result.stderr}`).toBe(0)
      expect(result.stdout.length).toBeGreaterThan(0)
    }
  })

  it('prints stats as labelled lines, and says an empty store has no sessions instead of a table of zeros', async () => {
    const stats = await inProcess(['stats'])
    expect(stats.code).toBe(0)
    // the first lines were a table header with empty column names: a blank line, then a rule
    expect(stats.stdout.split('\n')[0]).toMatch(/^dsh home +\//)
    expect(stats.stdout).not.toContain('─')
    expect(stats.stdout).toMatch(/\nsessions +1\n/)
    const empty = mkdtempSync(join(tmpdir(), 'dsh-shadow-polish-empty-'))
    scratch.push(empty)
    const store = join(empty, 'shadow.db')
    await (await ShadowStore.open(store)).close()
    const none = await inProcessAt(empty, ['--store', store, 'stats'])
    expect(none.code).toBe(0)
    expect(none.stdout.split('\n')[0]).toMatch(/^dsh home +\//)
    expect(none.stdout).toContain('(no sessions yet')
    expect(none.stdout).not.toContain('─')
    expect(none.stdout).not.toMatch(/^messages/m)
    // verify of nothing: a line, not a header over no rows
    const verified = await inProcessAt(empty, ['--store', store, 'verify'])
    expect(verified.code).toBe(0)
    expect(verified.stdout).toBe('(no sessions in the store or the dsh logs)\nverify: clean\n')
  })

  it('says a typo in one line, with the suggestion and without a help dump', () => {
    const typo = cli('sesions')
    expect(typo.code).toBe(2)
    expect(typo.stderr.trim().split('\n')).toHaveLength(1)
    expect(typo.stderr).toContain('sessions')
    expect(typo.stderr).not.toContain('\\u000a')
    expect(typo.stderr).not.toContain('Usage:')
  })

  it('rejects --limit 0 instead of quietly showing one hit', () => {
    const zero = cli('search', '--session', sessionId, 'port', '--limit', '0')
    expect(zero.code).toBe(2)
    expect(zero.stderr).toMatch(/--limit must be an integer from 1 to 200/)
    expect(cli('search', '--session', sessionId, 'port', '--limit', '201').code).toBe(2)
  })

  it('reports errors as JSON under --json', () => {
    const missing = cli('--json', 'timeline', 'no-such-session')
    expect(missing.code).toBe(4)
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { exitCode: 4, message: expect.stringContaining('no-such-session') as unknown } })
    const usage = cli('--json', 'search', 'x', '--limit', 'many')
    expect(usage.code).toBe(2)
    expect(JSON.parse(usage.stdout)).toMatchObject({ error: { exitCode: 2 } })
  })

  it('uses the whole width of a wide terminal and highlights in colour there, plain in a pipe', async () => {
    const narrow = await inProcess(['timeline', sessionId])
    const wide = await inProcess(['timeline', sessionId], { columns: 220, color: true })
    const longest = (text: string): number => Math.max(...text.split('\n').map(line => line.length))
    expect(narrow.stdout).toContain('…')
    expect(longest(wide.stdout)).toBeGreaterThan(longest(narrow.stdout))
    expect(longest(wide.stdout)).toBeLessThanOrEqual(220)
    const coloured = await inProcess(['search', '--session', sessionId, 'staging', 'port'], { columns: 120, color: true })
    expect(coloured.stdout).toContain('\u001b[1;33m')
    expect(coloured.stdout).not.toContain('**')
    const piped = await inProcess(['search', '--session', sessionId, 'staging', 'port'])
    expect(piped.stdout).not.toContain('\u001b')
    expect(piped.stdout).not.toContain('**')
  })
})

describe('forget', () => {
  it('deletes one session from the store, refuses one with forks unless --force, and says so', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    await store.registerSession({ sessionId: 'fork-of-it', parentSessionId: sessionId, forkSeq: 10 })
    await store.close()
    const refused = runBin(copy, ['forget', sessionId])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/has 1 fork\(s\) \(fork-of-it\) that read its rows by reference.*--force/)
    const forced = runBin(copy, ['--json', 'forget', sessionId, '--force', '--vacuum'])
    expect(forced.code, forced.stderr).toBe(0)
    expect(JSON.parse(forced.stdout)).toMatchObject({ forgotten: [sessionId, 'fork-of-it'], sessions: 2, vacuumed: true })
    expect(runBin(copy, ['timeline', sessionId]).code).toBe(4)
    expect(runBin(copy, ['forget', 'no-such-session']).code).toBe(4)
  })

  it('refuses a reference that is one session\'s id and another\'s tag, forgetting neither', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    const tag = (await store.session(sessionId))!.tag
    // someone else's session on a shared store, named like this session's tag (in either listing order)
    for (const name of [tag, `${tag}-later`]) await store.registerSession({ sessionId: name, createdAt: name === tag ? 1 : Date.now() + 1e9 })
    await store.close()
    for (const command of [['forget', tag], ['timeline', tag], ['search', '--session', tag, 'anything']]) {
      const answer = await inProcess(command, undefined, copy)
      expect(answer.code, `${command.join(' ')}: ${answer.stderr}`).toBe(2)
      expect(answer.stderr).toContain(`is the id of session ${tag} and the tag of session ${sessionId}`)
    }
    const after = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    expect((await after.sessions()).map(session => session.sessionId).toSorted()).toEqual([sessionId, tag, `${tag}-later`].toSorted())
    await after.close()
  })
})

describe('verify tells the truth', () => {
  it('exits 3 and counts the sessions it could not check when a log is unreadable', () => {
    const copy = copyHome()
    const sessions = join(copy, 'sessions')
    const log = (function find(dir: string): string {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) {
          const found = find(path)
          if (found !== '') return found
        } else if (name.startsWith('session.jsonl')) return path
      }
      return ''
    })(sessions)
    expect(log).not.toBe('')
    writeFileSync(log, Buffer.alloc(4096, 0x5a))
    const verdict = runBin(copy, ['verify'])
    expect(verdict.code, verdict.stdout + verdict.stderr).toBe(3)
    expect(verdict.stdout).not.toContain('verify: clean')
    expect(verdict.stdout).toMatch(/1 session\(s\) could not be checked/)
    const json = runBin(copy, ['--json', 'verify'])
    expect(json.code).toBe(3)
    expect(JSON.parse(json.stdout)).toMatchObject({ clean: false, unchecked: 1 })
  })

  it('counts store sessions that have no dsh log instead of skipping them', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    await store.registerSession({ sessionId: 'orphan-session' })
    await store.close()
    const verdict = runBin(copy, ['--json', 'verify'])
    expect(JSON.parse(verdict.stdout)).toMatchObject({ clean: false, unchecked: 1 })
    expect(verdict.code).toBe(3)
  })
})

describe('issue 12 item 11', () => {
  it('never chmods what --store names when it is not a store file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-shadow-not-a-store-'))
    scratch.push(dir)
    chmodSync(dir, 0o755)
    const result = runBin(home, ['--store', dir, 'reindex'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('is not a store file')
    expect(statSync(dir).mode & 0o777).toBe(0o755)
  })

  it('reads retention-expired rows as JSON', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    const report = await store.gc({ maxAgeMs: 0, now: Date.now() + 1_000 })
    await store.close()
    expect(report.rows).toBeGreaterThan(0)
    const read = runBin(copy, ['--json', 'read', report.expired[0]!.checkpointId])
    expect(read.code, read.stderr).toBe(0)
    const messages = JSON.parse(read.stdout) as Array<{ event: unknown; expiredAt: number | null }>
    expect(messages.some(message => message.event === null && message.expiredAt !== null)).toBe(true)
  })

  it('stops quietly when the reader of a pipe goes away', async () => {
    for (const args of [['export', sessionId], ['sessions'], ['search', '--all', 'the', '--limit', '200']]) {
      const child = spawn(process.execPath, [BIN, '--home', home, ...args], { env: { ...process.env, DSH_HOME: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', chunk => void (stderr += String(chunk)))
      // read one chunk, then close our end as `head -1` would
      await new Promise<void>(resolve => child.stdout.once('data', () => resolve()))
      child.stdout.destroy()
      const code = await new Promise<number | null>(resolve => child.once('exit', resolve))
      expect(stderr, args.join(' ')).not.toMatch(/EPIPE|Error/)
      expect(code, args.join(' ')).toBe(0)
    }
  })

  it('streams an export instead of building one string', async () => {
    const writes: number[] = []
    const code = await runCli(['--home', home, 'export', sessionId], { stdout: text => void writes.push(text.length), stderr: () => undefined, stderrIsTTY: false })
    expect(code).toBe(0)
    expect(writes.length).toBeGreaterThan(10)
    expect(Math.max(...writes)).toBeLessThan(1024 * 1024)
  })

  it('streams read of a range, as text and as JSON, one message per write', async () => {
    for (const json of [false, true]) {
      const writes: string[] = []
      const code = await runCli(['--home', home, ...(json ? ['--json'] : []), 'read', `${sessionId}:0-40`], { stdout: text => void writes.push(text), stderr: () => undefined, stderrIsTTY: false })
      expect(code).toBe(0)
      // the code before wrote one string for the whole range
      expect(writes.length).toBeGreaterThan(3)
      if (json) expect((JSON.parse(writes.join('')) as unknown[]).length).toBe(writes.length - 2)
    }
  })

  it('never prints stored terminal control sequences raw', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    const hostile = 'clipboard \u001b]52;c;ZXZpbA==\u0007 and clear \u001b[2J\u001b[H done \u009b31m'
    await store.registerSession({ sessionId: 'hostile-session' })
    await store.append([{ sessionId: 'hostile-session', seq: 1, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: Date.now(), eventJson: JSON.stringify({ type: 'user/message', seq: 1, data: { content: [{ type: 'text', text: hostile }] } }), text: hostile, tokens: 20 }])
    await store.close()
    for (const args of [['read', 'hostile-session:0-5'], ['search', '--session', 'hostile-session', 'clipboard'], ['export', 'hostile-session'], ['sessions']]) {
      const result = runBin(copy, args)
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
      for (const control of ['\u001b', '\u0007', '\u009b']) expect(result.stdout.includes(control), `${args.join(' ')} printed ${JSON.stringify(control)}`).toBe(false)
    }
    expect(runBin(copy, ['read', 'hostile-session:0-5']).stdout).toContain('\\u001b]52;c;ZXZpbA==')
    // JSON output too: JSON.stringify escapes C0 controls but leaves C1 (U+009B is a one-byte CSI) raw
    for (const args of [['--json', 'read', 'hostile-session:0-5'], ['--json', 'search', '--session', 'hostile-session', 'clipboard'], ['export', 'hostile-session', '--format', 'jsonl'], ['--json', 'sessions']]) {
      const result = await inProcessAt(copy, args)
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
      for (const control of ['\u001b', '\u0007', '\u009b']) expect(result.stdout.includes(control), `${args.join(' ')} printed ${JSON.stringify(control)}`).toBe(false)
      // and it is still JSON (lines of it for jsonl)
      const documents = args.includes('jsonl') ? result.stdout.trim().split('\n') : [result.stdout]
      for (const document of documents) expect(() => JSON.parse(document) as unknown).not.toThrow()
    }
    const json = JSON.parse((await inProcessAt(copy, ['--json', 'read', 'hostile-session:0-5'])).stdout) as Array<{ text: string }>
    expect(json[0]!.text).toBe(hostile)
  })

  it('never prints a stored session id or workspace with terminal control sequences raw (a team store holds other people\'s)', async () => {
    const copy = copyHome()
    const store = await ShadowStore.open(join(copy, 'shadow-context', 'shadow.db'))
    const evil = 'evil\u001b]52;c;ZXZpbA==\u0007\u001b[2J'
    const workspace = '/srv/\u001b]0;owned\u0007repo'
    await store.registerSession({ sessionId: evil, workspace })
    const text = 'clipboard planted here'
    await store.append([{ sessionId: evil, seq: 1, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: Date.now() + 60_000, eventJson: JSON.stringify({ type: 'user/message', seq: 1, data: { content: [{ type: 'text', text }] } }), text, tokens: 5 }])
    await store.close()
    const run = async (args: readonly string[]): Promise<{ code: number; out: string }> => {
      let out = ''
      const code = await runCli(['--home', copy, ...args], { stdout: chunk => void (out += chunk), stderr: chunk => void (out += chunk), stderrIsTTY: false })
      return { code, out }
    }
    // search without --session names the newest session (this one); verify finds it has no dsh log;
    // gc names a session and a workspace still over budget on their live surface
    for (const args of [['timeline', evil], ['search', 'clipboard'], ['verify'], ['gc', '--session-budget', '1B', '--dry-run'], ['gc', '--workspace-budget', '1B', '--dry-run'], ['sessions']]) {
      const { out } = await run(args)
      for (const control of ['\u001b', '\u0007']) expect(out.includes(control), `${args[0]} printed ${JSON.stringify(control)}: ${JSON.stringify(out.slice(0, 400))}`).toBe(false)
      expect(out, args[0]).toMatch(/evil\\u001b|\\u001b\]0;owned/)
    }
  })

  it('refuses to repair --all a dsh home that has no dsh logs (a typo), creating nothing', () => {
    const typo = join(tmpdir(), `dsh-shadow-no-such-home-${process.pid}`)
    const result = runBin(typo, ['repair', '--all'])
    expect(result.code).toBe(4)
    expect(result.stderr).toMatch(/no dsh session logs/)
    expect(existsSync(typo)).toBe(false)
    const empty = mkdtempSync(join(tmpdir(), 'dsh-shadow-empty-home-'))
    scratch.push(empty)
    mkdirSync(join(empty, 'sessions'))
    expect(runBin(empty, ['repair', '--all']).code).toBe(4)
    expect(existsSync(join(empty, 'shadow-context', 'shadow.db'))).toBe(false)
  })
})
