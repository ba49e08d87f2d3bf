/** Loader row entry (default export): `name: dsh-shadow-context/rows/projection` (host level). */
export { ShadowProjection as default } from '../projection/plugin.ts'
