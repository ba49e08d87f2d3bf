/**
 * ShadowProjection: registers the `shadowContext` unit with dsh's session projection registry,
 * when a composition has one (headless compositions may not; then this does nothing). Mount it at
 * host level: projection keys are process-wide, and the value says per session whether Shadow
 * Context runs there.
 */
/// <reference types="@deepseek-ai/dsh-session-projection" />
import type { Context } from '@deepseek-ai/cordis'
import { shadowContextProjection } from './unit.ts'

export const ShadowProjection = {
  name: 'shadow-context-projection',
  apply(ctx: Context): void {
    ctx.inject(['sessionProjections'], projectionCtx => {
      projectionCtx.sessionProjections.register(shadowContextProjection)
    })
  },
}
