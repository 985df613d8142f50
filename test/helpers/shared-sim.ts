/**
 * One simulator per test worker for the tests that only read from it: started on a free loopback
 * port the first time a file of the worker asks for it, kept for the worker's later files (the
 * workers are shared between files: vitest.config.ts `isolate: false`), never closed by a file.
 *
 * Safe to share because nothing a test does can change what it serves: its data is a function of
 * the options, it has no growth, churn, faults or rate limit, and its changes (re-scores, deletions,
 * shared ids, retyped campaigns) refuse to apply. What a shared simulator cannot give: its `stats`
 * count every file's requests. A test that changes served data, counts requests or needs faults
 * starts a simulator of its own with `sim()` of ./index.ts.
 */
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';

/** The only options a shared simulator takes: what it serves. */
export interface SharedOptions {
  campaigns?: number;
  records?: number;
  seed?: number;
}

const started = new Map<string, Promise<RunningSimulator>>();

/** This worker's simulator serving `options` (the same options, the same simulator). */
export function sharedSim(options: SharedOptions = {}): Promise<RunningSimulator> {
  const key = JSON.stringify([options.campaigns ?? 2, options.records ?? 30, options.seed ?? 1]);
  let s = started.get(key);
  if (s === undefined) {
    s = startSimulator({
      campaigns: options.campaigns ?? 2,
      records: options.records ?? 30,
      seed: options.seed ?? 1,
      rateLimit: undefined,
    }).then((sim) => {
      for (const change of ['rescore', 'remove', 'arriveLate', 'share', 'retype'] as const) {
        sim.changes[change] = () => {
          throw new Error(`sharedSim: the worker's simulator is shared, its data cannot change (${change}); start one with sim()`);
        };
      }
      return sim;
    });
    started.set(key, s);
  }
  return s;
}
