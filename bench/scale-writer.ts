/**
 * One writer process of bench:scale: appends `count` messages of the shared corpus stream into the
 * store at `location` (SQLite file or postgres://), in sessions of its own, through the real store
 * path (validation, analyzer, backend). Prints one JSON line: { written, unchanged, ms }.
 *
 * node --conditions=source scale-writer.ts <location> <count> <name> [batch]
 */
import { ShadowStore } from '@dsh-shadow/store'
import { Generator } from './corpus.ts'

const [location, countArg, name, batchArg] = process.argv.slice(2) as [string, string, string, string | undefined]
const count = Number(countArg)
const batch = Number(batchArg ?? 500)
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
}
const ms = performance.now() - started
await store.close()
process.stdout.write(`${JSON.stringify({ written, unchanged, ms })}\n`)
