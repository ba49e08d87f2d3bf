export * from './format.ts'
export * from './recall.ts'
export * from './plugin.ts'
