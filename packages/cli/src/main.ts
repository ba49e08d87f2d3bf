/**
 * dsh-shadow: inspect a Shadow Context store next to the dsh logs it shadows. Finds the dsh home
 * and the store the way dsh and the plugin do ($DSH_HOME, then ~/.dsh; <home>/shadow-context/
 * shadow.db), or takes them as options. Every command has `--json`.
 */
import { existsSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Command, CommanderError, Option } from 'commander'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import {
  isCheckpointId,
  isShadowId,
  displayLocation,
  isPostgresLocation,
  isShadowStoreError,
  parseTimeRange,
  tagCandidates,
  ShadowStore,
  type RedactionOptions,
  type ShadowMessage,
  type ShadowRole,
  type ShadowSession,
} from '@dsh-shadow/store'
import { bodyOf, resolveStorePath, SEARCH_EXCLUDES } from 'dsh-shadow-context'
import { openDshLogs, type DshLogs } from 'dsh-shadow-context'
import { CliError, type CliIo, consoleOutput, EXIT, PROCESS_IO, table, time, type Output } from './format.ts'
import { parseDuration, parseSize } from './units.ts'
import { exportSession, policyToKeep, repairSession, verifySession, type SessionVerdict } from './operations.ts'

interface GlobalOptions {
  home?: string
  store?: string
  json?: boolean
}

interface Runtime {
  readonly home: string
  readonly storePath: string
  readonly output: Output
}

/** One run of the CLI: where it writes, and the exit code a command settles on without failing (verify). */
interface Invocation {
  readonly io: CliIo
  exitCode: number
}

/** A path option as given, refused when the file system could never take it. */
function pathOption(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined
  // node:fs throws an untyped TypeError on NUL; an empty path would silently mean the working directory
  if (value.length === 0 || value.includes('\u0000')) throw new CliError(`${flag} must be a non-empty path without NUL characters`, EXIT.usage)
  return value
}

function runtimeOf(command: Command, io: CliIo): Runtime {
  const options = command.optsWithGlobals<GlobalOptions>()
  const home = resolve(resolveDshHome(pathOption(options.home, '--home')))
  const store = pathOption(options.store, '--store')
  return { home, storePath: store === undefined ? resolveStorePath(undefined, home) : isPostgresLocation(store) ? store : resolve(store), output: consoleOutput(options.json === true, io) }
}

async function withStore<T>(rt: Runtime, run: (store: ShadowStore) => Promise<T>, options: { readOnly?: boolean; create?: boolean; redact?: RedactionOptions | false } = {}): Promise<T> {
  const shown = displayLocation(rt.storePath)
  const missing = `no shadow store at ${shown} (use --home or --store; Shadow Context creates it on first use)`
  if (!isPostgresLocation(rt.storePath) && !existsSync(rt.storePath) && options.create !== true) throw new CliError(missing, EXIT.notFound)
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

async function withLogs<T>(rt: Runtime, run: (logs: DshLogs) => Promise<T>): Promise<T> {
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
async function findSession(store: ShadowStore, reference: string): Promise<ShadowSession> {
  // the empty prefix would match every session (and pick the only one of a one-session store)
  if (reference.length === 0) throw new CliError('the session reference is empty', EXIT.usage)
  const sessions = await store.sessions()
  const exact = sessions.find(session => session.sessionId === reference || session.tag === reference)
  if (exact !== undefined) return exact
  const matches = sessions.filter(session => session.sessionId.startsWith(reference))
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) throw new CliError(`"${reference}" matches ${matches.length} sessions; give more of the id`, EXIT.usage)
  throw new CliError(`no session "${reference}" in the shadow store`, EXIT.notFound)
}

/** The same references, resolved against the dsh log (repair rebuilds sessions the store may lack). */
async function findLogSession(logs: DshLogs, reference: string): Promise<string> {
  if (reference.length === 0) throw new CliError('the session reference is empty', EXIT.usage)
  const ids = (await logs.list()).map(meta => meta.id as string)
  const exact = ids.find(id => id === reference || tagCandidates(id).includes(reference))
  if (exact !== undefined) return exact
  const matches = ids.filter(id => id.startsWith(reference))
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) throw new CliError(`"${reference}" matches ${matches.length} sessions; give more of the id`, EXIT.usage)
  throw new CliError(`no session "${reference}" in the dsh log at ${logs.root}`, EXIT.notFound)
}

function speaker(message: ShadowMessage): string {
  if (message.eventType === 'request/header') return 'system'
  if (message.role === 'tool') return `tool:${message.toolName ?? '?'}`
  if (message.role === 'user' && message.sourceKind !== 'user') return message.sourceKind
  return message.role
}

function transcript(messages: readonly ShadowMessage[]): string {
  return messages.map(message => `── ${message.shadowId} · ${time(message.time)} UTC · ${speaker(message)}${message.turn === null ? '' : ` · turn ${message.turn}`}${message.elidedBy === null ? '' : ` · checkpoint ${message.elidedBy}`}\n${bodyOf(message)}`).join('\n')
}

function int(value: string, label: string): number {
  const parsed = Number(value)
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new CliError(`${label} must be a non-negative integer`, EXIT.usage)
  return parsed
}

/** The command tree, writing to `io` (default: the process streams). */
export function program(io: CliIo = PROCESS_IO): Command {
  return build({ io, exitCode: EXIT.ok })
}

function build(invocation: Invocation): Command {
  const runtime = (command: Command): Runtime => runtimeOf(command, invocation.io)
  const root = new Command('dsh-shadow')
    // Before any subcommand exists: subcommands copy these at creation. Without them a subcommand's
    // usage error would call process.exit(1) itself (wrong code, and fatal to an in-process caller).
    .exitOverride()
    .configureOutput({
      writeOut: text => invocation.io.stdout(text),
      writeErr: text => invocation.io.stderr(text),
      outputError: (text, write) => write(`${oneLine(text.trimEnd())}\n`),
    })
    .description('Inspect, search, read, export and verify a Shadow Context store (dsh 0.1.0-rc.8).')
    .option('--home <dir>', 'dsh home (default $DSH_HOME, then ~/.dsh)')
    .option('--store <file>', 'shadow store file, or a postgres:// connection string (default <home>/shadow-context/shadow.db)')
    .option('--json', 'machine-readable output')
    .showHelpAfterError()

  root.command('sessions')
    .description('list the sessions in the store, newest first')
    .option('--workspace <dir>', 'only sessions of this working directory')
    .action(async (options: { workspace?: string }, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        const sessions = await store.sessions(options.workspace)
        const checkpoints = new Map<string, number>()
        for (const session of sessions) checkpoints.set(session.sessionId, (await store.checkpoints(session.sessionId)).length)
        if (rt.output.json) return rt.output.out(JSON.stringify(sessions.map(session => ({ ...session, checkpoints: checkpoints.get(session.sessionId) }))))
        if (sessions.length === 0) return rt.output.out('(no sessions)')
        rt.output.out(table(['session', 'tag', 'messages', 'checkpoints', 'first', 'last', 'fork of', 'workspace'],
          sessions.map(session => [session.sessionId, session.tag, session.messageCount, checkpoints.get(session.sessionId), time(session.firstTime), time(session.lastTime), session.parentSessionId === null ? '' : `${session.parentSessionId}@${session.forkSeq}`, session.workspace])))
      })
    })

  root.command('timeline')
    .description('checkpoints and recalls of a session on a time axis')
    .argument('<session>', 'session id, unique prefix, or tag')
    .action(async (reference: string, _options: unknown, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        const session = await findSession(store, reference)
        const checkpoints = await store.checkpoints(session.sessionId, { withAncestors: true })
        const recalls = await store.recalls(session.sessionId)
        const entries = [
          ...checkpoints.map(checkpoint => ({
            time: checkpoint.createdAt, kind: checkpoint.trigger === 'index' ? 'index' : 'checkpoint', id: checkpoint.checkpointId,
            detail: `${checkpoint.expiredAt === null ? '' : `[originals expired ${time(checkpoint.expiredAt)}] `}${checkpoint.messageCount} msgs · seqs ${checkpoint.firstSeq}–${checkpoint.lastSeq} · originals ${time(checkpoint.timeFrom)} → ${time(checkpoint.timeTo)} · ${checkpoint.engine}${checkpoint.trigger === null || checkpoint.trigger === undefined ? '' : `/${checkpoint.trigger}`}${checkpoint.sessionId === session.sessionId ? '' : ` (from ${checkpoint.sessionId})`}`,
          })),
          ...recalls.map(recall => ({
            time: recall.time, kind: `recall:${recall.kind}`, id: String(recall.recallId),
            detail: `${recall.query === null || recall.query === undefined ? '' : `"${recall.query}" → `}${recall.shadowIds.length} msgs${recall.checkpointIds !== undefined && recall.checkpointIds.length > 0 ? ` from ${recall.checkpointIds.join(', ')}` : ''}`,
          })),
        ].toSorted((a, b) => a.time - b.time)
        if (rt.output.json) return rt.output.out(JSON.stringify({ session, checkpoints, recalls }))
        rt.output.out(`${session.sessionId} (${session.tag}) · ${session.messageCount} messages · ${time(session.firstTime)} → ${time(session.lastTime)} UTC`)
        if (entries.length === 0) return rt.output.out('(no checkpoints or recalls yet)')
        rt.output.out(table(['time (UTC)', 'what', 'id', 'detail'], entries.map(entry => [time(entry.time), entry.kind, entry.id, entry.detail])))
      })
    })

  root.command('search')
    .description('ranked full-text search (English, Chinese/Japanese/Korean, paths and identifiers)')
    .argument('<query...>', 'what to look for')
    .option('--session <session>', 'search this session and its fork parents')
    .option('--all', 'search every session in the store')
    .option('--since <time>', 'ISO time or relative like "2h ago"')
    .option('--until <time>', 'ISO time or relative')
    .addOption(new Option('--role <role>', 'only this speaker').choices(['user', 'assistant', 'tool', 'system']))
    .option('--tool <name>', 'only this tool\'s calls and outputs')
    .option('--limit <n>', 'hits to show', '10')
    .action(async (words: string[], options: { session?: string; all?: boolean; since?: string; until?: string; role?: string; tool?: string; limit: string }, command: Command) => {
      const rt = runtime(command)
      if ((options.session === undefined) === (options.all !== true)) throw new CliError('give --session <id> or --all', EXIT.usage)
      await withStore(rt, async store => {
        const sessions = await store.sessions()
        const sessionId = options.session !== undefined ? (await findSession(store, options.session)).sessionId : sessions[0]?.sessionId
        if (sessionId === undefined) return rt.output.out(rt.output.json ? '{"hits":[]}' : '(the store is empty)')
        const range = parseTimeRange(options.since, options.until, Date.now())
        const result = await store.search(words.join(' '), {
          sessionId, ...(options.all === true ? { allSessions: true } : {}), ...range, ...SEARCH_EXCLUDES,
          limit: Math.min(200, Math.max(1, int(options.limit, '--limit'))),
          ...(options.role === undefined ? {} : { roles: [options.role as ShadowRole] }),
          ...(options.tool === undefined ? {} : { toolName: options.tool }),
        })
        if (rt.output.json) return rt.output.out(JSON.stringify({ coverage: result.coverage, hits: result.hits.map(hit => ({ shadowId: hit.message.shadowId, sessionId: hit.message.sessionId, seq: hit.message.seq, time: hit.message.time, role: hit.message.role, tool: hit.message.toolName, checkpoint: hit.message.elidedBy, snippet: hit.snippet })) }))
        rt.output.out(`${result.hits.length} of ${result.coverage.matched}${result.coverage.matched > result.hits.length ? '+' : ''} matches · searched ${result.coverage.searched} messages`)
        for (const [index, hit] of result.hits.entries()) {
          rt.output.out(`${String(index + 1).padStart(2)}. ${hit.message.shadowId}  ${time(hit.message.time)}  ${speaker(hit.message)}${hit.message.elidedBy === null ? '' : `  [${hit.message.elidedBy}]`}`)
          rt.output.out(`    ${hit.snippet}`)
        }
      })
    })

  root.command('read')
    .description('print the exact originals: a shadow id (with neighbours), a checkpoint, or <session>:<from>-<to>')
    .argument('<pointer>', 'k7q2mz.41 | k7q2mz.c3 | <session>:<fromSeq>-<toSeq>')
    .option('--before <n>', 'with a shadow id: messages before it', '2')
    .option('--after <n>', 'with a shadow id: messages after it', '2')
    .action(async (pointer: string, options: { before: string; after: string }, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        let messages: ShadowMessage[]
        if (isCheckpointId(pointer) || (await store.checkpoint(pointer)) !== undefined) {
          const checkpoint = await store.checkpoint(pointer)
          if (checkpoint === undefined) throw new CliError(`no checkpoint ${pointer}`, EXIT.notFound)
          const segments = await store.lineage(checkpoint.sessionId)
          messages = []
          for (const seq of checkpoint.shadowedSeqs) {
            const row = await store.lookupInLineage(segments, seq)
            if (row !== undefined) messages.push(row)
          }
        } else if (isShadowId(pointer)) {
          const center = await store.message(pointer)
          if (center === undefined) throw new CliError(`no message ${pointer}`, EXIT.notFound)
          const before = int(options.before, '--before')
          const after = int(options.after, '--after')
          const earlier = before === 0 || center.seq === 0 ? [] : await store.read({ sessionId: center.sessionId }, { toSeq: center.seq - 1, limit: before, descending: true })
          const later = after === 0 ? [] : await store.read({ sessionId: center.sessionId }, { fromSeq: center.seq + 1, limit: after })
          messages = [...earlier.toReversed(), center, ...later]
        } else {
          const match = /^(.+):(\d+)-(\d+)$/.exec(pointer)
          if (match === null) throw new CliError(`not a pointer: ${pointer} (expected a shadow id, a checkpoint id, or <session>:<from>-<to>)`, EXIT.usage)
          const session = await findSession(store, match[1]!)
          messages = await store.read({ sessionId: session.sessionId }, { fromSeq: Number(match[2]), toSeq: Number(match[3]), limit: 100_000 })
        }
        if (rt.output.json) return rt.output.out(JSON.stringify(messages.map(message => ({ ...message, eventJson: undefined, event: JSON.parse(message.eventJson) as unknown }))))
        rt.output.out(messages.length === 0 ? '(nothing stored there)' : transcript(messages))
      })
    })

  root.command('export')
    .description('export a session\'s visible history (Markdown transcript or JSON lines of the original events)')
    .argument('<session>', 'session id, unique prefix, or tag')
    .addOption(new Option('--format <format>', 'md or jsonl').choices(['md', 'jsonl']).default('md'))
    .option('--output <file>', 'write to a file instead of stdout')
    .action(async (reference: string, options: { format: 'md' | 'jsonl'; output?: string }, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        const session = await findSession(store, reference)
        const text = await exportSession(store, session, options.format, (done, total) => rt.output.progress('export', done, total))
        const output = pathOption(options.output, '--output')
        if (output === undefined) invocation.io.stdout(text)
        else {
          try {
            writeFileSync(output, text, { mode: 0o600 })
          } catch (error) {
            throw new CliError(`cannot write ${output}: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
          }
          rt.output.err(`wrote ${output}`)
        }
      })
    })

  root.command('verify')
    .description('compare the store with the dsh log: lost, mismatched and stale rows (exit code says which)')
    .argument('[session]', 'session id, unique prefix, or tag (default: every session in the dsh home)')
    .action(async (reference: string | undefined, _options: unknown, command: Command) => {
      const rt = runtime(command)
      const verdicts = await withStore(rt, store => withLogs(rt, async logs => {
        const problems = await store.integrityCheck()
        if (problems.length > 0) throw new CliError(`the shadow store is damaged: ${problems.slice(0, 3).join('; ')} (run \`dsh-shadow repair --all --fresh\`)`, EXIT.unavailable)
        const ids = reference !== undefined ? [(await findSession(store, reference)).sessionId] : (await logs.list()).map(meta => meta.id)
        const out: SessionVerdict[] = []
        for (const [index, sessionId] of ids.entries()) {
          out.push(await verifySession(store, logs, sessionId))
          rt.output.progress('verify', index + 1, ids.length)
        }
        return out
      }))
      const lost = verdicts.some(verdict => verdict.lost.length > 0)
      const mismatched = verdicts.some(verdict => verdict.mismatched.length > 0)
      const extra = verdicts.some(verdict => verdict.extra.length > 0 || verdict.duplicated > 0)
      if (rt.output.json) rt.output.out(JSON.stringify({ clean: !lost && !mismatched && !extra, sessions: verdicts }))
      else {
        rt.output.out(table(['session', 'log msgs', 'store rows', 'lost', 'mismatched', 'stale', 'duplicated', 'verdict'], verdicts.map(verdict => [
          verdict.sessionId, verdict.logMessages, verdict.storeRows, verdict.lost.length, verdict.mismatched.length, verdict.extra.length, verdict.duplicated,
          verdict.error ?? (verdict.lost.length + verdict.mismatched.length + verdict.extra.length + verdict.duplicated === 0 ? 'clean' : 'DIFFERS'),
        ])))
        rt.output.out(!lost && !mismatched && !extra ? 'verify: clean' : 'verify: the store differs from the dsh log (run `dsh-shadow repair <session>`)')
      }
      const code = (lost ? 1 : 0) | (mismatched ? 2 : 0) | (extra ? 4 : 0)
      if (code !== 0) invocation.exitCode = EXIT.verify + code
    })

  root.command('repair')
    .description('rebuild a session\'s rows and checkpoints from the dsh log (the log is the authority)')
    .argument('[session]', 'session id, unique prefix, or tag')
    .option('--all', 'every session of the dsh home')
    .option('--fresh', 'set a damaged store file aside first and rebuild into a new one')
    .action(async (reference: string | undefined, options: { all?: boolean; fresh?: boolean }, command: Command) => {
      const rt = runtime(command)
      if ((reference === undefined) === (options.all !== true)) throw new CliError('give a session or --all', EXIT.usage)
      // Resolve what to rebuild before --fresh moves anything: a typo must not leave an empty store behind.
      const ids = await withLogs(rt, async logs => options.all === true ? (await logs.list()).map(meta => meta.id as string) : [await findLogSession(logs, reference!)])
      if (options.fresh === true && isPostgresLocation(rt.storePath)) throw new CliError('--fresh sets a store file aside; for a PostgreSQL store, name a new ?schema= in --store instead', EXIT.usage)
      let redact: RedactionOptions | false | undefined
      if (options.fresh === true && existsSync(rt.storePath)) {
        // only a store file is set aside: renaming a directory named by mistake would move whatever it holds
        if (!statSync(rt.storePath).isFile()) throw new CliError(`${rt.storePath} is not a store file`, EXIT.usage)
        // the new store keeps the old one's redaction policy
        const kept = await policyToKeep(rt.storePath)
        redact = kept.policy
        if (kept.guessed) rt.output.err('the old store\'s redaction policy is unreadable: the new store redacts with the built-in detectors')
        const aside = `${rt.storePath}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`
        for (const suffix of ['', '-wal', '-shm']) if (existsSync(rt.storePath + suffix)) renameSync(rt.storePath + suffix, aside + suffix)
        rt.output.err(`set the old store aside as ${aside}`)
      }
      const reports = await withStore(rt, store => withLogs(rt, async logs => {
        const out = []
        for (const [index, id] of ids.entries()) {
          out.push(await repairSession(store, logs, id))
          rt.output.progress('repair', index + 1, ids.length)
        }
        return out
      }), { readOnly: false, create: true, ...(redact === undefined ? {} : { redact }) })
      if (rt.output.json) return rt.output.out(JSON.stringify(reports))
      rt.output.out(table(['session', 'written', 'unchanged', 'replaced', 'removed', 'checkpoints'], reports.map(report => [report.sessionId, report.written, report.unchanged, report.replaced, report.removed, report.checkpoints])))
    })

  root.command('reindex')
    .description('rebuild the search indexes from the stored text')
    .action(async (_options: unknown, command: Command) => {
      const rt = runtime(command)
      const rows = await withStore(rt, store => store.reindex((done, total) => rt.output.progress('reindex', done, total)), { readOnly: false })
      rt.output.out(rt.output.json ? JSON.stringify({ reindexed: rows }) : `reindexed ${rows} messages`)
    })

  root.command('gc')
    .description('retention: drop stored originals of the oldest checkpoints until the budgets hold (never the live surface)')
    .option('--session-budget <size>', 'bytes one session may keep, e.g. 50MB')
    .option('--workspace-budget <size>', 'bytes all sessions of one workspace may keep, e.g. 1GB')
    .option('--max-age <duration>', 'drop originals of checkpoints older than this, e.g. 30d')
    .option('--dry-run', 'show what would be dropped, drop nothing')
    .option('--vacuum', 'afterwards give the freed space back to the file system (rewrites the file)')
    .action(async (options: { sessionBudget?: string; workspaceBudget?: string; maxAge?: string; dryRun?: boolean; vacuum?: boolean }, command: Command) => {
      const rt = runtime(command)
      const policy = {
        ...(options.sessionBudget === undefined ? {} : { sessionBytes: parseSize(options.sessionBudget, '--session-budget') }),
        ...(options.workspaceBudget === undefined ? {} : { workspaceBytes: parseSize(options.workspaceBudget, '--workspace-budget') }),
        ...(options.maxAge === undefined ? {} : { maxAgeMs: parseDuration(options.maxAge, '--max-age') }),
        dryRun: options.dryRun === true,
      }
      if (Object.keys(policy).length === 1) throw new CliError('gc needs --session-budget, --workspace-budget or --max-age', EXIT.usage)
      await withStore(rt, async store => {
        const report = await store.gc(policy)
        if (options.vacuum === true && !report.dryRun && report.rows > 0) await store.vacuum()
        if (rt.output.json) return rt.output.out(JSON.stringify(report))
        const verb = report.dryRun ? 'would drop' : 'dropped'
        rt.output.out(`${verb} ${report.rows} originals (${(report.bytes / 1024 / 1024).toFixed(2)} MiB) of ${report.expired.length} checkpoints`)
        if (report.expired.length > 0) {
          rt.output.out(table(['checkpoint', 'session', 'messages', 'bytes', 'why'], report.expired.map(entry => [entry.checkpointId, entry.sessionId, entry.rows, entry.bytes, `${entry.reason === 'age' ? 'older than --max-age' : `over the ${entry.reason} budget`}`])))
        }
        for (const over of report.overBudget) rt.output.out(`still over budget: ${over.scope} ${over.id} keeps ${over.bytes} bytes on its live surface (budget ${over.budget}); nothing older is left to drop`)
      }, { readOnly: policy.dryRun })
    })

  root.command('stats')
    .description('what the store holds')
    .action(async (_options: unknown, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        const stats = await store.stats()
        if (rt.output.json) return rt.output.out(JSON.stringify({ ...stats, home: rt.home }))
        rt.output.out(table(['', ''], [
          ['dsh home', rt.home], ['store', stats.path], ['schema', `v${stats.schemaVersion} (analyzer v${stats.analyzerVersion})`],
          ['sessions', stats.sessions], ['messages', stats.messages], ['checkpoints', stats.checkpoints], ['recalls', stats.recalls],
          ['size', `${(stats.bytes / 1024 / 1024).toFixed(2)} MiB (text ${(stats.textBytes / 1024 / 1024).toFixed(2)} MiB)`],
          ['expired by retention', stats.expired],
        ]))
      })
    })

  return root
}

/**
 * An error message as one terminal line: messages echo the input back, and input may hold newlines,
 * escape sequences or megabytes. Control characters are escaped, the length capped.
 */
function oneLine(message: string): string {
  let flat = ''
  for (const char of message.slice(0, 2_000)) {
    const code = char.charCodeAt(0)
    // C0/C1 controls and the Unicode line separators would break the line or drive the terminal
    flat += code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029 ? `\\u${code.toString(16).padStart(4, '0')}` : char
  }
  return flat.length > 1_000 || message.length > 2_000 ? `${flat.slice(0, 999)}…` : flat
}

/**
 * Run the CLI once, in this process: output goes to `io`, nothing touches process.exitCode.
 * Returns the exit code; errors are printed as one line.
 */
export async function runCli(argv: readonly string[], io: CliIo = PROCESS_IO): Promise<number> {
  const invocation: Invocation = { io, exitCode: EXIT.ok }
  try {
    await build(invocation).parseAsync([...argv], { from: 'user' })
    return invocation.exitCode
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage
    if (error instanceof CliError) {
      io.stderr(`dsh-shadow: ${oneLine(error.message)}\n`)
      return error.exitCode
    }
    if (isShadowStoreError(error)) {
      io.stderr(`dsh-shadow: ${oneLine(error.message)}\n`)
      return error.code === 'INVALID_INPUT' ? EXIT.usage : error.code === 'NOT_FOUND' ? EXIT.notFound : EXIT.unavailable
    }
    io.stderr(`dsh-shadow: ${oneLine(error instanceof Error ? error.message : String(error))}\n`)
    return EXIT.failure
  }
}

/** The binary's entry: the CLI on the process streams. */
export function main(argv: readonly string[]): Promise<number> {
  return runCli(argv, PROCESS_IO)
}
