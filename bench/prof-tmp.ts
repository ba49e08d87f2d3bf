import { ShadowStore } from '@dsh-shadow/store'
import { startPostgres } from '@dsh-shadow/testing'
import { CLASSES, sessionId } from './corpus.ts'
const server = await startPostgres({ durable: true, keepDir: process.argv[2]!, settings: { shared_buffers: '512MB' } })
const store = await ShadowStore.open(server.storeDsn(process.argv[3]!))
const backend = store.backend as unknown as Record<string, unknown>
const calls = new Map<string, { n: number; ms: number }>()
const proto = Object.getPrototypeOf(backend)
for (const name of Object.getOwnPropertyNames(proto)) {
  const fn = backend[name]
  if (typeof fn !== 'function' || name === 'constructor') continue
  backend[name] = async (...args: unknown[]) => {
    const t = performance.now()
    try { return await (fn as (...a: unknown[]) => unknown).apply(backend, args) } finally {
      const e = calls.get(name) ?? { n: 0, ms: 0 }; e.n += 1; e.ms += performance.now() - t; calls.set(name, e)
    }
  }
}
for (const cls of CLASSES) {
  for (const query of cls.queries) {
    const options = cls.session ? { sessionId: sessionId(0), limit: 10 } : { sessionId: sessionId(0), allSessions: true, limit: 10 }
    await store.search(query, options)
    calls.clear()
    const t = performance.now()
    await store.search(query, options)
    const total = performance.now() - t
    console.log(`${cls.name.padEnd(10)} ${query.slice(0, 30).padEnd(30)} ${total.toFixed(1).padStart(7)} ms  ${[...calls].map(([k, v]) => `${k}:${v.n}/${v.ms.toFixed(1)}`).join(' ')}`)
  }
}
await store.close()
server.stop()
