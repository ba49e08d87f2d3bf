/** Loader row entry (default export): `name: dsh-shadow-context/rows/engine`. */
export { ShadowCompactionEngine as default } from '../engine/engine.ts'
