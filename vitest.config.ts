import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const src = (path: string): string => fileURLToPath(new URL(`./packages/${path}`, import.meta.url))

export default defineConfig({
  resolve: {
    // Tests run against package sources; the build (lib/) is exercised by the CLI and demo tests.
    alias: [
      { find: /^@dsh-shadow\/store$/, replacement: src('store/src/index.ts') },
      { find: /^@dsh-shadow\/context$/, replacement: src('context/src/index.ts') },
      { find: /^@dsh-shadow\/context\/(.*)$/, replacement: src('context/src/$1/index.ts') },
      { find: /^@dsh-shadow\/testing$/, replacement: src('testing/src/index.ts') },
      { find: /^@dsh-shadow\/cli$/, replacement: src('cli/src/index.ts') },
    ],
  },
  test: {
    include: ['packages/*/tests/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
})
