/**
 * ShadowWeb: the package's own host row (`name: dsh-shadow-context`), what the web app needs on the
 * host plane: the `shadowContext` session projection and the read endpoint. It is also the row the
 * web app's client-module scan keys on — only a host row whose package declares `dsh.client` gets
 * its browser file (`./client`) served — so it must be named by the bare package name.
 *
 * Capture, engine and recall tools stay where the profile puts them (the agent preset in the web
 * roster, host rows in headless); this row reads the store they write.
 */
/// <reference types="@deepseek-ai/dsh-session-projection" />
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { refuseUnknownKeys } from '../config-keys.ts'
import { ShadowProjection } from '../projection/plugin.ts'
import { READER_NAMESPACE, READER_SERVICE, ShadowContextReader, ShadowContextReaderConfigSchema, type ShadowContextReaderConfig } from './reader.ts'

export interface ShadowWebConfig extends ShadowContextReaderConfig {
  /** Register the `shadowContext` projection here. Default true; turn off if another row already does. */
  projection?: boolean
}

export const ShadowWebConfigSchema: z<ShadowWebConfig> = z.intersect([
  ShadowContextReaderConfigSchema,
  z.object({ projection: z.boolean().default(true).description('register the shadowContext session projection') }),
])

export const ShadowWeb = {
  name: 'shadow-context-web',
  Config: ShadowWebConfigSchema,
  apply(ctx: Context, config: ShadowWebConfig = {}): void {
    refuseUnknownKeys('ShadowWebConfig', config, ShadowContextReaderConfigSchema, ['projection'])
    const { projection, ...reader } = ShadowWebConfigSchema(config)
    if (projection !== false) ctx.plugin(ShadowProjection)
    ctx.plugin(ShadowContextReader, reader)
    // The gateway reads the @Remote markers through its own copy of dsh-typert-protocol; a private
    // copy in the profile (pnpm 9 installs one) hides the endpoint. Say so instead of failing silently.
    ctx.inject(['typertGateway', READER_SERVICE], checked => {
      const gateway = checked.get('typertGateway') as { claimsEndpoint?: (endpoint: string) => boolean } | undefined
      if (typeof gateway?.claimsEndpoint === 'function' && !gateway.claimsEndpoint(`${READER_NAMESPACE}/read`)) {
        checked.logger.warn('Shadow Context: the API gateway cannot see the shadowContext/* endpoints; the profile has its own copy of @deepseek-ai/dsh-typert-protocol. Reinstall with node-linker=hoisted and auto-install-peers=false (see the README, Web app).')
      }
    })
  },
}
