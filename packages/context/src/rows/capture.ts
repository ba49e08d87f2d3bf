/** Loader row entry (default export): `name: dsh-shadow-context/rows/capture`. */
export { ShadowCapture as default } from '../capture/service.ts'
