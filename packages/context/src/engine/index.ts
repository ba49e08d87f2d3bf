export * from './config.ts'
export * from './region.ts'
export * from './digest.ts'
export * from './engine.ts'
