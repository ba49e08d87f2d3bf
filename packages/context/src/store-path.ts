/** Where the shadow store lives: inside the dsh home unless the user names an absolute path. */
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { isPostgresLocation, locationProblem } from '@dsh-shadow/store'

export const DEFAULT_STORE_FILE = join('shadow-context', 'shadow.db')

export class StorePathError extends Error {
  override readonly name = 'StorePathError'
}

/**
 * Resolve the store file. A relative `path` is taken inside the dsh home and may not climb out of
 * it ("../x" is refused); only an explicit absolute path may point elsewhere. An empty path means
 * the default. The check is lexical: symlinks inside the home are followed, since config cannot
 * create them and a link there (a store on another disk, a home that is a link) is its owner's choice.
 * A `postgres://` connection string names a PostgreSQL store and is returned as it is.
 */
export function resolveStorePath(path: string | undefined, home?: string): string {
  // config may come from untyped JSON: refuse with our error, not a TypeError from a string method
  if (path !== undefined && typeof path !== 'string') throw new StorePathError(`store path must be a string, not ${typeof path}`)
  if (home !== undefined && typeof home !== 'string') throw new StorePathError(`dsh home must be a string, not ${typeof home}`)
  // an empty home resolves to the working directory: the store (every message) would land in the project
  if (home !== undefined && home.trim().length === 0) throw new StorePathError('dsh home must not be empty (leave it out for $DSH_HOME, then ~/.dsh)')
  const dshHome = resolve(resolveDshHome(home))
  if (dshHome.includes('\u0000')) throw new StorePathError('dsh home must not contain NUL')
  if (path === undefined || path.length === 0) return join(dshHome, DEFAULT_STORE_FILE)
  if (path.includes('\u0000')) throw new StorePathError('store path must not contain NUL')
  // a mistyped connection string is not a file inside the home (and is not echoed: it may hold a password)
  const problem = locationProblem(path)
  if (problem !== undefined) throw new StorePathError(`store path ${problem}`)
  if (isPostgresLocation(path)) return path
  if (isAbsolute(path)) return resolve(path)
  const target = resolve(dshHome, path)
  const inside = relative(dshHome, target)
  // `..` only as a whole segment: "..shadow.db" is a name inside the home
  if (inside.length === 0 || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new StorePathError(`store path ${JSON.stringify(path)} escapes the dsh home ${dshHome}; give an absolute path to store it elsewhere`)
  }
  return target
}
