/**
 * `campaign-sync simulate` refuses what it cannot serve at start-up with a usage error (exit 2) that
 * names the flag, instead of an "internal error" (exit 1), an OOM kill or a server nobody can reach.
 */
import { describe, expect, it } from 'vitest';
import { type SimulateOptions, simulate } from '../src/commands/simulate.js';
import { exitCodeFor, UsageError } from '../src/errors.js';
import { checkRateLimit, MAX_WINDOW_COUNT, SlidingWindow } from '../src/simulator/window.js';

/** Runs simulate with an already-aborted signal: it stops at once if it started, or throws at start-up. */
async function startUp(opts: SimulateOptions): Promise<unknown> {
  const ac = new AbortController();
  ac.abort();
  try {
    await simulate({ port: '0', quiet: true, ...opts }, ac.signal);
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Expects a one-line usage error (exit 2) matching `pattern`. */
function expectUsage(err: unknown, pattern: RegExp): void {
  expect(err).toBeInstanceOf(UsageError);
  expect(exitCodeFor(err)).toBe(2);
  const message = (err as Error).message;
  expect(message).not.toContain('\n');
  expect(message).toMatch(pattern);
}

describe('--rate-limit is bounded', () => {
  it('refuses a count past the bound, naming it, before allocating anything', () => {
    // Only the check: 3000000000/1m would allocate 24 GB without it.
    expect(() => checkRateLimit({ count: 3_000_000_000, windowMs: 60_000 })).toThrow(UsageError);
    expect(() => checkRateLimit({ count: 3_000_000_000, windowMs: 60_000 })).toThrow(/^--rate-limit: 3000000000\/1m .*1000000/);
    expect(() => checkRateLimit({ count: MAX_WINDOW_COUNT, windowMs: 60_000 })).not.toThrow();
    expect(() => new SlidingWindow(MAX_WINDOW_COUNT + 1, 60_000)).toThrow(UsageError);
  });

  it('simulate refuses 999999999999/1ms and a count just past the bound (16 MB without the check) with exit 2', async () => {
    expectUsage(await startUp({ rateLimit: '999999999999/1ms' }), /^--rate-limit: .*1000000/);
    expectUsage(await startUp({ rateLimit: `${MAX_WINDOW_COUNT * 2}/1m` }), /^--rate-limit: 2000000\/1m /);
    expect(await startUp({ rateLimit: `${MAX_WINDOW_COUNT}/1m` })).toBeUndefined();
  });
});
