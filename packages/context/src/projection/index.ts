export * from './unit.ts'
export * from './plugin.ts'
