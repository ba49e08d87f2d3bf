export { main, program, runCli } from './main.ts'
export { exportSession, repairSession, verifySession, type RepairReport, type SessionVerdict } from './operations.ts'
export { EXIT, PROCESS_IO, type CliIo } from './format.ts'
