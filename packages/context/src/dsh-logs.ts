/**
 * Read-only access to dsh's own session logs, through dsh's JSONL persistence package (the same
 * code dsh uses, so compressed frames, packed chunk rows and repairs are read exactly as dsh does).
 */
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import SessionStore, { type SessionEvent, type SessionHeader } from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'

export interface DshLogs {
  readonly root: string
  list(): Promise<SessionHeader[]>
  load(sessionId: string): Promise<{ meta: SessionHeader; events: readonly SessionEvent[] }>
  close(): Promise<void>
}

export async function openDshLogs(home: string): Promise<DshLogs> {
  const root = join(home, 'sessions')
  const ctx = new Context()
  // dsh logs to its own buffer; the CLI reports errors itself
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlSessionPersistence, { root })
  const persistence = ctx.sessionPersistence
  return {
    root,
    list: () => persistence.list(),
    load: async sessionId => persistence.inspect(sessionId as never),
    close: async () => {
      await (ctx as unknown as { registry: { dispose?: () => Promise<void> } }).registry?.dispose?.()
    },
  }
}
