/**
 * The dsh-shadow command lines other commands print for the user to run next: they carry this
 * invocation's home and store, so a copied line reads the same store, not the default one.
 */
import { resolve } from 'node:path'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { displayLocation } from '@dsh-shadow/store'
import { resolveStorePath } from 'dsh-shadow-context'

/** One shell word: as it is when nothing in it is special to a POSIX shell, else single-quoted. */
export function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`
}

/**
 * The options that name this home and store, left out when they are the defaults (a line
 * stays short for the common case). `homeFlag`: the setup commands take `--dsh-home`, the
 * store commands the global `--home`. A PostgreSQL password is masked (never printed).
 */
export function sameStoreFlags(where: { readonly home: string; readonly storePath: string }, homeFlag: '--home' | '--dsh-home'): string[] {
  // the home a line without the option finds, as runtime.ts resolves it ($DSH_HOME, then ~/.dsh)
  const defaultHome = resolve(resolveDshHome())
  const flags: string[] = []
  if (resolve(where.home) !== defaultHome) flags.push(homeFlag, where.home)
  if (where.storePath !== resolveStorePath(undefined, where.home)) flags.push('--store', displayLocation(where.storePath))
  return flags
}

/** `dsh-shadow <words…>`, each word quoted for the shell where it needs it. */
export function commandLine(words: readonly string[]): string {
  return ['dsh-shadow', ...words].map(shellWord).join(' ')
}
