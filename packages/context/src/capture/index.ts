export * from './cursor.ts'
export * from './service.ts'
