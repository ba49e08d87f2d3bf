/**
 * What capture reads off a dsh session and its composition: which agent preset they belong to
 * (a capture in a preset captures only that preset's sessions), and the session rows a session
 * needs in the store before its messages.
 */
import type { Context } from '@deepseek-ai/cordis'
import { scopeOf } from '@deepseek-ai/dsh-scope'
import type { Session } from '@deepseek-ai/dsh-session'
import type { IngestOp } from '@dsh-shadow/store'

/** The agent preset whose standing composition `ctx` belongs to (dsh web roster), if any. */
export function standingPreset(ctx: Context): string | undefined {
  const key = scopeOf(ctx) as { agentPreset?: unknown } | undefined
  return typeof key?.agentPreset === 'string' ? key.agentPreset : undefined
}

/** The preset a session runs on: the last `agent-preset/selected` event, else its header (none in headless). */
export function presetOfSession(session: Session): string | undefined {
  const events = session.events
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index] as { type: string; data?: { agentPreset?: unknown } }
    if (event.type === 'agent-preset/selected' && typeof event.data?.agentPreset === 'string') return event.data.agentPreset
  }
  const header = session.header as { agentPreset?: unknown }
  return typeof header.agentPreset === 'string' ? header.agentPreset : undefined
}


/** The store rows a session needs before its messages: its parent's (when a fork) and its own. */
export function sessionOps(session: Session): IngestOp[] {
  const header = session.header
  const parent = header.parentSession
  return [
    ...(parent === undefined ? [] : [{ op: 'session', session: { sessionId: parent } } as const]),
    {
      op: 'session',
      session: {
        sessionId: session.id,
        parentSessionId: parent ?? null,
        forkSeq: parent === undefined ? null : header.seedLength ?? null,
        workspace: header.cwd ?? null,
        createdAt: header.createdAt,
      },
    },
  ]
}
