/**
 * Package-owned invariant companion for `dsh-shadow-context`, mounted beside dsh's own companions
 * (`dsh-shadow-context/invariant`). The checks live in engine/invariants.ts; this is the wiring.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { InvariantInstaller } from '@deepseek-ai/dsh-invariants'
import type { Session } from '@deepseek-ai/dsh-session'
import type { ShadowCapture } from './capture/service.ts'
import { ShadowInvariantChecker } from './engine/invariants.ts'

const PACKAGE_NAME = 'dsh-shadow-context'

/** Cordis companion plugin name. */
export const name = 'shadow-context-invariant'
/** Service required before the companion can reserve package ownership. */
export const inject = ['invariants']

/** The checkers of the live installations, so tests can wait for the asynchronous store re-checks. */
export const checkers = new Set<ShadowInvariantChecker>()

const install: InvariantInstaller = Object.assign((ctx: Context, fail: (message: string) => never) => {
  const logger = ctx.logger('shadow-context-invariant')
  const checker = new ShadowInvariantChecker({
    fail,
    confirmRows: async (sessionId, entries) => {
      const capture: ShadowCapture = ctx.shadowCapture
      return (await capture.opened()).confirm(sessionId, entries)
    },
    // a violation found after the event was published has no caller to throw to: it is logged
    report: error => logger.error(error),
  })
  checkers.add(checker)
  ctx.effect(() => () => checkers.delete(checker), 'shadow invariant checker')
  const sessions: readonly Session[] = ctx.sessions.list()
  for (const session of sessions) checker.seed(session)
  ctx.on('session/created', session => checker.seed(session), { global: true })
  ctx.on('session/event', (session, event) => checker.observe(session, event), { global: true })
}, { inject: ['sessions', 'shadowCapture'] })

/** Register this package's invariant companion. */
export const apply = (ctx: Context): Promise<() => void> => Promise.resolve(ctx.invariants.register(PACKAGE_NAME, install))
