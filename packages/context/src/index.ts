export * from './capture/index.ts'
export * from './engine/index.ts'
export * from './recall/index.ts'
export * from './store-path.ts'
