/** Shared helpers for tests that run Shadow Context on a real dsh composition. */
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { DshHarness, type DshHarnessOptions, type PluginMount } from '@dsh-shadow/testing'
import { hashEventJson, type ReconcileReport, type ShadowStoreApi } from '@dsh-shadow/store'
import { isCapturable, ShadowCapture, type ShadowCaptureConfig } from '../src/index.ts'

export interface ShadowHarnessOptions extends DshHarnessOptions {
  readonly capture?: ShadowCaptureConfig
  readonly extraPlugins?: readonly PluginMount[]
}

/** A real dsh composition with ShadowCapture mounted (store inside the harness's dsh home). */
export async function shadowHarness(options: ShadowHarnessOptions = {}): Promise<DshHarness> {
  const base = typeof options.plugins === 'function' ? undefined : options.plugins
  return DshHarness.create({
    ...options,
    // the store lives in the harness's own dsh home, never in the user's
    plugins: home => [...(base ?? []), { plugin: ShadowCapture, config: { ...options.capture, home } }, ...(options.extraPlugins ?? [])],
  })
}

/** The same, but the store's home must be known before the harness exists. */
export async function shadowHarnessAt(home: string, options: ShadowHarnessOptions = {}): Promise<DshHarness> {
  return shadowHarness({ ...options, home, capture: { ...options.capture, home } })
}

/** Model-visible events of a log (what the store must hold), in order. */
export function modelVisible(session: Session | { events: readonly SessionEvent[] }): SessionEvent[] {
  return session.events.filter(isCapturable)
}

/** Compare the store with a log: what is missing, stale, extra or duplicated. */
export async function compareWithLog(store: ShadowStoreApi, sessionId: string, events: readonly SessionEvent[]): Promise<ReconcileReport> {
  const authority = events.filter(isCapturable).map(event => ({ seq: event.seq, hash: hashEventJson(JSON.stringify(event)) }))
  return store.reconcile(sessionId, authority)
}
