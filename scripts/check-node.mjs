#!/usr/bin/env node
// dsh rc.8 needs Node ^22.19 (zstd in zlib, Promise.withResolvers). The pinned `node` devDependency
// provides it on PATH inside npm scripts; say so clearly when something else is running us.
const [major, minor] = process.versions.node.split('.').map(Number)
if (major !== 22 || minor < 19) {
  console.error(`dsh-shadow-context needs Node ^22.19 but this is Node ${process.versions.node}.`)
  console.error('Run it through npm scripts (npm test, npm run demo): they put the pinned Node 22 from node_modules/.bin first on PATH.')
  process.exit(1)
}
