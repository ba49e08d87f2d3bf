/**
 * A ShadowStore living in a worker thread, behind the same async API. dsh plugins use this so
 * that indexing and ranking never block the event loop that runs the agent's turns.
 */
import { Worker } from 'node:worker_threads'
import { ShadowStoreError, type ShadowStoreErrorCode } from './errors.ts'
import { displayLocation } from './postgres/connection.ts'
import type { ShadowStore, ShadowStoreOptions } from './store.ts'

type AsyncMethods<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => Promise<unknown> ? K : never]: T[K]
}

/** Every async method of ShadowStore; what both the in-process store and the worker client offer. */
export type ShadowStoreApi = AsyncMethods<ShadowStore> & { readonly path: string }

interface Pending {
  resolve(value: unknown): void
  reject(error: unknown): void
}

function decodeError(error: { name: string; code?: string; message: string }): Error {
  if (error.code !== undefined) return new ShadowStoreError(error.code as ShadowStoreErrorCode, error.message)
  return new ShadowStoreError('UNAVAILABLE', `shadow store worker: ${error.message}`)
}

/** A worker that died is started again on the next call, at most once in this long (a store that kills it again is not reopened in a loop). */
const RESTART_INTERVAL_MS = 1_000

type WorkerReply = { id?: number; ok?: boolean; value?: unknown; error?: { name: string; code?: string; message: string }; ready?: boolean; progress?: { task: 'redact' | 'reindex'; done: number; total: number } }

/** Start a worker that opens (creating if needed) the store at `path`; resolves once the store is open. */
async function startWorker(path: string, options: ShadowStoreOptions): Promise<Worker> {
  const here = import.meta.url
  const script = new URL(here.endsWith('.ts') ? './worker.ts' : './worker.js', here)
  // a callback cannot cross to the worker: it reports progress as messages instead
  const { onProgress, ...sendable } = options
  const worker = new Worker(script, { workerData: { path, options: sendable }, execArgv: [...process.execArgv, '--disable-warning=ExperimentalWarning'] })
  worker.on('message', (message: WorkerReply) => {
    if (message.progress !== undefined) onProgress?.(message.progress.task, message.progress.done, message.progress.total)
  })
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: WorkerReply): void => {
      if (message.ready !== true) return
      worker.off('message', onMessage)
      worker.off('error', reject)
      if (message.error !== undefined) {
        void worker.terminate()
        reject(decodeError(message.error))
      } else resolve()
    }
    worker.on('message', onMessage)
    worker.once('error', reject)
  })
  worker.unref()
  return worker
}

export class ShadowStoreWorkerClient {
  readonly path: string
  private readonly location: string
  private readonly options: ShadowStoreOptions
  private worker: Worker
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private failure: Error | undefined
  private startedAt = Date.now()
  private restarting: Promise<void> | undefined
  private closed = false

  private constructor(path: string, options: ShadowStoreOptions, worker: Worker) {
    // what the store reports as its path: a connection string never with its password
    this.path = displayLocation(path)
    this.location = path
    this.options = options
    this.worker = worker
    this.attach(worker)
  }

  /** Route one worker's replies, and fail every pending call when it crashes or exits. */
  private attach(worker: Worker): void {
    worker.on('message', (message: WorkerReply) => {
      if (message.id === undefined || worker !== this.worker) return
      const waiter = this.pending.get(message.id)
      if (waiter === undefined) return
      this.settle(message.id)
      if (message.ok === true) waiter.resolve(message.value)
      else waiter.reject(decodeError(message.error!))
    })
    const fail = (error: Error): void => {
      if (worker !== this.worker) return
      this.failure = error
      for (const waiter of this.pending.values()) waiter.reject(error)
      this.pending.clear()
      worker.unref()
    }
    worker.on('error', error => fail(new ShadowStoreError('UNAVAILABLE', `shadow store worker crashed: ${error.message}`, { cause: error })))
    worker.on('exit', code => {
      if (!this.closed) fail(new ShadowStoreError('UNAVAILABLE', `shadow store worker exited (code ${code})`))
    })
  }

  /** Start a worker that opens (creating if needed) the store at `path`. */
  static async open(path: string, options: ShadowStoreOptions = {}): Promise<ShadowStoreApi & ShadowStoreWorkerClient> {
    const client = new ShadowStoreWorkerClient(path, options, await startWorker(path, options))
    return new Proxy(client, {
      get(target, property, receiver) {
        if (property === 'then') return undefined // not a thenable
        if (typeof property === 'string' && !(property in target)) return (...args: unknown[]) => target.call(property, args)
        return Reflect.get(target, property, receiver) as unknown
      },
    }) as ShadowStoreApi & ShadowStoreWorkerClient
  }

  /**
   * The worker's crash or exit, while it is not running again (the next call starts a new one);
   * undefined while it runs.
   */
  get crashed(): Error | undefined {
    return this.failure
  }

  /** Send one call to the worker; after a crash, to a new worker (the calls pending at the crash failed with it). */
  async call(method: string, args: unknown[]): Promise<unknown> {
    if (this.closed) throw new ShadowStoreError('CLOSED', 'shadow store is closed')
    if (this.failure !== undefined) await this.restart()
    return this.send(method, args)
  }

  /**
   * A new worker for one that crashed or exited (a fatal error in the store's thread, an exit the
   * store did not ask for): the process's capture and readers go on without a dsh restart. One at
   * a time, at most once per RESTART_INTERVAL_MS; until then, and if it fails, calls fail with the
   * crash (or the new open's error), typed.
   */
  private restart(): Promise<void> {
    this.restarting ??= (async () => {
      const failure = this.failure!
      if (Date.now() - this.startedAt < RESTART_INTERVAL_MS) throw failure
      this.startedAt = Date.now()
      let worker: Worker
      try {
        worker = await startWorker(this.location, this.options)
      } catch (error) {
        // what a call now fails with until the next attempt: why the store did not open again
        this.failure = error instanceof Error ? error : new ShadowStoreError('UNAVAILABLE', `shadow store worker: ${String(error)}`)
        throw this.failure
      }
      if (this.closed) {
        await worker.terminate()
        throw new ShadowStoreError('CLOSED', 'shadow store is closed')
      }
      void this.worker.terminate()
      this.worker = worker
      this.attach(worker)
      this.failure = undefined
    })().finally(() => {
      this.restarting = undefined
    })
    return this.restarting
  }

  private send(method: string, args: unknown[]): Promise<unknown> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      // An idle worker must not keep the process alive; a pending call must.
      if (this.pending.size === 0) this.worker.ref()
      this.pending.set(id, { resolve, reject })
      try {
        this.worker.postMessage({ id, method, args })
      } catch (error) {
        this.settle(id)
        reject(new ShadowStoreError('INVALID_INPUT', `cannot send to the shadow store worker: ${error instanceof Error ? error.message : String(error)}`))
      }
    })
  }

  private settle(id: number): void {
    this.pending.delete(id)
    if (this.pending.size === 0) this.worker.unref()
  }

  async close(): Promise<void> {
    if (this.closed) return
    try {
      if (this.failure === undefined) await this.call('close', [])
    } finally {
      this.closed = true
      await this.worker.terminate()
    }
  }
}
