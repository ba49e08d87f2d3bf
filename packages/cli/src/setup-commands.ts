/** The commands that put Shadow Context into dsh and take it out: install, doctor, uninstall, try, forget. */
import { createInterface } from 'node:readline/promises'
import { Command, Option } from 'commander'
import { isShadowStoreError, type ShadowStore } from '@dsh-shadow/store'
import { CliError, EXIT, safe } from './format.ts'
import { commandLine, sameStoreFlags } from './follow-up.ts'
import { PROFILES, type ProfileName } from './profile.ts'
import { doctor, install, uninstall, type SetupContext } from './setup.ts'
import { tryOffline } from './try.ts'

export interface SetupHooks {
  /** Home, store, output and environment of this command (its `--dsh-home` wins over the global `--home`). */
  context(command: Command): SetupContext
  /** Run another dsh-shadow command line in this invocation (try shows the store with it). */
  show(argv: readonly string[]): Promise<void>
  /** Open the store for writing, find a session by reference, run. */
  withSession<T>(command: Command, reference: string, run: (store: ShadowStore, sessionId: string) => Promise<T>): Promise<T>
  /** Whether a person can answer a question on this terminal. */
  readonly interactive: boolean
  /** Settle the exit code without an error line (doctor found problems and listed them). */
  exit(code: number): void
}

const profileOption = (): Option => new Option('--profile <profile>', 'dsh profile').choices([...PROFILES])
const homeOption = (): Option => new Option('--dsh-home <dir>', 'dsh home (default $DSH_HOME, then ~/.dsh; same as --home)')

export function registerSetupCommands(root: Command, hooks: SetupHooks): void {
  root.command('install')
    .description('put Shadow Context into a dsh profile: checks Node, pnpm and the launcher, adds the package, merges the profile patch (with the rc.8 HMR workaround), creates the preset folder; safe to run again')
    .addOption(profileOption().makeOptionMandatory())
    .addOption(homeOption())
    .option('--package <tarball>', 'install this dsh-shadow-context tarball instead of the package this command runs from')
    .action((options: { profile: ProfileName; package?: string }, command: Command) => {
      install(hooks.context(command), options.profile, options.package === undefined ? {} : { package: options.package })
    })

  root.command('doctor')
    .description('check an installed profile: one line per check, ok or what is wrong and the fix')
    .addOption(profileOption())
    .addOption(homeOption())
    .action(async (options: { profile?: ProfileName }, command: Command) => {
      const checks = await doctor(hooks.context(command), options.profile === undefined ? [] : [options.profile])
      if (checks.some(check => !check.ok)) hooks.exit(EXIT.failure)
    })

  root.command('uninstall')
    .description('revert what install did (compaction-basic comes back); keeps the shadow store unless --delete-store')
    .addOption(profileOption())
    .addOption(homeOption())
    .option('--delete-store', 'also delete the shadow store (every session\'s originals)')
    .option('--keep-store', 'keep the shadow store without asking')
    .option('--remove-hmr-fix', 'also remove the rc.8 HMR workaround (dsh 0.1.0-rc.8 does not boot without it)')
    .action(async (options: { profile?: ProfileName; deleteStore?: boolean; keepStore?: boolean; removeHmrFix?: boolean }, command: Command) => {
      if (options.deleteStore === true && options.keepStore === true) throw new CliError('give --delete-store or --keep-store, not both', EXIT.usage)
      const ctx = hooks.context(command)
      let deleteStore = options.deleteStore === true
      if (options.deleteStore !== true && options.keepStore !== true && hooks.interactive && !ctx.output.json) {
        const prompt = createInterface({ input: process.stdin, output: process.stderr })
        deleteStore = /^y(es)?$/i.test((await prompt.question(`Delete the shadow store ${ctx.storePath} too (every session's originals)? [y/N] `)).trim())
        prompt.close()
      }
      uninstall(ctx, options.profile === undefined ? [] : [options.profile], { deleteStore, removeHmrFix: options.removeHmrFix === true })
    })

  root.command('try')
    .description('try Shadow Context offline: one headless dsh task on a scripted model (no key, no network), then what the store holds')
    .addOption(homeOption())
    .action(async (_options: unknown, command: Command) => {
      const ctx = hooks.context(command)
      const sessionId = await tryOffline(ctx)
      // the store try read the session from: a --store (another file, a postgres:// URL) too
      const home = ['--home', ctx.home, '--store', ctx.storePath]
      if (ctx.output.json) return hooks.show([...home, '--json', 'timeline', sessionId])
      // the lines printed for the user to copy name the same home and store (without them a copy read the default store)
      const same = sameStoreFlags(ctx, '--home')
      const timeline = ['timeline', sessionId]
      ctx.output.out(`\n$ ${commandLine([...same, ...timeline])}`)
      await hooks.show([...home, ...timeline])
      const search = ['search', '--session', sessionId, 'staging', 'database', 'port']
      ctx.output.out(`\n$ ${commandLine([...same, ...search])}`)
      await hooks.show([...home, ...search])
      ctx.output.out(`\nThis trial session stays in the store; remove it with: ${commandLine([...same, 'forget', sessionId])}`)
    })

  root.command('forget')
    .description('delete one session from the shadow store: its rows, index entries, checkpoints and recalls (the dsh log is not touched)')
    .argument('<session>', 'session id, unique prefix, or tag')
    .option('--force', 'also forget the sessions forked from it (they read its rows by reference)')
    .option('--vacuum', 'rewrite the store file so the deleted text is gone from the disk too')
    .action(async (reference: string, options: { force?: boolean; vacuum?: boolean }, command: Command) => {
      const ctx = hooks.context(command)
      const report = await hooks.withSession(command, reference, async (store, sessionId) => {
        try {
          return await store.forget(sessionId, { force: options.force === true, vacuum: options.vacuum === true })
        } catch (error) {
          if (isShadowStoreError(error, 'CONFLICT')) throw new CliError(`${error.message.replace(/, or force to/, ', or pass --force to')}`, EXIT.usage)
          throw error
        }
      })
      if (ctx.output.json) return ctx.output.out(JSON.stringify(report))
      ctx.output.out(`forgot ${safe(report.forgotten.join(', '))}: ${report.messages} messages, ${report.checkpoints} checkpoints, ${report.recalls} recalls${report.vacuumed ? '; the file was vacuumed' : ' (run again with --vacuum to also scrub the freed pages from disk)'}`)
      ctx.output.out('The dsh session log still holds the session; resuming it in dsh captures it again.')
    })
}
