/**
 * PostgreSQL's light rows (search candidates, resident deltas) read a text's first
 * CANDIDATE_TEXT_CHARS bytes, and read again up to CANDIDATE_READ_BYTES only a longer row whose
 * first bytes are not ASCII (rows.ts completeLight). A row rewritten between the two reads keeps
 * its first read, cut at a whole character: never the new text under the old hash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CANDIDATE_TEXT_CHARS, type PostgresBackend, ShadowStore } from '../src/index.ts'
import { CANDIDATE_COLUMNS, completeLight, toMessage, type Row } from '../src/postgres/rows.ts'
import { message } from './helpers.ts'
import { postgresTarget } from './targets.ts'

const target = postgresTarget()
beforeAll(() => target.setup())
afterAll(() => target.teardown())

describe('PostgreSQL light rows', () => {
  it('reads a long non-ASCII text again, an ASCII one once, and keeps a whole-character prefix of a row rewritten in between', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      const connection = (store.backend as PostgresBackend).connection
      await store.append([
        message('light', 1, '连'.repeat(200_000)),
        message('light', 2, 'a'.repeat(300_000)),
        message('light', 3, 'short é text'),
      ])
      let reads = 0
      const reader = (sql: string, params: unknown[]): Promise<Row[]> => {
        reads += 1
        return connection.search('test', sql, params)
      }
      const light = (): Promise<Row[]> => connection.search('test', `SELECT ${CANDIDATE_COLUMNS} FROM messages m WHERE m.session_id = 'light' ORDER BY m.seq`)
      const stale = await light()
      const fresh = (await completeLight(reader, await light())).map(toMessage)
      expect(reads).toBe(1)
      expect(fresh.map(row => row.text)).toEqual(['连'.repeat(200_000).slice(0, CANDIDATE_TEXT_CHARS), 'a'.repeat(CANDIDATE_TEXT_CHARS), 'short é text'])
      // ASCII rows alone: no second read
      reads = 0
      await completeLight(reader, (await light()).slice(1))
      expect(reads).toBe(0)
      // rewritten between the reads: the first read's whole characters (256,000 bytes: 85,333 of 3 bytes)
      await store.append([message('light', 1, 'ü'.repeat(200_000))])
      const kept = (await completeLight(reader, stale)).map(toMessage)
      expect(kept[0]!.text).toBe('连'.repeat(85_333))
      expect(kept[0]!.hash).toBe(stale[0]!['hash'])
      // expired between the reads (text emptied, hash kept, as retention does): not the first read
      // joined to an empty rest (a character cut in half), its whole characters
      await store.append([message('light', 4, '连'.repeat(200_000))])
      const before = (await light()).filter(row => row['seq'] === 4)
      await connection.pool.query("UPDATE messages SET text = ''::bytea, expired_at = 1 WHERE session_id = 'light' AND seq = 4")
      expect((await completeLight(reader, before)).map(toMessage)[0]!.text).toBe('连'.repeat(85_333))
      // and through a search: the new text, cut to its characters
      const hits = (await store.backend.candidateRows!([Number(stale[0]!['light_id'])]))
      expect(hits[0]!.text).toBe('ü'.repeat(200_000).slice(0, CANDIDATE_TEXT_CHARS))
    } finally {
      await store.close()
    }
  })
})
