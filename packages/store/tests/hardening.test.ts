import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { hashEventJson, sessionTag, ShadowStore } from '../src/index.ts'
import { scopeToken } from '../src/sqlite/index-rows.ts'
import { markersFound, message, seedMarkers, tempDir } from './helpers.ts'

/** Two session ids whose default tags are equal (tags are 30 bits: a few thousand tries). */
function collidingIds(prefix: string): [string, string] {
  const seen = new Map<string, string>()
  for (let index = 0; ; index += 1) {
    const id = `${prefix}-${index}`
    const other = seen.get(sessionTag(id))
    if (other !== undefined) return [other, id]
    seen.set(sessionTag(id), id)
  }
}

async function withStore<T>(run: (store: ShadowStore, path: string) => Promise<T>, options: Parameters<typeof ShadowStore.open>[1] = {}): Promise<T> {
  const dir = tempDir()
  const path = join(dir.path, 'shadow.db')
  const store = await ShadowStore.open(path, options)
  try {
    return await run(store, path)
  } finally {
    await store.close()
    dir.cleanup()
  }
}

describe('hostile session ids', () => {
  it('refuses ids the store cannot keep apart (NUL, lone surrogates, 10 KB) with a typed error, writing nothing', async () => {
    await withStore(async store => {
      for (const sessionId of ['bad\u0000id', 'lone-\uD800', 'lone-\uDC00', 'pair-\uDC00\uD800', 'x'.repeat(10_000)]) {
        await expect(store.append([message(sessionId, 1, 'hello')]), JSON.stringify(sessionId.slice(0, 20))).rejects.toMatchObject({ code: 'INVALID_INPUT' })
        await expect(store.registerSession({ sessionId })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
        await expect(store.search('hello', { sessionId })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      }
      expect((await store.stats()).sessions).toBe(0)
      expect((await store.stats()).messages).toBe(0)
    })
  })

  it('never merges two sessions that differ only in a lone surrogate, and keeps path-like and astral ids apart', async () => {
    await withStore(async store => {
      await expect(store.append([message('s-\uD800', 1, 'first secret plan')])).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      await expect(store.append([message('s-\uD801', 1, 'second secret plan')])).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      const ids = ['../../etc/passwd', 'a/b\\c', 's-\u{1F600}', 's-\u{1F601}', '..']
      for (const [index, id] of ids.entries()) await store.append([message(id, 1, `plan number ${index}`)])
      for (const [index, id] of ids.entries()) {
        const { hits } = await store.search('plan', { sessionId: id })
        expect(hits.map(hit => [hit.message.sessionId, hit.message.text])).toEqual([[id, `plan number ${index}`]])
      }
    })
  })
})

describe('session tags', () => {
  it('gives a session whose tag is taken a longer tag of its own, instead of refusing it', async () => {
    const [first, second] = collidingIds('tag')
    await withStore(async (store, path) => {
      await store.append([message(first, 1, 'alpha apples')])
      await store.append([message(second, 1, 'beta bananas')])
      const a = (await store.session(first))!
      const b = (await store.session(second))!
      expect(a.tag).toBe(sessionTag(first))
      expect(b.tag).toBe(sessionTag(second, 7))
      expect((await store.message(`${a.tag}.1`))!.text).toBe('alpha apples')
      expect((await store.message(`${b.tag}.1`))!.text).toBe('beta bananas')
      expect((await store.search('bananas', { sessionId: second })).hits.map(hit => hit.message.shadowId)).toEqual([`${b.tag}.1`])
      expect((await store.search('bananas', { sessionId: first })).hits).toEqual([])
      await store.close()
      // the assignment is stored: a reopened store keeps both
      const reopened = await ShadowStore.open(path)
      expect((await reopened.session(second))!.tag).toBe(b.tag)
      await reopened.close()
    })
  })

  it('keeps two new colliding sessions of one batch apart', async () => {
    const [first, second] = collidingIds('batch')
    await withStore(async store => {
      await store.append([message(first, 1, 'one'), message(second, 1, 'two')])
      expect((await store.session(first))!.tag).not.toBe((await store.session(second))!.tag)
    })
  })
})

describe('redaction leaks', () => {
  it('keeps no hash of the unredacted event: a dictionary over the redacted template finds nothing', async () => {
    await withStore(async store => {
      const text = 'password: hunter2 is the db password'
      const row = message('s1', 1, text)
      await store.append([row])
      const stored = (await store.messageAt('s1', 1))!
      expect(stored.text).toBe('password: [REDACTED:secret] is the db password')
      expect(stored.hash).not.toBe(hashEventJson(row.eventJson))
      expect(stored.hash).toBe(hashEventJson(stored.eventJson))
      // the attack: fill the template with candidate passwords and compare hashes
      for (const guess of ['hunter1', 'hunter2', 'hunter3', 'password']) {
        const candidate = stored.eventJson.replace('[REDACTED:secret]', guess)
        expect(createHash('sha1').update(candidate).digest('hex')).not.toBe(stored.hash)
      }
      // verification redacts the log event alike: the row still answers for it
      expect(await store.confirm('s1', [{ seq: 1, hash: store.hashOf(row.eventJson) }])).toEqual({ missing: [], mismatched: [] })
      expect(await store.append([row])).toEqual({ written: 0, unchanged: 1, replaced: 0 })
      expect(await store.ingest([{ op: 'reconcile', sessionId: 's1', events: [], ownFromSeq: 99 }])).toMatchObject({ removed: 0 })
    }, { redact: {} })
  })

  it('redacts recall queries and checkpoint footers and errors', async () => {
    await withStore(async store => {
      await store.append([message('s1', 1, 'hello')])
      const recall = await store.recordRecall({ sessionId: 's1', kind: 'search', time: 1, query: 'where did I use sk-0123456789abcdefABCDEF0123', shadowIds: [] })
      expect(recall.query).toBe('where did I use [REDACTED:api-key]')
      expect((await store.recalls('s1'))[0]!.query).toBe('where did I use [REDACTED:api-key]')
      const checkpoint = await store.recordCheckpoint({
        checkpointId: `${sessionTag('s1')}.c1`, sessionId: 's1', engine: 'x', status: 'failed', shadowedSeqs: [1], createdAt: 1,
        footer: 'token=abcdef123456', error: 'failed near password: hunter2-secret',
      })
      expect(checkpoint.footer).toBe('token=[REDACTED:secret]')
      expect(checkpoint.error).toBe('failed near password: [REDACTED:secret]')
    }, { redact: {} })
  })
})

describe('reindex', () => {
  const ROWS = 5_000
  const seeded = (path: string): Promise<void> => seedMarkers(path, 'r', ROWS)
  /** How many of `count` rows sampled across the store a search for their own marker finds. */
  const searchable = (store: ShadowStore, count: number): Promise<number> => markersFound(store, 'r', ROWS, count)

  it('survives kill -9 part-way: every row stays searchable and verify is clean', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    await seeded(path)
    // a child process reindexes and kills itself with SIGKILL after the first batch
    const { spawnSync } = await import('node:child_process')
    const script = `
      const { ShadowStore } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)})
      const store = await ShadowStore.open(${JSON.stringify(path)})
      await store.reindex(done => { if (done >= 2000) process.kill(process.pid, 'SIGKILL') })
    `
    const child = spawnSync(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(child.signal, child.stderr).toBe('SIGKILL')
    const { DatabaseSync } = await import('node:sqlite')
    const raw = new DatabaseSync(path, { readOnly: true })
    // it died mid-build: the half-built tables are there, and a read-only verify says so
    expect(raw.prepare("SELECT count(*) AS n FROM meta WHERE key = 'reindex_build'").get()).toEqual({ n: 1 })
    raw.close()
    const reader = await ShadowStore.open(path, { readOnly: true })
    expect(await reader.integrityCheck()).toEqual([expect.stringContaining('interrupted index rebuild')])
    expect(await searchable(reader, 61)).toBe(61)
    await reader.close()
    const store = await ShadowStore.open(path)
    expect(await searchable(store, 61)).toBe(61)
    expect(await store.integrityCheck()).toEqual([])
    // and a new reindex after the crash completes
    expect(await store.reindex()).toBe(ROWS)
    expect(await searchable(store, 61)).toBe(61)
    await store.close()
    dir.cleanup()
  })

  it('keeps the live index whole while it rebuilds, and takes in rows written meanwhile', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    await seeded(path)
    const store = await ShadowStore.open(path)
    const { DatabaseSync } = await import('node:sqlite')
    // another connection (another process, say) reads and writes while the rebuild runs
    const other = new DatabaseSync(path)
    const counts: number[] = []
    let wrote = false
    await store.reindex(() => {
      counts.push((other.prepare("SELECT count(*) AS n FROM messages_words WHERE messages_words MATCH 'common'").get() as { n: number }).n)
      if (!wrote) {
        wrote = true
        // an in-place replacement of an already rebuilt row, and a deletion
        other.prepare("UPDATE messages SET text = CAST('row replaced zebra' AS BLOB) WHERE seq = 1").run()
        other.prepare("DELETE FROM messages_words WHERE rowid = (SELECT id FROM messages WHERE seq = 1)").run()
        // an index entry as the store writes one (schema v4: the session's scope token in the body)
        const tag = (other.prepare("SELECT tag FROM sessions WHERE session_id = 'r'").get() as { tag: string }).tag
        other.prepare("INSERT INTO messages_words(rowid, body) SELECT id, ? FROM messages WHERE seq = 1").run(`row replaced zebra\n${scopeToken(tag)}`)
      }
    })
    other.close()
    expect(counts.length).toBeGreaterThan(1)
    expect(counts.every(count => count >= ROWS - 1)).toBe(true)
    expect((await store.search('zebra', { sessionId: 'r' })).hits.map(hit => hit.message.seq)).toEqual([1])
    expect((await store.search('marker1', { sessionId: 'r' })).hits.map(hit => hit.message.seq)).not.toContain(1)
    expect(await searchable(store, 61)).toBe(61)
    await store.close()
    dir.cleanup()
  })
})

describe('the store file replaced or deleted while open', () => {
  it('detects a deleted -wal (writes into it would be lost): writes and the write-ahead check fail closed', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    const store = await ShadowStore.open(path)
    await store.append([message('w', 1, 'before')])
    const { existsSync, rmSync } = await import('node:fs')
    expect(existsSync(`${path}-wal`)).toBe(true)
    rmSync(`${path}-wal`)
    await expect(store.ingest([{ op: 'events', events: [] }])).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await expect(store.confirm('w', [{ seq: 1, hash: store.hashOf(message('w', 1, 'before').eventJson) }])).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('-wal') })
    await store.close()
    dir.cleanup()
  })
})

describe('turning redaction on', () => {
  const SECRET = 'hunter2-secret'
  const KEY = 'sk-0123456789abcdefABCDEF0123'
  async function plain(path: string, rows: number): Promise<void> {
    const store = await ShadowStore.open(path, { redact: false })
    for (let start = 0; start < rows; start += 500) {
      await store.append(Array.from({ length: Math.min(500, rows - start) }, (_, index) => message('p', start + index, `row ${start + index}: password: ${SECRET} and ${KEY}`)))
    }
    await store.recordRecall({ sessionId: 'p', kind: 'search', time: 1, query: `uses of ${KEY}`, shadowIds: [] })
    await store.recordCheckpoint({ checkpointId: `${sessionTag('p')}.c1`, sessionId: 'p', engine: 'x', status: 'failed', shadowedSeqs: [0], createdAt: 1, error: `near token=${SECRET}` })
    await store.close()
  }
  const fileHas = async (path: string, needle: string): Promise<boolean> => {
    const { existsSync, readFileSync } = await import('node:fs')
    return ['', '-wal'].some(suffix => existsSync(path + suffix) && readFileSync(path + suffix).includes(Buffer.from(needle)))
  }

  it('redacts the rows already stored, their index, checkpoints and recalls, with progress, and leaves no copy in the file', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    await plain(path, 1_200)
    expect(await fileHas(path, SECRET)).toBe(true)
    const progress: Array<[string, number, number]> = []
    const store = await ShadowStore.open(path, { redact: {}, onProgress: (task, done, total) => progress.push([task, done, total]) })
    expect(progress.at(-1)).toEqual(['redact', 1_200, 1_200])
    const rows = await store.read({ sessionId: 'p' }, { limit: 2_000 })
    expect(rows).toHaveLength(1_200)
    expect(rows.every(row => !row.text.includes(SECRET) && !row.eventJson.includes(SECRET) && !row.eventJson.includes(KEY))).toBe(true)
    expect(rows[0]!.text).toBe('row 0: password: [REDACTED:secret] and [REDACTED:api-key]')
    // hashes follow the stored form: the log still verifies, redacted alike
    const original = message('p', 7, `row 7: password: ${SECRET} and ${KEY}`)
    expect(await store.confirm('p', [{ seq: 7, hash: store.hashOf(original.eventJson) }])).toEqual({ missing: [], mismatched: [] })
    expect((await store.recalls('p'))[0]!.query).toBe('uses of [REDACTED:api-key]')
    expect((await store.checkpoint(`${sessionTag('p')}.c1`))!.error).toBe('near token=[REDACTED:secret]')
    expect((await store.search('hunter2', { sessionId: 'p' })).hits).toEqual([])
    expect((await store.search('row', { sessionId: 'p' })).hits.length).toBeGreaterThan(0)
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
    expect(await fileHas(path, SECRET)).toBe(false)
    expect(await fileHas(path, KEY)).toBe(false)
    // a later open does not redo it
    const again: unknown[] = []
    await (await ShadowStore.open(path, { redact: {}, onProgress: (...args) => again.push(args) })).close()
    expect(again).toEqual([])
    dir.cleanup()
  })

  it('finishes a pass killed part-way at the next open', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    await plain(path, 1_500)
    const { spawnSync } = await import('node:child_process')
    const script = `
      const { ShadowStore } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)})
      await ShadowStore.open(${JSON.stringify(path)}, { redact: {}, onProgress: (task, done) => { if (done >= 500) process.kill(process.pid, 'SIGKILL') } })
    `
    const child = spawnSync(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(child.signal, child.stderr).toBe('SIGKILL')
    const { DatabaseSync } = await import('node:sqlite')
    const raw = new DatabaseSync(path, { readOnly: true })
    // killed mid-pass: some rows done, others not yet
    const left = (raw.prepare("SELECT count(*) AS n FROM messages WHERE CAST(text AS TEXT) LIKE '%hunter2%'").get() as { n: number }).n
    raw.close()
    expect(left).toBeGreaterThan(0)
    expect(left).toBeLessThan(1_500)
    // the policy is saved: an open without the option (the CLI) follows it and finishes the pass
    const store = await ShadowStore.open(path)
    const rows = await store.read({ sessionId: 'p' }, { limit: 2_000 })
    expect(rows.filter(row => row.text.includes(SECRET))).toEqual([])
    await store.close()
    expect(await fileHas(path, SECRET)).toBe(false)
    dir.cleanup()
  })
})

describe('redaction pass racing another connection', () => {
  it('never writes back a row another connection replaced between the pass reading it and taking the write lock', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    const plainStore = await ShadowStore.open(path, { redact: false })
    await plainStore.append(Array.from({ length: 20 }, (_, seq) => message('r', seq, `row ${seq} v1 password: hunter2-secret`)))
    await plainStore.close()
    // a redaction pass run by hand, its first write lock taken only after
    // another connection (another process's writer) replaced row 3
    const store = await ShadowStore.open(path, { redact: false })
    const { DatabaseSync } = await import('node:sqlite')
    const other = new DatabaseSync(path)
    const conn = (store.backend as unknown as { conn: { transaction: <T>(run: () => T) => T } }).conn
    const transaction = conn.transaction.bind(conn)
    let first = true
    conn.transaction = <T>(run: () => T): T => {
      if (first) other.prepare("UPDATE messages SET text = ?, hash = 'v2' WHERE session_id = 'r' AND seq = 3").run(Buffer.from('row 3 v2 replaced'))
      first = false
      return transaction(run)
    }
    const { Redactor } = await import('../src/redact.ts')
    const { messageViews } = await import('../src/messages.ts')
    const redactor = new Redactor({})
    await store.backend.redactStored({ text: text => redactor.text(text), json: json => redactor.json(json), hash: hashEventJson }, messageViews)
    conn.transaction = transaction
    other.close()
    const rows = new Map((await store.read({ sessionId: 'r' }, { limit: 100 })).map(row => [row.seq, row.text]))
    expect(rows.get(3)).toBe('row 3 v2 replaced')
    expect([...rows.values()].filter(text => text.includes('hunter2'))).toEqual([])
    await store.close()
    dir.cleanup()
  })
})

describe('redaction pass and the vacuum after it', () => {
  it('runs beside a reader of another connection, and leaves no old copy once that reader is gone', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    const plainStore = await ShadowStore.open(path, { redact: false })
    await plainStore.append(Array.from({ length: 300 }, (_, index) => message('v', index, `row ${index}: password: hunter2-secret`)))
    await plainStore.close()
    const { DatabaseSync } = await import('node:sqlite')
    const reader = new DatabaseSync(path)
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM messages').get()
    const store = await ShadowStore.open(path, { redact: {}, busyTimeoutMs: 50 })
    expect((await store.read({ sessionId: 'v' }, { limit: 500 })).filter(row => row.text.includes('hunter2'))).toEqual([])
    reader.exec('COMMIT')
    reader.close()
    await store.close()
    const { readFileSync } = await import('node:fs')
    expect(readFileSync(path).includes(Buffer.from('hunter2'))).toBe(false)
    dir.cleanup()
  })

  it('reports a vacuum still owed (one that could not run) and the next writable open does it', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    await (await ShadowStore.open(path)).close()
    const { DatabaseSync } = await import('node:sqlite')
    const raw = new DatabaseSync(path)
    raw.prepare("INSERT INTO meta(key, value) VALUES ('vacuum_due', 'redaction')").run()
    raw.close()
    const reader = await ShadowStore.open(path, { readOnly: true })
    expect(await reader.integrityCheck()).toEqual([expect.stringContaining('vacuumed')])
    await reader.close()
    const writer = await ShadowStore.open(path)
    expect(await writer.integrityCheck()).toEqual([])
    await writer.close()
    dir.cleanup()
  })
})

describe('stores from before row hashes were of the stored form', () => {
  it('replace the hash of the unredacted event at the next redacting open, and leave no copy of it in the file', async () => {
    const dir = tempDir()
    const path = join(dir.path, 'shadow.db')
    const original = message('m', 1, 'password: hunter2 is it')
    const store = await ShadowStore.open(path, { redact: {} })
    await store.append([original, message('m', 2, 'nothing secret')])
    await store.close()
    // what the previous version stored: sha1 of the original event beside the redacted JSON
    const oldHash = hashEventJson(original.eventJson)
    const { DatabaseSync } = await import('node:sqlite')
    const raw = new DatabaseSync(path)
    raw.prepare('UPDATE messages SET hash = ? WHERE seq = 1').run(oldHash)
    raw.prepare("DELETE FROM meta WHERE key = 'row_hash'").run()
    raw.close()
    const upgraded = await ShadowStore.open(path)
    const row = (await upgraded.messageAt('m', 1))!
    expect(row.hash).toBe(hashEventJson(row.eventJson))
    expect(await upgraded.confirm('m', [{ seq: 1, hash: upgraded.hashOf(original.eventJson) }])).toEqual({ missing: [], mismatched: [] })
    await upgraded.close()
    const { readFileSync } = await import('node:fs')
    expect(readFileSync(path).includes(Buffer.from(oldHash))).toBe(false)
    dir.cleanup()
  })
})
