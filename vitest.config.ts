import { defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  // Tests run against package sources: every workspace package exports a "source" condition.
  // The build (lib/) is exercised by the CLI and packaging tests.
  resolve: { conditions: ['source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['source', ...defaultServerConditions] } },
  test: {
    include: ['packages/*/tests/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Node's own resolution (dsh's loader importing preset rows, worker threads) also picks sources.
    execArgv: ['--conditions=source'],
    // no test may fall back to the user's ~/.dsh; every scripted-model request is checked against
    // DeepSeek's request contract
    setupFiles: ['packages/testing/src/test-home.ts', 'packages/testing/vitest/setup.ts'],
    reporters: ['default', './packages/testing/vitest/reporter.ts'],
  },
})
