/** What only the PostgreSQL backend has: a server that can go away, many writers, schemas, credentials. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

describe('ShadowStore on PostgreSQL', () => {
  it('refuses a schema holding foreign tables and a newer schema version, with typed errors', async () => {
    await target.sql('CREATE SCHEMA foreign_one; CREATE TABLE foreign_one.messages (x int)')
    await expect(ShadowStore.open(target.server().storeDsn('foreign_one'))).rejects.toMatchObject({ code: 'CORRUPT' })
    const newer = target.server().storeDsn('newer_one')
    await (await ShadowStore.open(newer)).close()
    await target.sql("UPDATE newer_one.meta SET value = '99' WHERE key = 'schema_version'")
    await expect(ShadowStore.open(newer)).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' })
    await expect(ShadowStore.open(newer, { readOnly: true })).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' })
  })

  it('never shows the password, and refuses a schema name that is not a plain identifier', async () => {
    await target.sql("CREATE ROLE shadow_writer LOGIN PASSWORD 'hunter2-secret' SUPERUSER")
    const location = `postgres://shadow_writer:hunter2-secret@127.0.0.1:${target.server().port}/postgres?schema=secret_one`
    const store = await ShadowStore.open(location)
    expect(store.path).not.toContain('hunter2')
    expect(store.path).toContain('schema=secret_one')
    await store.close()
    await expect(store.stats()).rejects.toMatchObject({ code: 'CLOSED' })
    for (const schema of ['Bad', 'a;drop', '1x', 'x'.repeat(70)]) {
      await expect(ShadowStore.open(`${target.server().dsn}?schema=${encodeURIComponent(schema)}`)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
  })

  it('fails every call with UNAVAILABLE while the server is down, changes nothing, and works again without a reopen', async () => {
    const store = await ShadowStore.open(target.server().storeDsn('down_one'))
    await store.append([message('s1', 1, 'before the outage')])
    target.server().halt('immediate')
    try {
      await expect(store.append([message('s1', 2, 'during the outage')])).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      await expect(store.search('outage', { sessionId: 's1' })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      await expect(store.confirm('s1', [{ seq: 1, hash: 'x' }])).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      await expect(ShadowStore.open(target.server().storeDsn('down_two'))).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/unreachable/) })
    } finally {
      target.server().start()
    }
    expect((await store.read({ sessionId: 's1' })).map(row => row.text)).toEqual(['before the outage'])
    expect(await store.append([message('s1', 2, 'after the outage')])).toEqual({ written: 1, unchanged: 0, replaced: 0 })
    await store.close()
  })

  it('keeps every row exactly once when several processes write the same rows at the same time', async () => {
    const location = target.server().storeDsn('many_one')
    // four writers (as four hosts would) opening one fresh store at once: it is created exactly once
    const writers = await Promise.all(Array.from({ length: 4 }, () => ShadowStore.open(location)))
    const rows = Array.from({ length: 200 }, (_, index) => message(`s${index % 5}`, index, `row ${index} of the shared history`))
    const results = await Promise.all(writers.map((writer, index) =>
      (async () => {
        const totals = { written: 0, unchanged: 0, replaced: 0 }
        // each writer sends the rows in its own order and batch size
        const order = index % 2 === 0 ? rows : rows.toReversed()
        for (let start = 0; start < order.length; start += 17 + index * 5) {
          const result = await writer.append(order.slice(start, start + 17 + index * 5))
          totals.written += result.written
          totals.unchanged += result.unchanged
          totals.replaced += result.replaced
        }
        return totals
      })()))
    expect(results.reduce((sum, result) => sum + result.written, 0)).toBe(200)
    expect(results.reduce((sum, result) => sum + result.unchanged, 0)).toBe(600)
    expect(results.every(result => result.replaced === 0)).toBe(true)
    const stats = await writers[0]!.stats()
    expect(stats.messages).toBe(200)
    for (let session = 0; session < 5; session += 1) expect((await writers[1]!.session(`s${session}`))!.messageCount).toBe(40)
    expect(await writers[2]!.integrityCheck()).toEqual([])
    await Promise.all(writers.map(writer => writer.close()))
  })
})
