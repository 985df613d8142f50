import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    // Any connection off loopback is a bug in a test: the helpers only ever use 127.0.0.1.
    env: { CAMPAIGN_SYNC_BASE_URL: '', CAMPAIGN_SYNC_API_KEY: '' },
  },
});
