import { defineConfig } from 'vitest/config'

// The browser end-to-end run (`npm run test:web`): not part of `npm test`, because it needs a
// Chromium on the machine; CI runs the browser-free slice in packages/context/tests/web-*.test.ts.
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['tests/**/*.e2e.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    reporters: ['default'],
  },
})
