#!/usr/bin/env node
// dsh-shadow: the Shadow Context inspection CLI. Needs Node ^22.19 (node:sqlite, like dsh itself).
const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(`dsh-shadow needs Node >= 22.19 (this is ${process.versions.node}).\n`)
  process.exit(2)
}
// node:sqlite announces itself as experimental on every start; that is noise on a CLI's stderr.
const emitWarning = process.emitWarning
process.emitWarning = (warning, ...rest) => {
  const text = typeof warning === 'string' ? warning : warning?.message ?? ''
  if (/SQLite is an experimental feature/.test(text)) return
  return emitWarning.call(process, warning, ...rest)
}
const { main } = await import('../lib/index.js')
process.exitCode = await main(process.argv.slice(2))
