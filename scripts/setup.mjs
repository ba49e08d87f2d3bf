#!/usr/bin/env node
// Bootstrap for a fresh clone: the machines have Node 20 and npm only, dsh needs Node 22 and
// resolves its peer graph quickly only with pnpm. This installs the lockfile with a pinned pnpm
// (through npx) once; the `node` devDependency then puts Node 22 first on every npm script's PATH.
// Runs on Node >= 18 with no dependencies.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const pnpm = manifest.packageManager // "pnpm@x.y.z"
const lockfile = join(root, 'pnpm-lock.yaml')
const marker = join(root, 'node_modules', '.dsh-shadow-setup')

const manifests = () => {
  const files = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'bench/package.json']
  for (const name of readdirSync(join(root, 'packages'))) files.push(join('packages', name, 'package.json'))
  return files
}

const fingerprint = () => {
  const hash = createHash('sha256')
  for (const file of manifests()) {
    const path = join(root, file)
    if (existsSync(path)) hash.update(readFileSync(path))
  }
  return hash.digest('hex')
}

const want = fingerprint()
const force = process.argv.includes('--force') || process.argv.includes('--update')
if (existsSync(marker) && readFileSync(marker, 'utf8') === want && !force) process.exit(0)

const frozen = existsSync(lockfile) && !process.argv.includes('--update')
const args = ['--yes', pnpm, 'install', frozen ? '--frozen-lockfile' : '--no-frozen-lockfile']
console.error(`[setup] installing dependencies: npx ${args.join(' ')}`)
const started = Date.now()
const result = spawnSync('npx', args, { cwd: root, stdio: 'inherit', env: { ...process.env, npm_config_yes: 'true' } })
if (result.status !== 0) {
  console.error(`[setup] dependency install failed (exit ${result.status ?? result.signal})`)
  process.exit(result.status ?? 1)
}
writeFileSync(marker, fingerprint())
console.error(`[setup] done in ${((Date.now() - started) / 1000).toFixed(1)} s`)
