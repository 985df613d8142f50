import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/longest-first.js';

/**
 * The tiers are folders (CONTRIBUTING.md, Tests): test/unit/ (pure functions, fake clocks), test/component/
 * (commands in-process against the simulator, real files and databases), test/contract/ (one set of cases
 * on every backend), test/e2e/ (the spawned CLI), test/soak/ (big, slow, random). Inside each, files
 * mirror src/. The crash rounds run once per sink in e2e (CRASH_KILLS=1) and twenty times in soak.
 */
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
      // `npm test` runs unit, component and contract; CI runs every project (.ci/run).
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'src/**/*.test.ts'] } },
      { extends: true, test: { name: 'component', include: ['test/component/**/*.test.ts'] } },
      { extends: true, test: { name: 'contract', include: ['test/contract/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], env: { CRASH_KILLS: '1' } } },
      { extends: true, test: { name: 'soak', include: ['test/soak/**/*.test.ts'] } },
    ],
  },
});
