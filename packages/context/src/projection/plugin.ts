/**
 * ShadowProjection: registers the `shadowContext` unit with dsh's session projection registry,
 * when a composition has one (headless compositions may not; then this does nothing). Mount it at
 * host level: projection keys are process-wide, and the value says per session whether Shadow
 * Context runs there.
 */
/// <reference types="@deepseek-ai/dsh-session-projection" />
import type { Context } from '@deepseek-ai/cordis'
import type { ShadowCapture } from '../capture/service.ts'
import { RedactionRegistry } from '../redaction-registry.ts'
import { projectionUnit } from './unit.ts'

export const ShadowProjection = {
  name: 'shadow-context-projection',
  apply(ctx: Context): void {
    ctx.inject(['sessionProjections'], projectionCtx => {
      // the capture of this composition, when there is one, owns the redaction policy; without one
      // (a web host, whose captures run in agent presets) every policy of this process applies
      const capture = (): ShadowCapture | undefined => ctx.get('shadowCapture') as ShadowCapture | undefined
      projectionCtx.sessionProjections.register(projectionUnit(text => capture()?.redactText(text) ?? RedactionRegistry.text(text)))
    })
  },
}
