/** PostgreSQL bulk loading (the scale benchmark's path): server-side session copies and the index build. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresBackend, ShadowStore } from '../src/index.ts'
import { dayKey } from '../src/days.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

const DAY = 86_400_000
const T = Date.UTC(2026, 2, 10, 12, 0, 0)

describe('BulkLoad on PostgreSQL', () => {
  it('copies a session with its times, referred days and event sizes shifted or kept, from its own schema or another', async () => {
    const base = await ShadowStore.open(target.server().storeDsn('bulk_base'))
    await base.append([
      message('src', 1, 'yesterday we rotated the signing key', { time: T }),
      message('src', 2, 'the nightly job is green', { time: T + 1_000 }),
    ])
    const grown = await ShadowStore.open(target.server().storeDsn('bulk_grown'))
    for (const [store, copies] of [[base, [['src', 'same'] as const]], [grown, [['src', 'other'] as const]]] as const) {
      const bulk = await (store.backend as PostgresBackend).beginBulkLoad()
      for (const [from, to] of copies) {
        await store.registerSession({ sessionId: to })
        expect(await bulk.copySession(from, to, 365, store === grown ? 'bulk_base' : undefined)).toBe(2)
      }
      await bulk.end()
    }
    const day = (time: number): string => dayKey(Math.floor(time / DAY))
    const lexemes = async (schema: string, session: string): Promise<Array<Record<string, unknown>>> => target.sql(
      `SELECT m.seq::int AS seq, m.time::bigint AS time, m.event_bytes::int AS bytes, s.tag,
         ARRAY(SELECT u.lexeme FROM unnest(m.words) u WHERE u.lexeme LIKE '~%' ORDER BY 1) AS marks
       FROM ${schema}.messages m JOIN ${schema}.sessions s USING (session_id) WHERE m.session_id = $1 ORDER BY m.seq`, [session])
    const [source] = await lexemes('bulk_base', 'src')
    expect(source!['marks']).toEqual([`~d:${day(T - DAY)}`, `~s:${source!['tag']}`])
    for (const [schema, session] of [['bulk_base', 'same'], ['bulk_grown', 'other']] as const) {
      const rows = await lexemes(schema, session)
      expect(rows.map(row => row['seq'])).toEqual([1, 2])
      expect(Number(rows[0]!['time'])).toBe(T + 365 * DAY)
      expect(rows[0]!['bytes']).toBe(source!['bytes'])
      expect(rows[0]!['marks']).toEqual([`~d:${day(T + 364 * DAY)}`, `~s:${rows[0]!['tag']}`])
      expect(rows[1]!['marks']).toEqual([`~s:${rows[0]!['tag']}`])
    }
    // the copy is found by the day it refers to, like a row written through append
    const hits = await grown.search('signing key', { sessionId: 'other', timeFrom: T + 364 * DAY, timeTo: T + 365 * DAY - 1, limit: 5 })
    expect(hits.hits.map(hit => hit.message.seq)).toContain(1)
    const again = await (grown.backend as PostgresBackend).beginBulkLoad()
    await expect(again.copySession('src', 'other', 0.5)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await again.end()
    await base.close()
    await grown.close()
  })
})
