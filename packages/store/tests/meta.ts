/** Reading and writing a store's meta table behind its back: how tests make a store as an older version left it. */
import { DatabaseSync } from 'node:sqlite'
import type { PostgresTarget, TARGETS } from './targets.ts'

export async function setMeta(target: (typeof TARGETS)[number], location: string, key: string, value: string): Promise<void> {
  if (target.name === 'sqlite') {
    const db = new DatabaseSync(location)
    db.prepare('INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)').run(key, value)
    db.close()
    return
  }
  const schema = new URL(location).searchParams.get('schema')!
  await (target as PostgresTarget).sql(`INSERT INTO "${schema}".meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, value])
}

export async function metaOf(target: (typeof TARGETS)[number], location: string, key: string): Promise<string | undefined> {
  if (target.name === 'sqlite') {
    const db = new DatabaseSync(location)
    const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined
    db.close()
    return row?.value
  }
  const schema = new URL(location).searchParams.get('schema')!
  const rows = await (target as PostgresTarget).sql(`SELECT value FROM "${schema}".meta WHERE key = $1`, [key])
  return rows[0]?.['value'] as string | undefined
}

/** A store as a redacting one of an older redaction version left it: its policy saved, its row hashes of the stored form. */
export async function asRedactedBy(target: (typeof TARGETS)[number], location: string, version: number): Promise<void> {
  await setMeta(target, location, 'redact', '{}')
  await setMeta(target, location, 'redaction_version', String(version))
  await setMeta(target, location, 'row_hash', 'stored')
}
