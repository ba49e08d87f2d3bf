/**
 * One store connection per location and process, shared by every capture of the process (the host
 * row and each preset's), counted by reference: the last capture to stop closes it.
 */
import { ShadowStore, type ShadowStoreApi, type ShadowStoreOptions, ShadowStoreWorkerClient } from '@dsh-shadow/store'

// One store connection per file and process, shared by every capture (host row, presets).
const shared = new Map<string, { api: Promise<ShadowStoreApi>; refs: number }>()

export type StoreOpenOptions = Pick<ShadowStoreOptions, 'synchronous' | 'maxBytes' | 'busyTimeoutMs' | 'redact' | 'onProgress'>

export async function acquireStore(path: string, worker: boolean, options: StoreOpenOptions): Promise<ShadowStoreApi> {
  const entry = shared.get(path)
  if (entry !== undefined) {
    entry.refs += 1
    return entry.api
  }
  const api: Promise<ShadowStoreApi> = worker
    ? ShadowStoreWorkerClient.open(path, options)
    : ShadowStore.open(path, options) as Promise<ShadowStoreApi>
  shared.set(path, { api, refs: 1 })
  try {
    return await api
  } catch (error) {
    shared.delete(path)
    throw error
  }
}

export async function releaseStore(path: string): Promise<void> {
  const entry = shared.get(path)
  if (entry === undefined) return
  entry.refs -= 1
  if (entry.refs > 0) return
  shared.delete(path)
  await (await entry.api).close()
}
