/**
 * bench:crash — kill -9 a real dsh + Shadow Context process at ≥ 50 randomized points and resume
 * it each time (see packages/context/tests/fixtures/crash-driver.ts for what is checked).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crashRun } from '../packages/context/tests/fixtures/crash-driver.ts'
import { printTable, result } from './report.ts'

const KILLS = Number(process.env['BENCH_KILLS'] ?? 60)
const home = mkdtempSync(join(tmpdir(), 'dsh-shadow-crash-'))
const started = performance.now()
const outcome = await crashRun({
  home,
  kills: KILLS,
  seed: Number(process.env['BENCH_SEED'] ?? 2026),
  onKill: (index, point, verdict) => console.log(`${String(index + 1).padStart(3)}. kill at ${point.padEnd(32)} → ${verdict}`),
})
rmSync(home, { recursive: true, force: true })
printTable('crash harness', ['', 'count'], [
  ['attempts', outcome.attempts],
  ['kills (SIGKILL delivered)', outcome.kills],
  ...Object.entries(outcome.byPoint).map(([point, count]) => [`  at ${point}`, count]),
  ['checkpoint checks after kills (each kill re-checks all)', outcome.checkpointsChecked],
  ['lost', outcome.lost],
  ['duplicated or stale', outcome.duplicated],
  ['mismatched', outcome.mismatched],
  ['wrongly elided', outcome.wronglyElided],
  ['resume failures', outcome.replayFailures],
])
console.log(`took ${((performance.now() - started) / 1000).toFixed(0)} s`)
result('crash', { kills: outcome.kills, lost: outcome.lost, duplicated: outcome.duplicated, wrongly_elided: outcome.wronglyElided })
