#!/usr/bin/env node
// Assemble the installable package `dsh-shadow-context` (what a dsh user adds to a profile):
// the plugins (packages/context), the store library (vendored as lib/store) and the CLI (lib/cli,
// bin dsh-shadow), with workspace imports rewritten to relative paths. Needs `npm run build` first.
// Writes dist/dsh-shadow-context-<version>.tgz and prints its path.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const context = JSON.parse(readFileSync(join(root, 'packages/context/package.json'), 'utf8'))
const cli = JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8'))
const store = JSON.parse(readFileSync(join(root, 'packages/store/package.json'), 'utf8'))
for (const file of ['context/lib/index.js', 'context/lib/client.js', 'store/lib/index.js', 'cli/lib/index.js']) {
  if (!existsSync(join(root, 'packages', file))) {
    console.error(`pack: packages/${file} is missing; run \`npm run build\` first`)
    process.exit(1)
  }
}

const dist = join(root, 'dist')
const stage = join(dist, 'dsh-shadow-context')
rmSync(stage, { recursive: true, force: true })
mkdirSync(stage, { recursive: true })
const copy = (from, to) => cpSync(join(root, from), join(stage, to), { recursive: true, filter: source => !source.endsWith('.map') && !source.endsWith('.tsbuildinfo') })
copy('packages/context/lib', 'lib')
copy('packages/store/lib', 'lib/store')
copy('packages/cli/lib', 'lib/cli')
copy('packages/context/presets', 'presets')
copy('packages/context/patches', 'patches')
copy('packages/cli/bin', 'bin')

// Workspace package names → paths inside this one package.
const targets = { '@dsh-shadow/store': join(stage, 'lib/store/index'), 'dsh-shadow-context': join(stage, 'lib/index') }
const walk = directory => readdirSync(directory).flatMap(name => {
  const path = join(directory, name)
  return statSync(path).isDirectory() ? walk(path) : [path]
})
for (const file of walk(join(stage, 'lib'))) {
  if (!file.endsWith('.js') && !file.endsWith('.d.ts')) continue
  // The browser file registers under the package name itself; it imports nothing from the workspace.
  if (file === join(stage, 'lib', 'client.js')) continue
  let text = readFileSync(file, 'utf8').replace(/\n\/\/# sourceMappingURL=.*$/m, '')
  for (const [name, target] of Object.entries(targets)) {
    let spec = relative(dirname(file), target).split(sep).join('/')
    if (!spec.startsWith('.')) spec = `./${spec}`
    // only module specifiers: a string constant that happens to be the package name stays as it is
    for (const quote of ["'", '"']) {
      text = text.replaceAll(`from ${quote}${name}${quote}`, `from ${quote}${spec}.js${quote}`).replaceAll(`import(${quote}${name}${quote})`, `import(${quote}${spec}.js${quote})`)
    }
  }
  writeFileSync(file, text)
}
const bin = join(stage, 'bin', 'dsh-shadow.js')
writeFileSync(bin, readFileSync(bin, 'utf8').replace("'../lib/index.js'", "'../lib/cli/index.js'"), { mode: 0o755 })

const exportsMap = {}
for (const [key, value] of Object.entries(context.exports)) {
  if (typeof value === 'string') exportsMap[key] = value
  else exportsMap[key] = { types: value.types, default: value.default }
}
exportsMap['./store'] = { types: './lib/store/index.d.ts', default: './lib/store/index.js' }
exportsMap['./cli'] = { types: './lib/cli/index.d.ts', default: './lib/cli/index.js' }
// the vendored store's own dependencies (the PostgreSQL client, the stemmer) install with the plugin
const dependencies = { ...context.dependencies, ...store.dependencies, commander: cli.dependencies.commander, yaml: cli.dependencies.yaml }
delete dependencies['@dsh-shadow/store']
const peerDependencies = {
  ...context.peerDependencies,
  '@deepseek-ai/dsh-session-persistence-jsonl': cli.dependencies['@deepseek-ai/dsh-session-persistence-jsonl'],
}
const manifest = {
  name: 'dsh-shadow-context',
  version: context.version,
  description: context.description,
  type: 'module',
  license: context.license,
  main: 'lib/index.js',
  types: 'lib/index.d.ts',
  bin: { 'dsh-shadow': 'bin/dsh-shadow.js' },
  exports: exportsMap,
  files: ['lib', 'bin', 'presets', 'patches', 'README.md'],
  // dsh.client: the web app serves lib/client.js; dsh.bundle: `dsh plugin add` layers our patch in.
  dsh: context.dsh,
  engines: context.engines,
  dependencies,
  peerDependencies,
}
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
cpSync(join(root, 'packages/context/README.md'), join(stage, 'README.md'))

const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', dist], { cwd: stage, encoding: 'utf8' })
if (packed.status !== 0) {
  console.error(packed.stderr)
  process.exit(packed.status ?? 1)
}
console.log(join(dist, packed.stdout.trim().split('\n').at(-1)))
