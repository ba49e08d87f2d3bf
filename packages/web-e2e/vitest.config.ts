import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The browser end-to-end run and the README run, the second half of `npm test` (after the main
// suite): they need a Chromium and a CJK font, which `.ci/run` installs with apt-get when missing.
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['tests/**/*.e2e.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // both files pack the repository into dist/ and install it: one at a time
    fileParallelism: false,
    // no test may fall back to the user's ~/.dsh
    setupFiles: [fileURLToPath(new URL('../testing/src/test-home.ts', import.meta.url))],
    reporters: ['default'],
  },
})
