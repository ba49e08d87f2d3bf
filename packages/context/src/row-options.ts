/**
 * Our loader rows' options, checked as each row's constructor checks them. dsh's `--dump-config`
 * composes the rows without building them, so a misspelt option (`retention.maxAge`) passed it and
 * failed only when a session started; `dsh-shadow doctor` checks the composed config with this.
 */
import { checkCaptureConfig, type ShadowCaptureConfig } from './capture/config.ts'
import { resolveEngineConfig, type ShadowEngineConfig } from './engine/config.ts'
import { checkRecallConfig, type ShadowRecallConfig } from './recall/plugin.ts'

const CHECKS: Readonly<Record<string, (config: never) => unknown>> = {
  'dsh-shadow-context/rows/capture': (config: ShadowCaptureConfig) => checkCaptureConfig(config),
  'dsh-shadow-context/rows/engine': (config: ShadowEngineConfig) => resolveEngineConfig(config),
  'dsh-shadow-context/rows/recall': (config: ShadowRecallConfig) => checkRecallConfig(config),
}

/** The loader row names whose options `rowOptionsProblem` checks. */
export const CHECKED_ROWS: readonly string[] = Object.keys(CHECKS)

/** What the row's constructor would refuse in `config` (undefined: nothing, or not a row checked here). */
export function rowOptionsProblem(name: string, config: unknown): string | undefined {
  const check = Object.hasOwn(CHECKS, name) ? CHECKS[name] : undefined
  if (check === undefined) return undefined
  try {
    check((config ?? {}) as never)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
