/**
 * Durations past the longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). Node fires such
 * a timer after 1 ms with a TimeoutOverflowWarning: `watch --interval 25d` spun in a busy loop of
 * warnings, and `pull --timeout 30d` timed every request out at once (exit 5).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, sleep } from '../../src/core/clock.js';
import { AbortedError } from '../../src/errors.js';
import { cli, sim, startCli, tempDir } from '../helpers/index.js';

const DAY = 86_400_000;

function envFor(url: string) {
  return { CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: 'demo-key' };
}

afterEach(() => {
  // The spy wraps the fake setTimeout: it goes first, then the real timers come back.
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('waits longer than a timer takes', () => {
  it('sleep(25 days) waits 25 days, in timers no longer than a timer takes', async () => {
    vi.useFakeTimers();
    const spy = vi.spyOn(globalThis, 'setTimeout');
    let done = false;
    const waiting = sleep(25 * DAY).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(25 * DAY - MAX_TIMER_MS - 1);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
    const delays = spy.mock.calls.map((call) => call[1] as number);
    expect(delays.length).toBe(2);
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
  });

  it('a long sleep still ends at once on the signal', async () => {
    const controller = new AbortController();
    const waiting = sleep(40 * DAY, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
  });

  it('watch --interval 25d sleeps between passes (no busy loop, no warning) and stops on SIGINT with exit 0', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const run = startCli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '25d', '--max-cycles', '2'], { env: envFor(s.url) });
    await run.waitFor(/pass 1:/);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(run.stdout()).not.toMatch(/pass 2/);
    expect(run.stderr()).not.toMatch(/TimeoutOverflowWarning/);
    run.child.kill('SIGINT');
    const { code } = await run.exited;
    expect(code).toBe(0);
    expect(s.stats.requests).toBeLessThan(10);
  });

  it('pull --timeout 30d reads everything (a timeout longer than a timer takes is no timeout at all)', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const run = await cli(['pull', '--db', join(tempDir(), 'm.db'), '--timeout', '30d', '--json'], { env: envFor(s.url) });
    expect(run.stderr).not.toMatch(/TimeoutOverflowWarning|no complete answer/);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).records).toBe(40);
  });
});
