/** The CLI's longer operations, kept apart from argument parsing so tests can call them directly. */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { type IngestReport, type RedactionOptions, type ShadowSession, ShadowStore } from '@dsh-shadow/store'
import { bodyOf, captureLog, checkpointsOfLog } from 'dsh-shadow-context'
import type { DshLogs } from 'dsh-shadow-context'
import { jsonSafe, safe, time } from './format.ts'

export interface SessionVerdict {
  readonly sessionId: string
  readonly logMessages: number
  readonly storeRows: number
  /** Model-visible messages of the log that the store does not hold. */
  readonly lost: number[]
  /** Rows whose content differs from the log event at that seq. */
  readonly mismatched: number[]
  /** Own rows the log does not have (a lost lifetime's, never repaired). */
  readonly extra: number[]
  readonly duplicated: number
  readonly error?: string
}

/** Compare one session of the dsh log with the store, through the fork lineage. */
export async function verifySession(store: ShadowStore, logs: DshLogs, sessionId: string): Promise<SessionVerdict> {
  let log
  try {
    log = await logs.load(sessionId)
  } catch (error) {
    return { sessionId, logMessages: 0, storeRows: 0, lost: [], mismatched: [], extra: [], duplicated: 0, error: `log unreadable: ${error instanceof Error ? error.message : String(error)}` }
  }
  const { captured } = captureLog(sessionId, log.events)
  const entries = captured.map(event => ({ seq: event.seq, hash: store.hashOf(event.eventJson) }))
  const session = await store.session(sessionId)
  if (session === undefined) {
    return { sessionId, logMessages: entries.length, storeRows: 0, lost: entries.map(entry => entry.seq), mismatched: [], extra: [], duplicated: 0 }
  }
  // rows retention emptied on purpose are accounted for, not lost
  const confirmed = await store.confirm(sessionId, entries, { allowExpired: true })
  const ownFrom = session.parentSessionId === null ? 0 : session.forkSeq ?? 0
  const own = new Set(entries.filter(entry => entry.seq >= ownFrom).map(entry => entry.seq))
  const report = await store.reconcile(sessionId, entries.filter(entry => entry.seq >= ownFrom))
  return {
    sessionId,
    logMessages: entries.length,
    storeRows: session.messageCount,
    lost: confirmed.missing,
    mismatched: confirmed.mismatched,
    extra: report.extra.filter(seq => !own.has(seq)),
    duplicated: report.duplicated,
  }
}

/** Session ids with a log file under the dsh sessions root (`<root>/<workspace>/<session id>/session.jsonl*`), read from the folders alone. */
export function logIdsOnDisk(root: string): string[] {
  const ids: string[] = []
  const entries = (dir: string): string[] => {
    try {
      return readdirSync(dir)
    } catch {
      return []
    }
  }
  for (const workspace of entries(root)) {
    for (const id of entries(join(root, workspace))) {
      if (entries(join(root, workspace, id)).some(name => name.startsWith('session.jsonl'))) ids.push(id)
    }
  }
  return ids
}

export interface RepairReport extends IngestReport {
  readonly sessionId: string
}

/** Make the store equal the log for one session: rows, lineage, and the log's checkpoints. */
export async function repairSession(store: ShadowStore, logs: DshLogs, sessionId: string): Promise<RepairReport> {
  const log = await logs.load(sessionId)
  const meta = log.meta
  const parent = meta.parentSession
  const { captured } = captureLog(sessionId, log.events)
  const report = await store.ingest([
    ...(parent === undefined ? [] : [{ op: 'session' as const, session: { sessionId: parent } }]),
    {
      op: 'session',
      session: {
        sessionId,
        parentSessionId: parent ?? null,
        forkSeq: parent === undefined ? null : meta.seedLength ?? null,
        workspace: meta.cwd ?? null,
        createdAt: meta.createdAt,
      },
    },
    { op: 'reconcile', sessionId, events: captured, ownFromSeq: parent === undefined ? 0 : meta.seedLength ?? 0 },
    ...checkpointsOfLog(sessionId, log.events).map(checkpoint => ({ op: 'checkpoint' as const, checkpoint, elide: true })),
  ])
  return { sessionId, ...report }
}

/**
 * A session's visible history as Markdown, or as JSON lines of the exact log events, handed to
 * `write` a message at a time (the Markdown is for a terminal: stored control characters are escaped).
 */
export async function exportSession(store: ShadowStore, session: ShadowSession, format: 'md' | 'jsonl', progress: (done: number, total: number) => void, write: (text: string) => void): Promise<void> {
  const total = await store.count({ sessionId: session.sessionId })
  if (format === 'md') {
    write(`# Session ${safe(session.sessionId)}\n\n- shadow tag: ${session.tag}\n- workspace: ${safe(session.workspace ?? '-')}\n- ${total} messages, ${time(session.firstTime)} → ${time(session.lastTime)} UTC\n`)
  }
  let done = 0
  let fromSeq = 0
  for (;;) {
    const page = await store.read({ sessionId: session.sessionId }, { fromSeq, limit: 500 })
    if (page.length === 0) break
    for (const message of page) {
      if (format === 'jsonl') {
        const event = message.expiredAt === null ? JSON.parse(message.eventJson) as unknown : null
        write(`${jsonSafe(JSON.stringify({ sessionId: message.sessionId, shadowId: message.shadowId, checkpoint: message.elidedBy, ...(message.expiredAt === null ? {} : { expiredAt: message.expiredAt }), event }))}\n`)
      }
      else {
        const who = message.role === 'tool' ? `tool \`${safe(message.toolName ?? '?')}\`` : message.eventType === 'request/header' ? 'system prompt' : message.role
        write(`\n## ${message.shadowId} · ${time(message.time)} UTC · ${who}${message.turn === null ? '' : ` · turn ${message.turn}`}${message.elidedBy === null ? '' : ` · in checkpoint ${message.elidedBy}`}\n\n${'````'}text\n${safe(bodyOf(message))}\n${'````'}\n`)
      }
    }
    done += page.length
    progress(done, total)
    fromSeq = page.at(-1)!.seq + 1
  }
}

/**
 * The redaction policy of a store about to be set aside by `repair --fresh`: the rebuilt store must
 * keep it, or every secret would come back in clear from the logs. A store too damaged to tell
 * gets the built-in detectors (hiding a false positive from search is the safe mistake).
 */
export async function policyToKeep(path: string): Promise<{ policy: RedactionOptions | false; guessed: boolean }> {
  try {
    const old = await ShadowStore.open(path, { readOnly: true })
    try {
      return { policy: old.redactionPolicy() ?? false, guessed: false }
    } finally {
      await old.close()
    }
  } catch {
    try {
      const { DatabaseSync } = await import('node:sqlite')
      const db = new DatabaseSync(path, { readOnly: true })
      try {
        const saved = (db.prepare("SELECT value FROM meta WHERE key = 'redact'").get() as { value?: string } | undefined)?.value
        return { policy: saved === undefined || saved === 'off' ? false : JSON.parse(saved) as RedactionOptions, guessed: false }
      } finally {
        db.close()
      }
    } catch {
      return { policy: {}, guessed: true }
    }
  }
}
