export * from './capture/index.ts'
export * from './engine/index.ts'
export * from './recall/index.ts'
export * from './store-path.ts'
export * from './dsh-logs.ts'
export * from './projection/index.ts'
export * from './web/index.ts'
/** The package itself is a loader row (`name: dsh-shadow-context`): the host side of the web UI. */
export { ShadowWeb as default } from './web/plugin.ts'
