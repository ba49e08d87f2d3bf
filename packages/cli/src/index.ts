export { main, program } from './main.ts'
export { exportSession, repairSession, verifySession, type RepairReport, type SessionVerdict } from './operations.ts'
export { EXIT } from './format.ts'
