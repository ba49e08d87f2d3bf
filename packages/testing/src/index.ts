export * from './scripted-model.ts'
export * from './harness.ts'
export * from './scenario.ts'
export * from './launcher.ts'
