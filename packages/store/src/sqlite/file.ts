/** The database file on disk: permissions before SQLite creates it, and its identity while open. */
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { ShadowStoreError } from '../errors.ts'

/** Device and inode of a file, or undefined when it does not exist. */
export function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path)
    return `${stat.dev}:${stat.ino}`
  } catch {
    return undefined
  }
}

/** Create the folder (0700) and file (0600) before SQLite does, so the WAL and SHM inherit 0600. */
export function prepareFile(path: string, readOnly: boolean): void {
  if (readOnly) {
    if (!existsSync(path)) throw new ShadowStoreError('NOT_FOUND', `shadow store ${path} does not exist`)
    return
  }
  const folder = dirname(path)
  if (!existsSync(folder)) mkdirSync(folder, { recursive: true, mode: 0o700 })
  try {
    if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600))
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
  } catch (error) {
    throw new ShadowStoreError('UNAVAILABLE', `cannot create shadow store ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
  // SQLite would quietly open a read-only file read-only and fail every later write; say it now,
  // so the caller keeps retrying the open and picks the file up once it is writable again.
  for (const target of [path, folder]) {
    try {
      accessSync(target, constants.W_OK)
    } catch (error) {
      throw new ShadowStoreError('UNAVAILABLE', `shadow store ${path} is read-only (${target === path ? 'file' : 'folder'}: ${error instanceof Error ? error.message : String(error)})`, { cause: error })
    }
  }
}
