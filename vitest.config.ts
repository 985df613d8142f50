import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/longest-first.js';

/** In-process tests with mocks: no simulator, no files, no spawned CLI (`npm run test:unit`). */
const UNIT = [
  'src/**/*.test.ts',
  'test/architecture.test.ts',
  'test/campaign-list.test.ts',
  'test/client.test.ts',
  'test/csv-bytes.test.ts',
  'test/compression.test.ts',
  'test/docs.test.ts',
  'test/group.test.ts',
  'test/hostile.test.ts',
  'test/json-bytes.test.ts',
  'test/output.test.ts',
  'test/redact.test.ts',
  'test/units.test.ts',
];
/** Kill -9 rounds, million-row exports, the installed package: left out of `npm run test:fast`, always run by `npm test` and CI. */
const SLOW = [
  'test/reliability.test.ts',
  'test/export.test.ts',
  'test/export-memory.test.ts',
  'test/pg-reliability.test.ts',
  'test/e2e/package.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker runs file after file without a fresh process and module graph for each: the forks'
    // start and vitest's and our modules' imports were ~0.4 s of CPU per file (measured on the unit
    // project: 12.3 s isolated, 8.8 s shared), ~30 s of a run. No test relies on a fresh process: the
    // helpers' cleanups run after every file (test/helpers/file-end.ts), tests restore the umask and
    // fake timers they change, and the CLI under test always runs in a child process of its own.
    isolate: false,
    // Most files wait on sockets, timers and child processes, not the CPU: with two at a time the
    // suite used 1.5 of the two cores (190 s wall, 287 s CPU); four at a time use both (126-130 s
    // wall, 236-247 s CPU, 2026-11-26 on the 2-core VM). Three read 146 s.
    maxWorkers: 4,
    // The longest files first, across projects (test/helpers/longest-first.ts).
    sequence: { sequencer: LongestFirst },
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    // dist/ is rebuilt before every run: the spawned CLI must never be a stale build.
    globalSetup: ['./test/global-setup.ts', './test/pg-global-setup.ts'],
    // Closes what the helpers started after each file, shared workers or not (test/helpers/file-end.ts).
    setupFiles: ['./test/helpers/after-file.ts'],
    // Any connection off loopback is a bug in a test: the helpers only ever use 127.0.0.1.
    env: { CAMPAIGN_SYNC_BASE_URL: '', CAMPAIGN_SYNC_API_KEY: '' },
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      // The simulator on loopback, real files and SQLite, the spawned CLI.
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...SLOW] } },
      { extends: true, test: { name: 'slow', include: SLOW } },
    ],
  },
});
