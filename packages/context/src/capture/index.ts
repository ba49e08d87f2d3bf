export * from './checkpoints.ts'
export * from './cursor.ts'
export * from './service.ts'
