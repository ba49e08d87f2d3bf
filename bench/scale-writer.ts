/**
 * One writer process of bench:scale: appends `count` messages of the shared corpus stream into the
 * store at `location` (SQLite file or postgres://), in sessions of its own, through the real store
 * path (validation, analyzer, backend). Prints one JSON line: { written, unchanged, ms }.
 * With a rate (messages/s) it appends at that pace, a few rows every 100 ms (as capture does
 * while a session runs), instead of as fast as the store takes them.
 *
 * node --conditions=source scale-writer.ts <location> <count> <name> [batch] [rate]
 */
import { ShadowStore } from '@dsh-shadow/store'
import { Generator } from './corpus.ts'

const [location, countArg, name, batchArg, rateArg] = process.argv.slice(2) as [string, string, string, string | undefined, string | undefined]
const count = Number(countArg)
const rate = rateArg === undefined ? undefined : Number(rateArg)
/** Paced: one append every TICK_MS. */
const TICK_MS = 100
const batch = rate === undefined ? Number(batchArg ?? 500) : Math.max(1, Math.round(rate * TICK_MS / 1000))
const store = await ShadowStore.open(location)
const generator = new Generator()
const started = performance.now()
let written = 0
let unchanged = 0
for (let done = 0; done < count;) {
  const rows = []
  for (let index = 0; index < batch && done < count; index += 1, done += 1) {
    const row = generator.next()
    rows.push({ ...row, sessionId: `${name}-${row.sessionId}` })
  }
  const result = await store.append(rows)
  written += result.written
  unchanged += result.unchanged
  if (rate !== undefined) {
    // the next append when the pace says, not when this one returned
    const due = started + done / rate * 1000
    if (due > performance.now()) await new Promise(resolve => setTimeout(resolve, due - performance.now()))
  }
}
const ms = performance.now() - started
await store.close()
process.stdout.write(`${JSON.stringify({ written, unchanged, ms })}\n`)
