export * from './reader.ts'
export * from './plugin.ts'
