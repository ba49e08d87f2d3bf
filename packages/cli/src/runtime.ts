/** What every dsh-shadow command shares: options, the store and log handles, session lookup, transcripts. */
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Command } from 'commander'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { displayLocation, isPostgresLocation, isShadowStoreError, locationProblem, ShadowStore, tagCandidates, type RedactionOptions, type ShadowMessage, type ShadowSession } from '@dsh-shadow/store'
import { bodyOf, openDshLogs, resolveStorePath, type DshLogs } from 'dsh-shadow-context'
import { CliError, type CliIo, consoleOutput, EXIT, safe, table, time, type Output } from './format.ts'

export interface GlobalOptions {
  home?: string
  /** The setup commands' spelling of --home. */
  dshHome?: string
  store?: string
  json?: boolean
}

export interface Runtime {
  readonly home: string
  readonly storePath: string
  readonly output: Output
}

/** A path option as given, refused when the file system could never take it. */
export function pathOption(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined
  // node:fs throws an untyped TypeError on NUL; an empty path would silently mean the working directory
  if (value.length === 0 || value.includes('\u0000')) throw new CliError(`${flag} must be a non-empty path without NUL characters`, EXIT.usage)
  return value
}

export function runtimeOf(command: Command, io: CliIo): Runtime {
  const options = command.optsWithGlobals<GlobalOptions>()
  const home = resolve(resolveDshHome(pathOption(options.dshHome ?? options.home, options.dshHome === undefined ? '--home' : '--dsh-home')))
  const store = pathOption(options.store, '--store')
  const problem = store === undefined ? undefined : locationProblem(store)
  if (problem !== undefined) throw new CliError(`--store ${problem}`, EXIT.usage)
  return { home, storePath: store === undefined ? resolveStorePath(undefined, home) : isPostgresLocation(store) ? store : resolve(store), output: consoleOutput(options.json === true, io) }
}

export async function withStore<T>(rt: Runtime, run: (store: ShadowStore) => Promise<T>, options: { readOnly?: boolean; create?: boolean; redact?: RedactionOptions | false } = {}): Promise<T> {
  const shown = displayLocation(rt.storePath)
  const missing = `no shadow store at ${shown} (use --home or --store; Shadow Context creates it on first use)`
  const postgres = isPostgresLocation(rt.storePath)
  if (!postgres && !existsSync(rt.storePath) && options.create !== true) throw new CliError(missing, EXIT.notFound)
  // opening for writing would set the path to 0600 first: never do that to a folder named by mistake
  if (!postgres && existsSync(rt.storePath) && !statSync(rt.storePath).isFile()) throw new CliError(`${rt.storePath} is not a store file`, EXIT.usage)
  let store: ShadowStore
  const readOnly = options.readOnly ?? true
  try {
    store = await ShadowStore.open(rt.storePath, { readOnly, ...(options.redact === undefined ? {} : { redact: options.redact }) }).catch(async (error: unknown) => {
      if (!readOnly || !isShadowStoreError(error, 'SCHEMA_TOO_OLD')) throw error
      // a store from an older version: upgrade it in place (what dsh does at its next start), then read
      await (await ShadowStore.open(rt.storePath)).close()
      rt.output.err(`upgraded the shadow store ${shown} to the current schema`)
      return ShadowStore.open(rt.storePath, { readOnly })
    })
  } catch (error) {
    if (isShadowStoreError(error, 'NOT_FOUND') && options.create !== true) throw new CliError(missing, EXIT.notFound)
    throw new CliError(`cannot open the shadow store ${shown}: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
  }
  try {
    return await run(store)
  } finally {
    await store.close()
  }
}

export async function withLogs<T>(rt: Runtime, run: (logs: DshLogs) => Promise<T>): Promise<T> {
  // a home that cannot be read (a file, a name too long, no permission) is the user's to fix: say so in one line
  const unreadable = (error: unknown): never => {
    throw new CliError(`cannot read the dsh logs in ${rt.home}: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
  }
  const logs = await openDshLogs(rt.home).catch(unreadable)
  const guarded: DshLogs = { root: logs.root, list: () => logs.list().catch(unreadable), load: sessionId => logs.load(sessionId).catch(unreadable), close: () => logs.close() }
  try {
    return await run(guarded)
  } finally {
    await logs.close()
  }
}

/** A full session id, a unique prefix of one, or its 6-character tag. */
export async function findSession(store: ShadowStore, reference: string): Promise<ShadowSession> {
  // the empty prefix would match every session (and pick the only one of a one-session store)
  if (reference.length === 0) throw new CliError('the session reference is empty', EXIT.usage)
  const sessions = await store.sessions()
  const byId = sessions.find(session => session.sessionId === reference)
  const byTag = sessions.find(session => session.tag === reference)
  // a session may be named like another's tag (a shared store holds other people's): never pick one of them by list order
  if (byId !== undefined && byTag !== undefined && byId !== byTag) throw new CliError(`"${reference}" is the id of session ${byId.sessionId} and the tag of session ${byTag.sessionId}; give the full id of the one you mean`, EXIT.usage)
  const exact = byId ?? byTag
  if (exact !== undefined) return exact
  const matches = sessions.filter(session => session.sessionId.startsWith(reference))
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) throw new CliError(`"${reference}" matches ${matches.length} sessions; give more of the id`, EXIT.usage)
  throw new CliError(`no session "${reference}" in the shadow store`, EXIT.notFound)
}

/** The same references, resolved against the dsh log (repair rebuilds sessions the store may lack). */
export async function findLogSession(logs: DshLogs, reference: string): Promise<string> {
  if (reference.length === 0) throw new CliError('the session reference is empty', EXIT.usage)
  const ids = (await logs.list()).map(meta => meta.id as string)
  const byId = ids.find(id => id === reference)
  const byTag = ids.find(id => tagCandidates(id).includes(reference))
  if (byId !== undefined && byTag !== undefined && byId !== byTag) throw new CliError(`"${reference}" is the id of session ${byId} and the tag of session ${byTag}; give the full id of the one you mean`, EXIT.usage)
  const exact = byId ?? byTag
  if (exact !== undefined) return exact
  const matches = ids.filter(id => id.startsWith(reference))
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) throw new CliError(`"${reference}" matches ${matches.length} sessions; give more of the id`, EXIT.usage)
  throw new CliError(`no session "${reference}" in the dsh log at ${logs.root}`, EXIT.notFound)
}

export function speaker(message: ShadowMessage): string {
  if (message.eventType === 'request/header') return 'system'
  if (message.role === 'tool') return `tool:${message.toolName ?? '?'}`
  if (message.role === 'user' && message.sourceKind !== 'user') return message.sourceKind
  return message.role
}

export function transcript(messages: readonly ShadowMessage[]): string {
  return messages.map(message => `── ${message.shadowId} · ${time(message.time)} UTC · ${speaker(message)}${message.turn === null ? '' : ` · turn ${message.turn}`}${message.elidedBy === null ? '' : ` · checkpoint ${message.elidedBy}`}\n${safe(bodyOf(message))}`).join('\n')
}

export function tableFor(rt: Runtime, header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  return table(header, rows, rt.output.columns)
}

export function int(value: string, label: string): number {
  const parsed = Number(value)
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new CliError(`${label} must be a non-negative integer`, EXIT.usage)
  return parsed
}
