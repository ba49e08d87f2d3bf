/**
 * The worker-thread client dsh plugins use: when its worker dies under it (a fatal error in the
 * store's thread, an exit nobody asked for), the calls pending then fail, typed, and the next call
 * after a short pause runs on a new worker: capture and the web reader go on without a dsh restart.
 */
import type { Worker } from 'node:worker_threads'
import { renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ShadowStoreWorkerClient } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

const dirs: Array<{ cleanup(): void }> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup()
})

/** Kill the client's worker thread as a crash would, and wait until it is gone. */
async function killWorker(client: ShadowStoreWorkerClient): Promise<void> {
  const worker = (client as unknown as { worker: Worker }).worker
  const gone = new Promise(resolve => worker.once('exit', resolve))
  await worker.terminate()
  await gone
}

describe('ShadowStoreWorkerClient after its worker died', () => {
  it('fails the calls of the crash, then runs the next call on a new worker with every row still there', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const client = await ShadowStoreWorkerClient.open(join(dir.path, 'shadow.db'))
    await client.registerSession({ sessionId: 's1' })
    await client.append([message('s1', 0, 'written before the crash')])
    await killWorker(client)
    expect(client.crashed?.message).toMatch(/worker exited/)
    // right after a start, a crash is not restarted at once (no open loop): typed, not a hang
    await expect(client.count({ sessionId: 's1' })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await new Promise(resolve => setTimeout(resolve, 1_100))
    expect(await client.count({ sessionId: 's1' })).toBe(1)
    expect(client.crashed).toBeUndefined()
    await client.append([message('s1', 1, 'written after the restart')])
    expect((await client.search('restart', { sessionId: 's1' })).hits.map(hit => hit.message.seq)).toEqual([1])
    await client.close()
    await expect(client.count({ sessionId: 's1' })).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('fails with the new open\'s own typed error while the store cannot be opened, and recovers once it can', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const path = join(dir.path, 'shadow.db')
    const client = await ShadowStoreWorkerClient.open(path)
    await client.registerSession({ sessionId: 's1' })
    await client.append([message('s1', 0, 'kept aside')])
    await client.close()
    const reopened = await ShadowStoreWorkerClient.open(path)
    await killWorker(reopened)
    // the file is not a store now (replaced under a dead worker)
    renameSync(path, `${path}.kept`)
    writeFileSync(path, 'not a database, just text '.repeat(1_000))
    await new Promise(resolve => setTimeout(resolve, 1_100))
    await expect(reopened.count({ sessionId: 's1' })).rejects.toMatchObject({ code: 'CORRUPT' })
    // at most one restart per second: the next call fails at once with that error, not a new open
    await expect(reopened.count({ sessionId: 's1' })).rejects.toMatchObject({ code: 'CORRUPT' })
    renameSync(`${path}.kept`, path)
    await new Promise(resolve => setTimeout(resolve, 1_100))
    // concurrent callers share the one new worker
    const [one, two, sessions] = await Promise.all([reopened.count({ sessionId: 's1' }), reopened.count({ sessionId: 's1' }), reopened.sessions()])
    expect([one, two]).toEqual([1, 1])
    expect(sessions.map(session => session.sessionId)).toEqual(['s1'])
    await reopened.close()
  })
})
