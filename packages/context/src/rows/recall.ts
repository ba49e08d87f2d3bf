/** Loader row entry (default export): `name: dsh-shadow-context/rows/recall`. */
export { ShadowRecall as default } from '../recall/plugin.ts'
