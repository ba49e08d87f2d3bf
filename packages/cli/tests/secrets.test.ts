/**
 * Redaction end to end: a real dsh session with redaction on, a password and an API key in the
 * conversation (typed by the user, passed as tool arguments, pasted into a shadow_search query),
 * run through compactions. The secrets must appear nowhere Shadow Context writes or serves: not in
 * the store file or its WAL (so neither rows, index, checkpoints nor recalls), not in the checkpoint
 * digests it puts into the session, the projection snapshot, the web reader, or `dsh-shadow export`.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import type { Session } from '@deepseek-ai/dsh-session'
import { codingSession, DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import { ShadowCapture, ShadowCompactionEngine, ShadowRecall, ShadowWeb, type ShadowContextReader } from 'dsh-shadow-context'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '@dsh-shadow/store'
import { runCli, type CliIo } from '../src/index.ts'

const PASSWORD = 'hunter2-secret'
const API_KEY = 'sk-proj-AbCdEf0123456789ZyXwVu9876'
/** What must not appear: the secrets and distinctive pieces of them. */
const SECRETS = [PASSWORD, 'hunter2', API_KEY, 'AbCdEf0123456789ZyXwVu9876']

let home: string
let harness: DshHarness
let session: Session
let storePath: string

function leaks(text: string): string[] {
  const lower = text.toLowerCase()
  return SECRETS.filter(secret => lower.includes(secret.toLowerCase()))
}

function fileLeaks(path: string): string[] {
  if (!existsSync(path)) return []
  const bytes = readFileSync(path)
  // UTF-8 and UTF-16 (SQLite stores TEXT as UTF-8; check both to be sure)
  return SECRETS.filter(secret => bytes.includes(Buffer.from(secret, 'utf8')) || bytes.includes(Buffer.from(secret, 'utf16le')))
}

async function cli(argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CliIo = { stdout: text => void (stdout += text), stderr: text => void (stderr += text), stderrIsTTY: false }
  const code = await runCli(['--home', home, ...argv], io)
  return { code, stdout, stderr }
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-shadow-secrets-'))
  storePath = join(home, 'shadow-context', 'shadow.db')
  const scenario = codingSession({ turns: 40, seed: 5, outputChars: 1_200 })
  harness = await DshHarness.create({
    home,
    tools: scenario.tools(),
    model: new ScriptedModel({ contextWindow: 16_000 }),
    plugins: dshHome => [
      { plugin: ShadowCapture, config: { home: dshHome, redact: true } },
      { plugin: ShadowRecall },
      { plugin: ShadowWeb, config: { home: dshHome } },
    ],
    compaction: { plugin: ShadowCompactionEngine, config: {} },
  })
  const agent = await harness.createAgent({ sessionId: 'secrets-0001' })
  session = agent.session
  harness.model.enqueue(
    { kind: 'tools', calls: [{ name: 'shell', args: { command: 'psql -h db.internal', password: PASSWORD, apiKey: API_KEY } }] },
    { kind: 'text', text: `Connected to db.internal with the password you gave.` },
  )
  await harness.send(agent, `Connect to the database: password: ${PASSWORD} and use the key ${API_KEY} for the deploy service.`)
  await harness.play(agent, scenario.turns)
  harness.model.enqueue({ kind: 'tools', calls: [{ name: 'shadow_search', args: { query: `where did I use ${API_KEY}` } }] }, { kind: 'text', text: 'found it' })
  await harness.send(agent, 'Which key did the deploy use?')
  await harness.ctx.shadowCapture.flush()
}, 180_000)

afterAll(async () => {
  await harness?.dispose()
  if (home !== undefined) rmSync(home, { recursive: true, force: true })
})

describe('a redacting store through compaction', () => {
  it('compacted the turn that carried the secrets', () => {
    const checkpoints = session.events.filter(event => event.type === 'compaction/summary')
    expect(checkpoints.length).toBeGreaterThan(1)
    const first = session.events.find(event => event.type === 'user/message' && JSON.stringify(event).includes(PASSWORD))!
    expect(checkpoints.some(event => event.type === 'compaction/summary' && event.data.shadowedSeqs.includes(first.seq))).toBe(true)
  })

  it('puts no secret into a checkpoint it writes into the session', () => {
    const texts = session.events
      .filter(event => event.type === 'user/message' && typeof event.surfaceOp === 'object')
      .map(event => JSON.stringify(event))
    expect(texts.length).toBeGreaterThan(1)
    expect(texts.flatMap(leaks)).toEqual([])
  })

  it('keeps no secret in the store file or its WAL, rows, index, checkpoints or recalls', async () => {
    const store = await harness.ctx.shadowCapture.opened()
    for (const suffix of ['', '-wal', '-shm']) expect(fileLeaks(`${storePath}${suffix}`), `shadow.db${suffix}`).toEqual([])
    const db = new DatabaseSync(storePath, { readOnly: true })
    try {
      const columns = (sql: string): string[] => (db.prepare(sql).all() as Array<Record<string, unknown>>).map(row => Object.values(row).map(value => (value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : String(value))).join('\u0001'))
      expect(columns('SELECT text, event_json FROM messages').flatMap(leaks)).toEqual([])
      expect(columns('SELECT footer, error FROM checkpoints').flatMap(leaks)).toEqual([])
      const queries = columns('SELECT query FROM recalls')
      expect(queries.some(query => query.includes('[REDACTED:api-key]'))).toBe(true)
      expect(queries.flatMap(leaks)).toEqual([])
      for (const term of ['hunter2', 'secret', 'abcdef0123456789zyxwvu9876']) {
        // the grams index is positionless (schema v4): match the AND of the piece's trigrams, a superset of its occurrences
        const piece = term === 'secret' ? PASSWORD : term
        const trigrams = Array.from({ length: piece.length - 2 }, (_, at) => `"${piece.slice(at, at + 3)}"`)
        const grams = db.prepare('SELECT count(*) AS n FROM messages_grams WHERE messages_grams MATCH ?').get(trigrams.join(' AND ')) as { n: number }
        expect(grams.n, term).toBe(0)
      }
    } finally {
      db.close()
    }
    // searching for a secret finds only redacted text (the word "secret" of its marker, at most)
    for (const query of [PASSWORD, 'hunter2', API_KEY]) expect(leaks(JSON.stringify((await store.search(query, { sessionId: session.id })).hits)), query).toEqual([])
    for (const query of ['hunter2', 'AbCdEf0123456789ZyXwVu9876']) expect((await store.search(query, { sessionId: session.id })).hits, query).toEqual([])
  })

  it('leaves the index vocabulary without any piece of a secret', () => {
    const db = new DatabaseSync(':memory:')
    try {
      db.exec(`ATTACH DATABASE '${storePath.replaceAll("'", "''")}' AS shadow`)
      db.exec("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(shadow, 'messages_words', 'row')")
      const terms = (db.prepare('SELECT term FROM temp.vocab').all() as Array<{ term: string }>).map(row => row.term)
      expect(terms.length).toBeGreaterThan(100)
      expect(terms.filter(term => term.includes('hunter2') || term.includes('abcdef0123456789'))).toEqual([])
    } finally {
      db.close()
    }
  })

  it('shows no secret in the projection snapshot or through the web reader', async () => {
    const snapshot = (harness.ctx as unknown as { sessionProjections: { snapshot(session: Session): unknown } }).sessionProjections.snapshot(session)
    expect(JSON.stringify(snapshot)).toContain('[REDACTED:api-key]')
    expect(leaks(JSON.stringify(snapshot)), JSON.stringify(snapshot)).toEqual([])
    const reader = (harness.ctx as unknown as { shadowContextReader: ShadowContextReader }).shadowContextReader
    const replies: unknown[] = []
    for (const query of ['database password', 'deploy key', PASSWORD, API_KEY]) replies.push(await reader.search(session, { query }))
    const checkpoints = session.events.filter(event => event.type === 'compaction/summary').map(event => (event.data as { compactionId: string }).compactionId)
    for (const checkpoint of checkpoints) replies.push(await reader.read(session, { checkpoint, limit: 50 }))
    expect(JSON.stringify(replies)).toContain('[REDACTED:')
    // (a reply may echo the query it was asked; only what it found counts)
    const found = replies.map(reply => JSON.stringify(reply, (key, value: unknown) => (key === 'query' ? undefined : value)))
    expect(found.flatMap(leaks), found.filter(text => leaks(text).length > 0).join('\n').slice(0, 2000)).toEqual([])
  })

  it('exports no secret with dsh-shadow export, read or search', async () => {
    const outputs: string[] = []
    for (const argv of [['export', session.id], ['export', session.id, '--format', 'jsonl'], ['search', 'database password', '--session', session.id], ['read', '--session', session.id, '--limit', '500']]) {
      const run = await cli(argv)
      outputs.push(`${argv.join(' ')} → ${run.code}\n${run.stdout}${run.stderr}`)
    }
    expect(outputs.join('\n')).toContain('[REDACTED:')
    expect(outputs.flatMap(leaks)).toEqual([])
  })

  it('keeps the redaction policy through repair --all --fresh: the rebuilt store redacts what it takes from the logs', async () => {
    await harness.dispose({ keepHome: true })
    const run = await cli(['repair', '--all', '--fresh'])
    expect(run.code, run.stderr).toBe(0)
    const rebuilt = await ShadowStore.open(storePath, { readOnly: true })
    try {
      expect(rebuilt.redactionPolicy()).not.toBeNull()
      const rows = await rebuilt.read({ sessionId: session.id }, { limit: 5_000 })
      expect(rows.length).toBeGreaterThan(100)
      expect(rows.some(row => row.text.includes('[REDACTED:secret]'))).toBe(true)
      expect(rows.flatMap(row => leaks(`${row.text}${row.eventJson}`))).toEqual([])
    } finally {
      await rebuilt.close()
    }
    for (const suffix of ['', '-wal']) expect(fileLeaks(`${storePath}${suffix}`), `rebuilt shadow.db${suffix}`).toEqual([])
    const verify = await cli(['verify'])
    expect(verify.code, `${verify.stdout}${verify.stderr}`).toBe(0)
  })
})
