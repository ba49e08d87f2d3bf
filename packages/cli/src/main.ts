/**
 * dsh-shadow: inspect a Shadow Context store next to the dsh logs it shadows. Finds the dsh home
 * and the store the way dsh and the plugin do ($DSH_HOME, then ~/.dsh; <home>/shadow-context/
 * shadow.db), or takes them as options. Every command has `--json`.
 */
import { closeSync, existsSync, openSync, renameSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { Command, CommanderError, Option } from 'commander'
import { isCheckpointId, isPostgresLocation, isShadowId, isShadowStoreError, parseTimeRange, type RedactionOptions, type ShadowMessage, type ShadowRole } from '@dsh-shadow/store'
import { SEARCH_EXCLUDES } from 'dsh-shadow-context'
import { CliError, type CliIo, EXIT, fields, PROCESS_IO, safe, time } from './format.ts'
import { findLogSession, findSession, int, pathOption, runtimeOf, speaker, tableFor, transcript, withLogs, withStore, type Runtime } from './runtime.ts'
import { parseDuration, parseSize } from './units.ts'
import { exportSession, logIdsOnDisk, policyToKeep, repairSession, verifySession, type SessionVerdict } from './operations.ts'
import { registerSetupCommands } from './setup-commands.ts'
import { digestTokens, recalledSnippet, savingsLine, savingsOf } from './savings.ts'
import { cliVersion } from './profile.ts'

/** A session id of the store's longest (512 characters) and a seq range: no pointer is longer. */
const MAX_POINTER_CHARS = 512 + 64

/** One run of the CLI: where it writes, and the exit code a command settles on without failing (verify). */
interface Invocation {
  readonly io: CliIo
  exitCode: number
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
      // commander's "Did you mean …?" comes on a second line: one line, words joined
      outputError: (text, write) => write(`${oneLine(text.trim().replace(/\s*\n\s*/g, ' '))}\n`),
    })
    .description('Inspect, search, read, export and verify a Shadow Context store (dsh 0.1.0-rc.8).')
    .option('--home <dir>', 'dsh home (default $DSH_HOME, then ~/.dsh)')
    .option('--store <file>', 'shadow store file, or a postgres:// connection string (default <home>/shadow-context/shadow.db)')
    .option('--json', 'machine-readable output')
    .version(cliVersion(), '-V, --version', 'print the version')

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
        rt.output.out(tableFor(rt, ['session', 'tag', 'messages', 'checkpoints', 'first', 'last', 'fork of', 'workspace'],
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
        const savings = await savingsOf(store, checkpoints.filter(checkpoint => checkpoint.sessionId === session.sessionId), recalls)
        if (rt.output.json) return rt.output.out(JSON.stringify({ session, savings, checkpoints, recalls }))
        const entries = []
        for (const checkpoint of checkpoints) {
          const cost = await digestTokens(store, checkpoint)
          entries.push({
            time: checkpoint.createdAt, kind: checkpoint.trigger === 'index' ? 'index' : 'checkpoint', id: checkpoint.checkpointId,
            detail: `${checkpoint.expiredAt === null ? '' : `[originals expired ${time(checkpoint.expiredAt)}] `}${checkpoint.messageCount} msgs, ${checkpoint.shadowedTokens ?? '?'} tokens off the context → ${cost} tokens in their place · seqs ${checkpoint.firstSeq}–${checkpoint.lastSeq} · originals ${time(checkpoint.timeFrom)} → ${time(checkpoint.timeTo)} · ${checkpoint.engine}${checkpoint.trigger === null || checkpoint.trigger === undefined ? '' : `/${checkpoint.trigger}`}${checkpoint.sessionId === session.sessionId ? '' : ` (from ${checkpoint.sessionId})`}`,
          })
        }
        for (const recall of recalls) {
          entries.push({
            time: recall.time, kind: `recall:${recall.kind}`, id: String(recall.recallId),
            detail: `${recall.query === null || recall.query === undefined ? '' : `"${recall.query}" → `}brought back ${recall.shadowIds.length} msgs${recall.checkpointIds !== undefined && recall.checkpointIds.length > 0 ? ` from ${recall.checkpointIds.join(', ')}` : ''}; first ${await recalledSnippet(store, recall)}`,
          })
        }
        entries.sort((a, b) => a.time - b.time)
        rt.output.out(`${safe(session.sessionId)} (${session.tag}) · ${session.messageCount} messages · ${time(session.firstTime)} → ${time(session.lastTime)} UTC`)
        rt.output.out(savingsLine(savings))
        if (entries.length === 0) return rt.output.out('(no checkpoints or recalls yet)')
        rt.output.out(tableFor(rt, ['time (UTC)', 'what', 'id', 'detail'], entries.map(entry => [time(entry.time), entry.kind, entry.id, entry.detail])))
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
      if (options.session !== undefined && options.all === true) throw new CliError('give --session <id> or --all, not both', EXIT.usage)
      const limit = Number(options.limit)
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw new CliError('--limit must be an integer from 1 to 200', EXIT.usage)
      await withStore(rt, async store => {
        // neither: the newest session, said on stderr so a script sees which (only it is read: a
        // listing of every session cost 1 s of each search at 200k sessions)
        const sessionId = options.session !== undefined ? (await findSession(store, options.session)).sessionId : (await store.sessions(undefined, { limit: 1 }))[0]?.sessionId
        if (sessionId === undefined) return rt.output.out(rt.output.json ? '{"hits":[]}' : '(the store is empty)')
        if (options.session === undefined && options.all !== true && !rt.output.json) rt.output.err(`searching the newest session, ${safe(sessionId)} (--session <id> for another, --all for every one)`)
        const range = parseTimeRange(options.since, options.until, Date.now())
        // a session's search is answered from its resident index, as the model's recall tools are
        // (built here for this one run: a one-shot process has no idle time to build it behind)
        if (options.all !== true) await store.warm(sessionId)
        const result = await store.search(words.join(' '), {
          sessionId, ...(options.all === true ? { allSessions: true } : {}), ...range, ...SEARCH_EXCLUDES,
          limit,
          ...(options.role === undefined ? {} : { roles: [options.role as ShadowRole] }),
          ...(options.tool === undefined ? {} : { toolName: options.tool }),
        })
        if (rt.output.json) return rt.output.out(JSON.stringify({ coverage: result.coverage, hits: result.hits.map(hit => ({ shadowId: hit.message.shadowId, sessionId: hit.message.sessionId, seq: hit.message.seq, time: hit.message.time, role: hit.message.role, tool: hit.message.toolName, checkpoint: hit.message.elidedBy, snippet: hit.snippet })) }))
        rt.output.out(`${result.hits.length} of ${result.coverage.matched}${result.coverage.matched > result.hits.length ? '+' : ''} matches · searched ${result.coverage.searched} messages`)
        for (const [index, hit] of result.hits.entries()) {
          rt.output.out(`${String(index + 1).padStart(2)}. ${hit.message.shadowId}  ${time(hit.message.time)}  ${safe(speaker(hit.message))}${hit.message.elidedBy === null ? '' : `  [${hit.message.elidedBy}]`}`)
          rt.output.out(`    ${rt.output.highlight(hit.snippet)}`)
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
      // every pointer is tried as a checkpoint id first: a longer one was refused as a "checkpointId"
      if (pointer.length > MAX_POINTER_CHARS) throw new CliError(`the pointer is longer than ${MAX_POINTER_CHARS} characters (expected a shadow id, a checkpoint id, or <session>:<from>-<to>)`, EXIT.usage)
      await withStore(rt, async store => {
        let messages: ShadowMessage[]
        if (isCheckpointId(pointer) || (await store.checkpoint(pointer)) !== undefined) {
          const checkpoint = await store.checkpoint(pointer)
          if (checkpoint === undefined) throw new CliError(`no checkpoint ${pointer}`, EXIT.notFound)
          messages = await store.lookupAllInLineage(await store.lineage(checkpoint.sessionId), checkpoint.shadowedSeqs)
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
        // one message at a time: a range of large tool outputs may pass what one string can hold
        if (rt.output.json) {
          rt.output.out('[')
          messages.forEach((message, index) => rt.output.out(`${JSON.stringify({ ...message, eventJson: undefined, event: message.eventJson === '' ? null : JSON.parse(message.eventJson) as unknown })}${index < messages.length - 1 ? ',' : ''}`))
          return rt.output.out(']')
        }
        if (messages.length === 0) return rt.output.out('(nothing stored there)')
        for (const message of messages) rt.output.out(transcript([message]))
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
        const output = pathOption(options.output, '--output')
        const progress = (done: number, total: number): void => rt.output.progress('export', done, total)
        // written a message at a time: a session of gigabytes never becomes one string
        if (output === undefined) return exportSession(store, session, options.format, progress, invocation.io.stdout)
        let fd: number
        try {
          fd = openSync(output, 'w', 0o600)
        } catch (error) {
          throw new CliError(`cannot write ${output}: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
        }
        try {
          await exportSession(store, session, options.format, progress, text => {
            try {
              writeSync(fd, text)
            } catch (error) {
              throw new CliError(`cannot write ${output}: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
            }
          })
        } finally {
          closeSync(fd)
        }
        rt.output.err(`wrote ${output}`)
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
        // one unreadable log makes dsh's listing fail as a whole: then find the logs on disk and check each
        const logged = await logs.list().then(metas => metas.map(meta => meta.id as string), () => logIdsOnDisk(logs.root))
        // every session either side knows: one the store has without a log is reported, never skipped
        const ids = reference !== undefined ? [(await findSession(store, reference)).sessionId] : [...new Set([...logged, ...(await store.sessions()).map(session => session.sessionId)])]
        const out: SessionVerdict[] = []
        for (const [index, sessionId] of ids.entries()) {
          out.push(logged.includes(sessionId) ? await verifySession(store, logs, sessionId) : { sessionId, logMessages: 0, storeRows: (await store.session(sessionId))?.messageCount ?? 0, lost: [], mismatched: [], extra: [], duplicated: 0, error: `no dsh log in ${logs.root}` })
          rt.output.progress('verify', index + 1, ids.length)
        }
        return out
      }))
      const lost = verdicts.some(verdict => verdict.lost.length > 0)
      const mismatched = verdicts.some(verdict => verdict.mismatched.length > 0)
      const extra = verdicts.some(verdict => verdict.extra.length > 0 || verdict.duplicated > 0)
      const unchecked = verdicts.filter(verdict => verdict.error !== undefined)
      const clean = !lost && !mismatched && !extra && unchecked.length === 0
      if (rt.output.json) rt.output.out(JSON.stringify({ clean, unchecked: unchecked.length, sessions: verdicts }))
      else if (verdicts.length === 0) rt.output.out('(no sessions in the store or the dsh logs)\nverify: clean')
      else {
        rt.output.out(tableFor(rt, ['session', 'log msgs', 'store rows', 'lost', 'mismatched', 'stale', 'duplicated', 'verdict'], verdicts.map(verdict => [
          verdict.sessionId, verdict.logMessages, verdict.storeRows, verdict.lost.length, verdict.mismatched.length, verdict.extra.length, verdict.duplicated,
          verdict.error === undefined ? (verdict.lost.length + verdict.mismatched.length + verdict.extra.length + verdict.duplicated === 0 ? 'clean' : 'DIFFERS') : 'NOT CHECKED',
        ])))
        for (const verdict of unchecked) rt.output.out(`not checked: ${safe(verdict.sessionId)}: ${safe(verdict.error!)}`)
        if (lost || mismatched || extra) rt.output.out('verify: the store differs from the dsh log (run `dsh-shadow repair <session>`)')
        if (unchecked.length > 0) rt.output.out(`verify: ${unchecked.length} session(s) could not be checked, so the store is not known to be clean`)
        if (clean) rt.output.out('verify: clean')
      }
      const code = (lost ? 1 : 0) | (mismatched ? 2 : 0) | (extra ? 4 : 0)
      // a session that could not be checked outranks differences: the answer is incomplete
      if (unchecked.length > 0) {
        // like every failure, one line on stderr as well (the verdict above is the detail)
        rt.output.err(`dsh-shadow: verify could not check ${unchecked.length} session(s), e.g. ${safe(unchecked[0]!.sessionId)}: ${safe(unchecked[0]!.error!).slice(0, 300)}`)
        invocation.exitCode = EXIT.unavailable
      }
      else if (code !== 0) invocation.exitCode = EXIT.verify + code
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
      // a mistyped home has no logs: say so before anything (a store, a folder) is created
      if (!existsSync(join(rt.home, 'sessions'))) throw new CliError(`no dsh session logs in ${rt.home} (no ${join(rt.home, 'sessions')}; mistyped --home?)`, EXIT.notFound)
      const ids = await withLogs(rt, async logs => options.all === true ? (await logs.list()).map(meta => meta.id as string) : [await findLogSession(logs, reference!)])
      if (ids.length === 0) throw new CliError(`no dsh session logs in ${join(rt.home, 'sessions')} to repair from (mistyped --home?)`, EXIT.notFound)
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
        try {
          for (const suffix of ['', '-wal', '-shm']) if (existsSync(rt.storePath + suffix)) renameSync(rt.storePath + suffix, aside + suffix)
        } catch (error) {
          throw new CliError(`cannot set the store aside in ${rt.storePath}'s folder: ${error instanceof Error ? error.message : String(error)}`, EXIT.unavailable)
        }
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
      rt.output.out(tableFor(rt, ['session', 'written', 'unchanged', 'replaced', 'removed', 'checkpoints'], reports.map(report => [report.sessionId, report.written, report.unchanged, report.replaced, report.removed, report.checkpoints])))
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
          rt.output.out(tableFor(rt, ['checkpoint', 'session', 'messages', 'bytes', 'why'], report.expired.map(entry => [entry.checkpointId, entry.sessionId, entry.rows, entry.bytes, `${entry.reason === 'age' ? 'older than --max-age' : `over the ${entry.reason} budget`}`])))
        }
        for (const over of report.overBudget) rt.output.out(`still over budget: ${over.scope} ${safe(over.id)} keeps ${over.bytes} bytes on its live surface (budget ${over.budget}); nothing older is left to drop`)
      }, { readOnly: policy.dryRun })
    })

  root.command('stats')
    .description('what the store holds')
    .action(async (_options: unknown, command: Command) => {
      const rt = runtime(command)
      await withStore(rt, async store => {
        const stats = await store.stats()
        const checkpoints = []
        const recalls = []
        for (const session of await store.sessions()) {
          checkpoints.push(...await store.checkpoints(session.sessionId))
          recalls.push(...await store.recalls(session.sessionId))
        }
        const savings = await savingsOf(store, checkpoints, recalls)
        if (rt.output.json) return rt.output.out(JSON.stringify({ ...stats, home: rt.home, savings }))
        // label and value: a table's header line was printed empty above them
        const where = [['dsh home', rt.home], ['store', stats.path], ['schema', `v${stats.schemaVersion} (analyzer v${stats.analyzerVersion})`]] as const
        if (stats.sessions === 0 && stats.messages === 0) {
          rt.output.out(fields([...where, ['size', `${(stats.bytes / 1024 / 1024).toFixed(2)} MiB`]]))
          return rt.output.out('(no sessions yet: dsh writes them here when it runs a session with Shadow Context)')
        }
        rt.output.out(fields([
          ...where,
          ['sessions', stats.sessions], ['messages', stats.messages], ['checkpoints', stats.checkpoints], ['recalls', stats.recalls],
          ['size', `${(stats.bytes / 1024 / 1024).toFixed(2)} MiB (text ${(stats.textBytes / 1024 / 1024).toFixed(2)} MiB)`],
          ['expired by retention', stats.expired],
          ['kept off the context', `${savings.tokensOff.toLocaleString('en-US')} tokens of originals, by ${savings.checkpoints} checkpoints`],
          ['checkpoints cost', `${savings.checkpointTokens.toLocaleString('en-US')} tokens in their place`],
          ['recalls', `${savings.recalls}, bringing back ${savings.recalledMessages} original messages`],
        ]))
      })
    })

  registerSetupCommands(root, {
    context: command => ({ ...runtime(command), env: process.env }),
    show: async argv => {
      await build(invocation).parseAsync([...argv], { from: 'user' })
    },
    withSession: (command, reference, run) => withStore(runtime(command), async store => run(store, (await findSession(store, reference)).sessionId), { readOnly: false }),
    interactive: invocation.io === PROCESS_IO && process.stdin.isTTY === true,
    exit: code => {
      invocation.exitCode = code
    },
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
  // under --json a failure is a JSON document on stdout too (options end at `--`)
  const json = argv.slice(0, argv.includes('--') ? argv.indexOf('--') : argv.length).includes('--json')
  const fail = (message: string, exitCode: number, code?: string): number => {
    if (message.length > 0) io.stderr(`dsh-shadow: ${oneLine(message)}\n`)
    if (json) io.stdout(`${JSON.stringify({ error: { exitCode, ...(code === undefined ? {} : { code }), message: oneLine(message) } })}\n`)
    return exitCode
  }
  try {
    await build(invocation).parseAsync([...argv], { from: 'user' })
    return invocation.exitCode
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok
      // commander printed its line on stderr already
      if (json) io.stdout(`${JSON.stringify({ error: { exitCode: EXIT.usage, code: error.code, message: oneLine(error.message.replace(/\s*\n\s*/g, ' ')) } })}\n`)
      return EXIT.usage
    }
    if (error instanceof CliError) return fail(error.message, error.exitCode)
    if (isShadowStoreError(error)) return fail(error.message, error.code === 'INVALID_INPUT' ? EXIT.usage : error.code === 'NOT_FOUND' ? EXIT.notFound : EXIT.unavailable, error.code)
    return fail(error instanceof Error ? error.message : String(error), EXIT.failure)
  }
}

/** The binary's entry: the CLI on the process streams. */
export function main(argv: readonly string[]): Promise<number> {
  return runCli(argv, PROCESS_IO)
}
