/**
 * ShadowCapture's configuration (schemastery, defaults documented in the package README), its
 * retention budget, and what it reports (health, failures, the write-ahead check's answer).
 */
import z from '@deepseek-ai/schemastery'
import { refuseUnknownKeys } from '../config-keys.ts'
import type { RetentionPolicy } from '@dsh-shadow/store'

export interface ShadowCaptureConfig {
  /** dsh home; default `$DSH_HOME`, then `~/.dsh`. */
  home?: string
  /** Store file. Relative paths stay inside the dsh home. Default `<home>/shadow-context/shadow.db`. */
  path?: string
  /** Host the store in a worker thread (keeps SQLite off the turn's event loop). Default true. */
  worker?: boolean
  /** `normal` survives a process crash; `full` also survives power loss. Default `normal`. */
  synchronous?: 'normal' | 'full'
  /** Failed batches kept for retry (beyond that, reconciliation from the log repairs). Default 10 000 events. */
  retryLimit?: number
  /**
   * Characters of event JSON kept for retry (every retry re-sends them, so big tool outputs must not
   * pile up while the store refuses writes); past it, events are left to the log's repair. Default 16 000 000.
   */
  retryChars?: number
  /**
   * Longest a captured event waits before it is written, ms. Batching keeps the store's cost off
   * the turn; the write-ahead check before compaction flushes at once. Default 200.
   */
  batchDelayMs?: number
  /** Ceiling on the store file, bytes; past it writes fail and Shadow Context fails closed. Default: none. */
  maxBytes?: number
  /** How long a write waits for another process's lock on the store, ms. Default 5000. */
  busyTimeoutMs?: number
  /** Redact secrets (API keys, tokens, private keys, password assignments) before storing. Default false. */
  redact?: boolean
  /** Extra redaction patterns (regular expression sources or `/…/flags`); any pattern turns redaction on. */
  redactPatterns?: string[]
  /** Retention budget, applied when the store opens and then every `intervalMinutes`. Default: keep everything. */
  retention?: ShadowRetentionConfig
}

export interface ShadowRetentionConfig {
  /** Stored bytes one session may keep. */
  sessionBytes?: number
  /** Stored bytes all sessions of one workspace may keep. */
  workspaceBytes?: number
  /** Drop originals of checkpoints older than this many days. */
  maxAgeDays?: number
  /** How often the budget is applied while dsh runs. Default 60. */
  intervalMinutes?: number
}

/**
 * Node's longest timer: a longer delay is silently set to 1 ms (a retention interval of a month ran
 * the pass every millisecond), so config past it is refused.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1
const MAX_TIMER_MINUTES = Math.floor(MAX_TIMER_MS / 60_000)

export const ShadowRetentionConfigSchema: z<ShadowRetentionConfig> = z.object({
  sessionBytes: z.natural().description('stored bytes one session may keep'),
  workspaceBytes: z.natural().description('stored bytes one workspace may keep'),
  maxAgeDays: z.natural().description('drop originals of checkpoints older than this many days'),
  intervalMinutes: z.natural().min(1).max(MAX_TIMER_MINUTES).default(60).description('how often the budget is applied (at most 35791: 24.8 days)'),
})

export const ShadowCaptureConfigSchema: z<ShadowCaptureConfig> = z.object({
  home: z.string().description('dsh home; default $DSH_HOME, then ~/.dsh'),
  path: z.string().description('store file (relative paths stay inside the dsh home), or a postgres:// connection string'),
  worker: z.boolean().default(true).description('host the store in a worker thread'),
  synchronous: z.union(['normal', 'full']).default('normal').description('SQLite durability level'),
  retryLimit: z.natural().default(10_000).description('events kept for retry after a failed write'),
  retryChars: z.natural().default(16_000_000).description('characters of event JSON kept for retry after a failed write'),
  batchDelayMs: z.natural().max(MAX_TIMER_MS).default(200).description('longest wait before captured events are written, ms'),
  maxBytes: z.natural().description('ceiling on the store file, bytes (default: none)'),
  busyTimeoutMs: z.natural().default(5_000).description("wait for another process's lock on the store, ms"),
  redact: z.boolean().default(false).description('redact secrets before they are stored'),
  redactPatterns: z.array(z.string()).default([]).description('extra redaction patterns (regular expressions)'),
  retention: ShadowRetentionConfigSchema.description('retention budget (default: keep everything)'),
})

/** Characters of event JSON kept for retry by default (see `retryChars`). */
export const RETRY_CHARS_DEFAULT = 16_000_000

/** The store policy for a retention config, or undefined when it keeps everything. */
export function retentionPolicy(config: ShadowRetentionConfig | undefined): RetentionPolicy | undefined {
  if (config === undefined) return undefined
  const policy: RetentionPolicy = {
    ...(config.sessionBytes === undefined ? {} : { sessionBytes: config.sessionBytes }),
    ...(config.workspaceBytes === undefined ? {} : { workspaceBytes: config.workspaceBytes }),
    ...(config.maxAgeDays === undefined ? {} : { maxAgeMs: config.maxAgeDays * 86_400_000 }),
  }
  return Object.keys(policy).length === 0 ? undefined : policy
}

export interface CaptureFailure {
  readonly time: number
  readonly code: string
  readonly message: string
}

export interface CaptureHealth {
  /** Events queued for the store since start. */
  captured: number
  /** Batches the store accepted. */
  batches: number
  /** Batches that failed (and were kept for retry). */
  failures: number
  /** Events waiting for a successful write. */
  pending: number
  /** What the store did with the rows it was sent (replaced/removed: rows of a lost lifetime). */
  readonly rows: { written: number; unchanged: number; replaced: number; removed: number }
  lastFailure: CaptureFailure | null
}

export interface ConfirmResult {
  readonly ok: boolean
  readonly missing: readonly number[]
  readonly mismatched: readonly number[]
  /** Rows that were absent and were written by this call. */
  readonly repaired: number
}

/**
 * The capture row's options checked as its constructor checks them (misspelt names refused, then
 * the schema): `dsh-shadow doctor` runs this on the composed config, which dsh does not build.
 */
export function checkCaptureConfig(config: ShadowCaptureConfig = {}): ShadowCaptureConfig {
  refuseUnknownKeys('ShadowCaptureConfig', config, ShadowCaptureConfigSchema)
  refuseUnknownKeys('ShadowCaptureConfig.retention', config.retention, ShadowRetentionConfigSchema)
  return ShadowCaptureConfigSchema(config)
}
