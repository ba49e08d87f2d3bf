/**
 * ShadowContextReader (`ctx.shadowContextReader`, wire namespace `shadowContext`): the host read
 * endpoint behind the web client. The browser calls
 * `ctx.connection.rpc.call('/api', 'shadowContext/<method>', { args: { sessionId, request } })`;
 * dsh's API gateway finds the methods through the `typertRemote` binding and the `@Remote` markers
 * (its source-mode fallback) and resolves the `session` parameter from the wire field `sessionId`.
 *
 * That fallback only checks that arguments are JSON, so every method enforces its own rules: it
 * answers for the resolved session's own history (and its fork parents' below each fork point), or
 * with `scope: 'workspace'` for every session of that session's working directory (what the recall
 * tools' `scope: workspace` reads), through the same RecallResolver the model's tools use, with
 * the same typed errors and the store's own redaction policy applied to the query. It is never a
 * generic query: a request can only name what `shadow_search` / `shadow_read` accept, plus `scope`.
 */
import type { Context } from '@deepseek-ai/cordis'
import { Remote, TypertRemoteService } from '@deepseek-ai/dsh-typert-protocol'
import z from '@deepseek-ai/schemastery'
import { Redactor, type ShadowMessage, type ShadowStoreApi, ShadowStoreWorkerClient } from '@dsh-shadow/store'
import { RecallError } from '../recall/format.ts'
import { RecallResolver, type ReadArgs, type SearchArgs } from '../recall/recall.ts'
import { refuseUnknownKeys } from '../config-keys.ts'
import { RedactionRegistry } from '../redaction-registry.ts'
import { resolveStorePath } from '../store-path.ts'

export const READER_SERVICE = 'shadowContextReader'
export const READER_NAMESPACE = 'shadowContext'

export interface ShadowContextReaderConfig {
  /** dsh home; default `$DSH_HOME`, then `~/.dsh`. Must match the capture's. */
  home?: string
  /** Store file, as the capture names it. Default `<home>/shadow-context/shadow.db`. */
  path?: string
}

export const ShadowContextReaderConfigSchema: z<ShadowContextReaderConfig> = z.object({
  home: z.string().description('dsh home; default $DSH_HOME, then ~/.dsh'),
  path: z.string().description('store file, as the capture names it'),
})

export type ReaderErrorCode = RecallError['code']

/** What every method answers: a value, or the typed error the recall tools would have raised. */
export type ReaderResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: { readonly name: 'RecallError'; readonly code: ReaderErrorCode; readonly message: string } }

/** What the browser shows about any message: where it sits and who spoke. */
export interface MessageHeadView {
  readonly shadowId: string
  readonly seq: number
  readonly time: number
  readonly role: string
  readonly sourceKind: string
  readonly toolName: string | null
  readonly turn: number | null
  readonly elidedBy: string | null
}

/** One original message as the browser shows it: `text` is the stored text, unchanged. */
export interface OriginalView extends MessageHeadView {
  readonly sessionId: string
  readonly text: string
  /** When retention dropped the original (`text` is then empty), else null. */
  readonly expiredAt: number | null
}

/** What a request may read: the session's own history (default) or its whole workspace's. */
export type ReaderScope = 'session' | 'workspace'

export interface SearchHitView extends MessageHeadView {
  /** The session the hit belongs to (another one's under `scope: 'workspace'`). */
  readonly sessionId: string
  readonly snippet: string
  readonly matched: readonly string[]
}

export interface SearchReply {
  readonly query: string
  readonly scope: ReaderScope
  readonly matched: number
  readonly hits: readonly SearchHitView[]
}

export interface ReadReply {
  readonly title: string
  readonly total: number
  readonly start: number
  readonly messages: readonly OriginalView[]
}

/** Request fields each method accepts; anything else is refused before the store is touched. */
const SEARCH_FIELDS = new Set(['query', 'since', 'until', 'role', 'tool', 'checkpoint', 'limit', 'scope'])
const READ_FIELDS = new Set(['checkpoint', 'id', 'before', 'after', 'from_seq', 'to_seq', 'since', 'until', 'start', 'limit', 'scope'])

function scopeOf(value: unknown): ReaderScope {
  if (value === undefined || value === null || value === 'session') return 'session'
  if (value === 'workspace') return 'workspace'
  throw new RecallError('INVALID_INPUT', 'scope must be "session" or "workspace"')
}

/** The working directory dsh gave the session (what the recall tools' workspace scope reads). */
function cwdOf(session: unknown): string | undefined {
  const header = typeof session === 'object' && session !== null ? (session as { header?: { cwd?: unknown } }).header : undefined
  return typeof header?.cwd === 'string' && header.cwd.length > 0 ? header.cwd : undefined
}

function original(message: ShadowMessage): OriginalView {
  return {
    shadowId: message.shadowId, sessionId: message.sessionId, seq: message.seq, time: message.time, role: message.role,
    sourceKind: message.sourceKind, toolName: message.toolName, turn: message.turn, elidedBy: message.elidedBy, text: message.text,
    expiredAt: message.expiredAt,
  }
}

function fields(value: unknown, allowed: ReadonlySet<string>): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RecallError('INVALID_INPUT', 'request must be an object')
  const unknown = Object.keys(value).filter(key => !allowed.has(key))
  if (unknown.length > 0) throw new RecallError('INVALID_INPUT', `unknown request field${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 5).map(key => JSON.stringify(key.slice(0, 40))).join(', ')}`)
  return value as Record<string, unknown>
}

/** The gateway resolved `session`; a direct caller could pass anything, so check it is one. */
function sessionIdOf(session: unknown): string {
  const id = typeof session === 'object' && session !== null ? (session as { id?: unknown }).id : undefined
  if (typeof id !== 'string' || id.length === 0) throw new RecallError('FORBIDDEN', 'the Shadow Context reader answers only for a resolved dsh session')
  return id
}

function failure(error: unknown): ReaderResult<never> {
  const typed = error instanceof RecallError ? error : new RecallError('UNAVAILABLE', `shadow store: ${error instanceof Error ? error.message : String(error)}`)
  return { ok: false, error: { name: 'RecallError', code: typed.code, message: typed.message } }
}

/** Initializers the `@Remote` markers registered, run for each instance (what a decorated class does). */
const remoteInitializers: Array<(this: ShadowContextReader) => void> = []

export class ShadowContextReader extends TypertRemoteService {
  static readonly Config = ShadowContextReaderConfigSchema

  readonly path: string
  private store: Promise<ShadowStoreApi> | undefined
  /** The redactor of the store's policy, for the handle it was read from. */
  private redaction: { handle: Promise<ShadowStoreApi>; redactor: Promise<Redactor | undefined> } | undefined
  /** Takes the store's policy back out of the process's registry (the host projection applies it). */
  private unregister: (() => void) | undefined

  constructor(ctx: Context, config: ShadowContextReaderConfig = {}) {
    refuseUnknownKeys('ShadowContextReaderConfig', config, ShadowContextReaderConfigSchema)
    super(ctx, READER_SERVICE, { namespace: READER_NAMESPACE })
    for (const initialize of remoteInitializers) initialize.call(this)
    const resolved = ShadowContextReaderConfigSchema(config)
    this.path = resolveStorePath(resolved.path, resolved.home)
    ctx.effect(() => () => {
      this.unregister?.()
      this.unregister = undefined
      // a policy read still under way registers nothing once its handle is gone
      this.redaction = undefined
      const open = this.store
      this.store = undefined
      void open?.then(store => store.close(), () => undefined)
    }, 'shadow-context reader: store handle')
    this.policyRead = this.redactorOf(this.opened()).then(() => undefined, () => undefined)
  }

  /** A read-only handle on the store, opened as the reader starts and again on use after a failure (the capture may not have created it yet). */
  private opened(): Promise<ShadowStoreApi> {
    this.store ??= ShadowStoreWorkerClient.open(this.path, { readOnly: true }).catch((error: unknown) => {
      this.store = undefined // retry on the next call: the capture creates the file with the first session
      throw new RecallError('UNAVAILABLE', `the shadow store is unavailable: ${error instanceof Error ? error.message : String(error)}`)
    })
    return this.store
  }

  /**
   * The store's policy, read as the reader starts (not at its first request): the host projection
   * of a cold session opened before any request redacts with it (its capture runs in a preset).
   * Settles once read, or once the store turned out missing or unreadable (asked again on use).
   */
  readonly policyRead: Promise<void>

  private async redactorOf(handle: Promise<ShadowStoreApi>): Promise<Redactor | undefined> {
    const store = await handle
    // the policy the capture saved in the store: a secret in the query is searched as it is stored.
    // It is fixed while the store is open, so it is read and compiled once per handle.
    if (this.redaction?.handle !== handle) {
      const redaction = { handle, redactor: store.redactionPolicyOf().then(policy => (policy === null ? undefined : new Redactor(policy))) }
      // a failed read is asked again on the next request
      redaction.redactor.catch(() => { if (this.redaction === redaction) this.redaction = undefined })
      // the store's policy also redacts the host projection's free text (its capture runs in a preset)
      void redaction.redactor.then(redactor => {
        if (redactor === undefined || this.redaction !== redaction) return
        this.unregister?.()
        this.unregister = RedactionRegistry.add(redactor)
      }, () => undefined)
      this.redaction = redaction
    }
    return this.redaction.redactor
  }

  private async resolver(session: unknown, scope: ReaderScope): Promise<RecallResolver> {
    const sessionId = sessionIdOf(session)
    const handle = this.opened()
    const store = await handle
    const redactor = await this.redactorOf(handle)
    const redact = redactor === undefined ? {} : { redact: (text: string) => redactor.text(text) }
    if (scope === 'session') return new RecallResolver(store, { sessionId, ...redact })
    const workspace = cwdOf(session) ?? (await store.session(sessionId))?.workspace ?? undefined
    if (workspace === undefined) throw new RecallError('NOT_FOUND', 'this session has no working directory the shadow store knows')
    return new RecallResolver(store, { sessionId, workspace, ...redact })
  }

  /** Ranked search over the session's (or its workspace's) history, what `shadow_search` finds, as structured hits. */
  async search(session: unknown, request: unknown): Promise<ReaderResult<SearchReply>> {
    try {
      const { scope, ...args } = fields(request, SEARCH_FIELDS) as SearchArgs & { scope?: unknown }
      const within = scopeOf(scope)
      const resolver = await this.resolver(session, within)
      const outcome = await resolver.search(args)
      return {
        ok: true,
        value: {
          // echoed as the store keeps text: a secret typed into the search box is not sent back
          query: resolver.scope.redact === undefined ? String(args.query) : resolver.scope.redact(String(args.query)),
          scope: within,
          matched: outcome.matched,
          hits: outcome.hits.map(hit => ({
            shadowId: hit.message.shadowId, sessionId: hit.message.sessionId, seq: hit.message.seq, time: hit.message.time, role: hit.message.role,
            sourceKind: hit.message.sourceKind, toolName: hit.message.toolName, turn: hit.message.turn, elidedBy: hit.message.elidedBy,
            snippet: hit.snippet, matched: [...hit.matched],
          })),
        },
      }
    } catch (error) {
      return failure(error)
    }
  }

  /** One page of the exact originals a `shadow_read` selector covers (checkpoint, id, seqs or time window). */
  async read(session: unknown, request: unknown): Promise<ReaderResult<ReadReply>> {
    try {
      const { start, limit, scope, ...selector } = fields(request, READ_FIELDS)
      const page = await (await this.resolver(session, scopeOf(scope))).page(selector as ReadArgs, start, limit)
      return { ok: true, value: { title: page.title, total: page.total, start: page.start, messages: page.messages.map(original) } }
    } catch (error) {
      return failure(error)
    }
  }
}

// `@Remote` on `search` and `read`, applied by hand with a standard decorator context: the same
// call a decorated class makes, written out because the test runner's TypeScript transform cannot
// lower standard decorators. The gateway finds the endpoints from these markers.
for (const name of ['search', 'read'] as const) {
  const method: (this: ShadowContextReader, session: unknown, request: unknown) => Promise<unknown> = ShadowContextReader.prototype[name]
  Remote(method, {
    kind: 'method',
    name,
    static: false,
    private: false,
    access: { has: (target: ShadowContextReader) => name in target, get: (target: ShadowContextReader) => target[name] },
    metadata: {},
    addInitializer: initializer => {
      remoteInitializers.push(initializer)
    },
  } as ClassMethodDecoratorContext<ShadowContextReader, typeof method>)
}
