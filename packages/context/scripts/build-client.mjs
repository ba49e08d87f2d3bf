#!/usr/bin/env node
// Build the browser half: type-check client/ (its own tsconfig: DOM + JSX), bundle it with Vite as
// CommonJS with every shared module left external, and wrap it the way the dsh web app loads
// plugins: `window.__ModuleLoader__.load({ id, factory: require => exports })`. Writes
// lib/client.js. Fails if the bundle asks for anything outside the web app's module table, so no
// framework ever ships twice. Run by `npm run build` after `tsc -b`.
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const require = createRequire(import.meta.url)

/** The module table the rc.8 web frontend shares with plugins (dsh-web-frontend boot). */
export const SHARED_MODULES = ['react', 'react/jsx-runtime', 'react-dom', 'react-dom/client', '@deepseek-ai/cordis', '@deepseek-ai/dsh-client-ui-slots', '@deepseek-ai/dsh-client-ui-primitives']
const MODULE_ID = 'dsh-shadow-context'

const started = Date.now()
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(pkg, 'client', 'tsconfig.json')], { encoding: 'utf8' })
if (tsc.status !== 0) {
  process.stderr.write(`build-client: type check failed\n${tsc.stdout}${tsc.stderr}`)
  process.exit(1)
}

const { build } = await import('vite')
const output = await build({
  configFile: false,
  logLevel: 'warn',
  // Always the production JSX runtime: under NODE_ENV=test (a build started from inside vitest) Vite
  // would bundle react/jsx-dev-runtime, which reads `process` and breaks the page.
  mode: 'production',
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  oxc: { jsx: { runtime: 'automatic', development: false } },
  root: pkg,
  build: {
    write: false,
    minify: false,
    sourcemap: false,
    emptyOutDir: false,
    lib: { entry: join(pkg, 'client', 'index.tsx'), formats: ['cjs'], fileName: () => 'client.cjs' },
    rollupOptions: { external: id => SHARED_MODULES.includes(id), output: { exports: 'named' } },
  },
})
const chunks = (Array.isArray(output) ? output : [output]).flatMap(result => result.output).filter(item => item.type === 'chunk')
if (chunks.length !== 1) {
  process.stderr.write(`build-client: expected one chunk, got ${chunks.length}\n`)
  process.exit(1)
}
const code = chunks[0].code
const requested = [...code.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)].map(match => match[1])
const foreign = requested.filter(name => !SHARED_MODULES.includes(name))
if (foreign.length > 0) {
  process.stderr.write(`build-client: the bundle requires modules outside the web app's table: ${[...new Set(foreign)].join(', ')}\n`)
  process.exit(1)
}
if (/\bprocess\.env\b/.test(code)) {
  process.stderr.write('build-client: the bundle reads process.env, which the browser does not have\n')
  process.exit(1)
}
const indented = code.trimEnd().split('\n').map(line => (line.length === 0 ? line : `\t\t${line}`)).join('\n')
const wrapped = `window.__ModuleLoader__.load({
\tid: ${JSON.stringify(MODULE_ID)},
\tfactory: (require) => {
\t\tvar module = { exports: {} };
\t\tvar exports = module.exports;
${indented}
\t\treturn module.exports;
\t}
});
`
mkdirSync(join(pkg, 'lib'), { recursive: true })
writeFileSync(join(pkg, 'lib', 'client.js'), wrapped)
console.error(`build-client: lib/client.js ${Buffer.byteLength(wrapped)} bytes, requires ${[...new Set(requested)].join(', ')} (${Date.now() - started} ms)`)
