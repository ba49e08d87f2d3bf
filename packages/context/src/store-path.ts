/** Where the shadow store lives: inside the dsh home unless the user names an absolute path. */
import { isAbsolute, join, relative, resolve } from 'node:path'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'

export const DEFAULT_STORE_FILE = join('shadow-context', 'shadow.db')

export class StorePathError extends Error {
  override readonly name = 'StorePathError'
}

/**
 * Resolve the store file. A relative `path` is taken inside the dsh home and may not climb out of
 * it ("../x" is refused); only an explicit absolute path may point elsewhere.
 */
export function resolveStorePath(path: string | undefined, home?: string): string {
  const dshHome = resolve(resolveDshHome(home))
  if (path === undefined || path.length === 0) return join(dshHome, DEFAULT_STORE_FILE)
  if (path.includes('\u0000')) throw new StorePathError('store path must not contain NUL')
  if (isAbsolute(path)) return resolve(path)
  const target = resolve(dshHome, path)
  const inside = relative(dshHome, target)
  if (inside.length === 0 || inside.startsWith('..') || isAbsolute(inside)) {
    throw new StorePathError(`store path ${JSON.stringify(path)} escapes the dsh home ${dshHome}; give an absolute path to store it elsewhere`)
  }
  return target
}
