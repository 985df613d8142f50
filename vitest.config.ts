import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/longest-first.js';

/** In-process tests with mocks: no simulator, no files, no spawned CLI (`npm run test:unit`; test/unit/ too). */
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
/**
 * The spawned CLI, for what needs a process of its own: signals, kill -9 (one round per sink: the
 * project sets CRASH_KILLS=1), a lock held by another process, the launcher, the installed package
 * (`npm run test:e2e`). Everything under test/e2e/ is e2e too.
 */
const E2E = [
  'test/e2e/**/*.test.ts',
  'test/export.test.ts',
  'test/export-signal.test.ts',
  'test/forget-crash.test.ts',
  'test/if-idle.test.ts',
  'test/pg-fleet.test.ts',
  'test/pg-lock.test.ts',
  'test/pg-reliability.test.ts',
  'test/posix-locks.test.ts',
  'test/quarantine-crash.test.ts',
  'test/reliability.test.ts',
];
/** Big, slow and random (`npm run test:soak`): 20 kill -9 rounds per sink, million-row exports, memory ceilings, the gzip bomb. */
const SOAK = [
  'test/soak/**/*.test.ts',
  'test/export-memory.test.ts',
  // Its kill -9 rounds need a commit to land before a kill: on a busy machine none may.
  'test/manifest.test.ts',
  // Six million pairs of names in each of eight locales; test/order-sample.test.ts in `npm test`.
  'test/order.test.ts',
  'test/pg-reliability.test.ts',
  'test/reliability.test.ts',
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
      // `npm test` runs unit and component; CI runs every project (.ci/run).
      { extends: true, test: { name: 'unit', include: [...UNIT, 'test/unit/**/*.test.ts'] } },
      // Commands against the simulator on loopback, real files and SQLite.
      {
        extends: true,
        test: { name: 'component', include: ['test/**/*.test.ts'], exclude: [...UNIT, 'test/unit/**', ...E2E, ...SOAK] },
      },
      { extends: true, test: { name: 'e2e', include: E2E, env: { CRASH_KILLS: '1' } } },
      { extends: true, test: { name: 'soak', include: SOAK } },
    ],
  },
});
