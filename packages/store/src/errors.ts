/** Typed failures of the shadow store. Every public entry point throws only these. */

export type ShadowStoreErrorCode =
  /** The caller passed something malformed (wrong type, bad id, inverted range, oversize query). */
  | 'INVALID_INPUT'
  /** A referenced session, message or checkpoint does not exist. */
  | 'NOT_FOUND'
  /** The caller may not read what it asked for (another session, outside its fork lineage). */
  | 'FORBIDDEN'
  /** A write would contradict what is stored (same session and seq, different content). */
  | 'CONFLICT'
  /** The database file cannot be opened, is corrupt, or is not a shadow store. */
  | 'CORRUPT'
  /** The database is read-only, locked, or an I/O error occurred. */
  | 'UNAVAILABLE'
  /** The store reached its size limit (`maxBytes`) or the disk is full. */
  | 'FULL'
  /** The database schema is newer than this code understands. */
  | 'SCHEMA_TOO_NEW'
  /** A read-only open of a store written by an older version: open it writable once to upgrade it. */
  | 'SCHEMA_TOO_OLD'
  /** The store was closed. */
  | 'CLOSED'

export class ShadowStoreError extends Error {
  override readonly name = 'ShadowStoreError'
  readonly code: ShadowStoreErrorCode

  constructor(code: ShadowStoreErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
  }
}

export function isShadowStoreError(error: unknown, code?: ShadowStoreErrorCode): error is ShadowStoreError {
  return error instanceof ShadowStoreError && (code === undefined || error.code === code)
}

export function invalid(message: string): ShadowStoreError {
  return new ShadowStoreError('INVALID_INPUT', message)
}

/** A session registered meanwhile by another writer under another tag, or its tag taken by another session: a retry resolves it. */
export function sessionConflict(store: string, session: { readonly sessionId: string; readonly tag: string }, storedTag: string | undefined): ShadowStoreError {
  return new ShadowStoreError('CONFLICT', storedTag === undefined
    ? `shadow store ${store}: tag ${session.tag} of session ${session.sessionId} was just taken by another session; retry the write`
    : `shadow store ${store}: session ${session.sessionId} was just registered by another writer under tag ${storedTag}, not ${session.tag}; retry the write`)
}
