/**
 * The real `dsh-shadow` binary (bin/ → lib/, so `npm run build` first; `npm test` does) against a
 * dsh home written by a real dsh composition with Shadow Context.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIN, cliHome, runBin, type BinResult, type CliHome } from './support.ts'

let home: string
let sessionId: string
let facts: CliHome['facts']

function cli(...args: string[]): BinResult {
  return runBin(home, args)
}

beforeAll(async () => {
  ;({ home, sessionId, facts } = await cliHome('dsh-shadow-cli-'))
})

afterAll(() => rmSync(home, { recursive: true, force: true }))

describe('dsh-shadow', () => {
  it('lists sessions and stats, as tables and as JSON', () => {
    const sessions = cli('sessions')
    expect(sessions.code).toBe(0)
    expect(sessions.stdout).toContain(sessionId)
    const json = JSON.parse(cli('--json', 'sessions').stdout) as Array<{ sessionId: string; messageCount: number; checkpoints: number }>
    expect(json[0]).toMatchObject({ sessionId })
    expect(json[0]!.checkpoints).toBeGreaterThan(0)
    const stats = JSON.parse(cli('--json', 'stats').stdout) as { messages: number; checkpoints: number; recalls: number }
    expect(stats.messages).toBe(json[0]!.messageCount)
    expect(stats.recalls).toBe(1)
  })

  it('shows a timeline of checkpoints and recalls', () => {
    const timeline = cli('timeline', sessionId.slice(0, 10))
    expect(timeline.code).toBe(0)
    expect(timeline.stdout).toMatch(/checkpoint\s+\S+\.c1/)
    expect(timeline.stdout).toContain('recall:search')
    expect(timeline.stdout).toContain('"staging database port"')
  })

  it('searches English and Chinese, and reads the originals back', () => {
    for (const fact of facts.filter(candidate => candidate.id === 'db-port' || candidate.id === 'zh-cache-ttl')) {
      const result = JSON.parse(cli('--json', 'search', '--session', sessionId, fact.query, '--limit', '3').stdout) as { hits: Array<{ shadowId: string; snippet: string }> }
      expect(result.hits.length).toBeGreaterThan(0)
      const read = cli('read', result.hits[0]!.shadowId, '--before', '1', '--after', '1')
      expect(read.code).toBe(0)
      expect(read.stdout).toContain(fact.answer)
    }
    const human = cli('search', '--all', '缓存过期时间')
    // highlights: colour on a terminal, plain text in a pipe (never literal **)
    expect(human.stdout).toContain('缓存过期时间')
    expect(human.stdout).not.toContain('**')
    const checkpoints = JSON.parse(cli('--json', 'timeline', sessionId).stdout) as { checkpoints: Array<{ checkpointId: string; messageCount: number }> }
    const first = checkpoints.checkpoints[0]!
    const read = JSON.parse(cli('--json', 'read', first.checkpointId).stdout) as unknown[]
    expect(read).toHaveLength(first.messageCount)
    const range = cli('read', `${sessionId}:0-12`)
    expect(range.stdout.split('\n').filter(line => line.startsWith('── ')).length).toBeGreaterThan(0)
  })

  it('exports Markdown and JSON lines of the exact events', () => {
    const file = join(home, 'export.jsonl')
    const result = cli('export', sessionId, '--format', 'jsonl', '--output', file)
    expect(result.code).toBe(0)
    const lines = readFileSync(file, 'utf8').trim().split('\n').map(line => JSON.parse(line) as { event: { seq: number; type: string } })
    expect(lines.length).toBeGreaterThan(50)
    expect(lines.every(line => ['user/message', 'assistant/message', 'tool/result', 'request/header'].includes(line.event.type))).toBe(true)
    const md = cli('export', sessionId)
    expect(md.stdout.startsWith(`# Session ${sessionId}`)).toBe(true)
  })

  it('verifies against the dsh log, says what differs through its exit code, and repairs', () => {
    expect(cli('verify').code).toBe(0)
    const store = join(home, 'shadow-context', 'shadow.db')
    const db = new DatabaseSync(store)
    const rows = db.prepare('SELECT seq FROM messages WHERE session_id = ? ORDER BY seq').all(sessionId) as Array<{ seq: number }>
    db.prepare('DELETE FROM messages WHERE session_id = ? AND seq = ?').run(sessionId, rows[3]!.seq)
    db.close()
    const lost = cli('verify', sessionId)
    expect(lost.code).toBe(8 + 1)
    const db2 = new DatabaseSync(store)
    db2.prepare("UPDATE messages SET hash = 'tampered' WHERE session_id = ? AND seq = ?").run(sessionId, rows[5]!.seq)
    db2.prepare('INSERT INTO messages(session_id, seq, shadow_id, event_type, role, source_kind, time, tokens, hash, event_json, text) VALUES (?, 999999, ?, ?, ?, ?, 0, 1, ?, ?, ?)')
      .run(sessionId, 'x.999999', 'user/message', 'user', 'user', 'h', '{}', Buffer.from('stale'))
    db2.close()
    const all = cli('--json', 'verify')
    expect(all.code).toBe(8 + 1 + 2 + 4)
    expect(JSON.parse(all.stdout)).toMatchObject({ clean: false, sessions: [{ lost: [rows[3]!.seq], mismatched: [rows[5]!.seq], extra: [999999] }] })
    const repair = cli('repair', sessionId)
    expect(repair.code).toBe(0)
    expect(cli('verify').code).toBe(0)
  })

  it('rebuilds a damaged store from the dsh log', () => {
    const store = join(home, 'shadow-context', 'shadow.db')
    const before = JSON.parse(cli('--json', 'stats').stdout) as { messages: number }
    writeFileSync(store, Buffer.alloc(8192, 7))
    rmSync(`${store}-wal`, { force: true })
    const broken = cli('stats')
    expect(broken.code).toBe(3)
    expect(broken.stderr).toMatch(/cannot open the shadow store .*corrupt/)
    const rebuilt = cli('repair', '--all', '--fresh')
    expect(rebuilt.code).toBe(0)
    expect(rebuilt.stderr).toContain('set the old store aside')
    expect(cli('verify').code).toBe(0)
    expect((JSON.parse(cli('--json', 'stats').stdout) as { messages: number }).messages).toBe(before.messages)
  })

  it('answers bad input with clear errors and exit codes', () => {
    expect(cli('timeline', 'no-such-session')).toMatchObject({ code: 4 })
    expect(cli('read', 'not a pointer').code).toBe(2)
    // a pointer no id can be: refused as the pointer it is, not as a checkpoint id it was tried as
    const long = cli('read', `sh_${'x'.repeat(100_000)}`)
    expect(long.code).toBe(2)
    expect(long.stderr).toContain('pointer is longer than')
    expect(long.stderr).not.toContain('checkpointId')
    expect(cli('search', 'x', '--session', 'a', '--all').code).toBe(2)
    expect(cli('frobnicate').code).toBe(2)
    const missing = spawnSync(process.execPath, [BIN, '--store', join(home, 'absent.db'), 'stats'], { encoding: 'utf8' })
    expect(missing.status).toBe(4)
    expect(missing.stderr).toContain('no shadow store at')
    const help = cli('--help')
    expect(help.stdout).toMatch(/Usage: dsh-shadow/)
    for (const command of ['sessions', 'timeline', 'search', 'read', 'export', 'verify', 'repair', 'reindex', 'stats']) expect(help.stdout).toContain(command)
  })

  it('applies a retention budget: dry run first, then drops the oldest originals and says so everywhere', () => {
    const copy = mkdtempSync(join(tmpdir(), 'dsh-shadow-cli-gc-'))
    try {
      cpSync(home, copy, { recursive: true })
      const run = (...args: string[]): BinResult => runBin(copy, args)
      const statsOf = (): { messages: number; expired: number } => JSON.parse(run('--json', 'stats').stdout) as { messages: number; expired: number }
      expect(run('gc').code).toBe(2)
      expect(run('gc', '--session-budget', '5 parsecs').code).toBe(2)
      expect(run('gc', '--max-age', 'soon').code).toBe(2)
      const dry = run('--json', 'gc', '--session-budget', '20KB', '--dry-run')
      expect(dry.code, dry.stderr).toBe(0)
      const planned = JSON.parse(dry.stdout) as { dryRun: boolean; rows: number; expired: Array<{ checkpointId: string }> }
      expect(planned.dryRun).toBe(true)
      expect(planned.rows).toBeGreaterThan(0)
      expect(statsOf().expired).toBe(0)

      const done = run('gc', '--session-budget', '20KB', '--vacuum')
      expect(done.code, done.stderr).toBe(0)
      expect(done.stdout).toMatch(new RegExp(`dropped ${planned.rows} originals`))
      expect(statsOf()).toMatchObject({ expired: planned.rows })
      const oldest = planned.expired[0]!.checkpointId
      expect(run('timeline', sessionId).stdout).toContain('[originals expired')
      const read = run('read', oldest)
      expect(read.code).toBe(0)
      expect(read.stdout).toContain('original removed by retention')
      // identity and hashes stay: the store still verifies against the dsh log
      expect(run('verify', sessionId).code).toBe(0)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }
  })
})
