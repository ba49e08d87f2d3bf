/**
 * The browser side of the host read endpoint: `shadowContext/search` and `shadowContext/read`
 * through the connection's `/api` channel. A gateway or transport refusal (unknown session, the row
 * not mounted, the server gone) comes back as the same error shape as a recall error, so the views
 * have one failure path.
 */
import type { ReaderScope, ReadReply, ReaderResult, SearchReply } from '../src/web/reader.ts'
import type { ClientConnection } from './types.ts'

export type ApiResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } }

export interface SearchRequest {
  readonly query: string
  /** `workspace`: every session of this one's working directory. Default the session's own history. */
  readonly scope?: ReaderScope
  readonly checkpoint?: string
  readonly limit?: number
}

export type ReadRequest =
  | { readonly checkpoint: string; readonly start?: number; readonly limit?: number; readonly scope?: ReaderScope }
  | { readonly id: string; readonly before?: number; readonly after?: number; readonly scope?: ReaderScope }

export interface ShadowApi {
  search(sessionId: string, request: SearchRequest): Promise<ApiResult<SearchReply>>
  read(sessionId: string, request: ReadRequest): Promise<ApiResult<ReadReply>>
}

export const NAMESPACE = 'shadowContext'

function isReaderResult(value: unknown): value is ReaderResult<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { ok?: unknown }).ok === 'boolean'
}

export function createApi(connection: ClientConnection): ShadowApi {
  const call = async <T>(method: 'search' | 'read', sessionId: string, request: object): Promise<ApiResult<T>> => {
    try {
      const result = await connection.rpc.call('/api', `${NAMESPACE}/${method}`, { args: { sessionId, request } })
      if (!result.ok) return { ok: false, error: { code: result.error.code, message: result.error.message } }
      if (!isReaderResult(result.value)) return { ok: false, error: { code: 'UNAVAILABLE', message: `${NAMESPACE}/${method} answered in an unknown shape` } }
      return result.value as ApiResult<T>
    } catch (error) {
      return { ok: false, error: { code: 'UNAVAILABLE', message: error instanceof Error ? error.message : String(error) } }
    }
  }
  return {
    search: (sessionId, request) => call<SearchReply>('search', sessionId, request),
    read: (sessionId, request) => call<ReadReply>('read', sessionId, request),
  }
}
