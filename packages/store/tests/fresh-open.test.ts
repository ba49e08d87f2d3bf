/**
 * A store created fresh has nothing to index: it is made with the current analyzer version, so its
 * first open does not run a rebuild. It did: several processes opening one new SQLite store at the
 * same instant failed with "another process is rebuilding the index" (an empty rebuild).
 */
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANALYZER_VERSION, PostgresBackend, SqliteBackend, ShadowStore } from '../src/index.ts'
import { TARGETS } from './targets.ts'

describe.each(TARGETS)('a fresh store on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('is created with the current analyzer version: its first open rebuilds nothing', async () => {
    const location = target.location()
    const backend = target.name === 'sqlite' ? await SqliteBackend.open(location) : await PostgresBackend.open(location)
    try {
      expect(await backend.meta('analyzer_version')).toBe(String(ANALYZER_VERSION))
    } finally {
      await backend.close()
    }
  })

  it('opens for six processes at once, each writing its row', async () => {
    for (let round = 0; round < 3; round += 1) {
      const location = target.location()
      const script = `
        const { ShadowStore } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)})
        const store = await ShadowStore.open(${JSON.stringify(location)})
        await store.append([{ sessionId: 'p' + process.pid, seq: 1, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: 1, eventJson: '{}', text: 'hello', tokens: 1 }])
        await store.close()
      `
      const codes = await Promise.all(Array.from({ length: 6 }, () => new Promise<string>(resolve => {
        const child = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] })
        let stderr = ''
        child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
        child.on('exit', code => resolve(code === 0 ? 'ok' : stderr.slice(-1500)))
      })))
      expect(codes).toEqual(Array.from({ length: 6 }, () => 'ok'))
      const store = await ShadowStore.open(location)
      expect((await store.sessions()).length).toBe(6)
      expect(await store.integrityCheck()).toEqual([])
      await store.close()
    }
  }, 120_000)
})
