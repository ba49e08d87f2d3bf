/**
 * Worker-thread host of a ShadowStore: SQLite work (FTS indexing, ranking) runs off the thread
 * that drives dsh's turns. Messages are handled strictly in arrival order.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { ShadowStoreError } from './errors.ts'
import { ShadowStore, type ShadowStoreOptions } from './store.ts'

interface Request {
  readonly id: number
  readonly method: string
  readonly args: unknown[]
}

const { path, options } = workerData as { path: string; options: ShadowStoreOptions }
const port = parentPort!
let store: ShadowStore | undefined
let openError: unknown

try {
  store = await ShadowStore.open(path, { ...options, onProgress: (task, done, total) => port.postMessage({ progress: { task, done, total } }) })
} catch (error) {
  openError = error
}

function encodeError(error: unknown): { name: string; code?: string; message: string } {
  if (error instanceof ShadowStoreError) return { name: error.name, code: error.code, message: error.message }
  if (error instanceof Error) return { name: error.name, message: error.message }
  return { name: 'Error', message: String(error) }
}

port.on('message', (request: Request) => {
  void (async () => {
    try {
      if (store === undefined) throw openError
      if (request.method === 'close') {
        await store.close()
        port.postMessage({ id: request.id, ok: true, value: undefined })
        port.close()
        return
      }
      const method = (store as unknown as Record<string, unknown>)[request.method]
      if (typeof method !== 'function' || request.method.startsWith('_') || request.method === 'constructor') {
        throw new ShadowStoreError('INVALID_INPUT', `shadow store has no method ${request.method}`)
      }
      const value = await (method as (...args: unknown[]) => unknown).apply(store, request.args)
      port.postMessage({ id: request.id, ok: true, value })
    } catch (error) {
      port.postMessage({ id: request.id, ok: false, error: encodeError(error) })
    }
  })()
})
port.postMessage({ ready: true, error: openError === undefined ? undefined : encodeError(openError) })
