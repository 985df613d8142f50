/**
 * Polling many campaigns within the budget: on a fake clock, every stream is checked at
 * least every --max-staleness, active ones far more often, and no pass checks more than its budget.
 */
import { describe, expect, it } from 'vitest';
import { fleetShare, longestWait, passBudget, rankStreams, type StreamTimes, scheduleStreams } from '../../../src/sync/schedule.js';

const MIN = 60_000;

describe('scheduleStreams', () => {
  it('checks everything when the budget allows', () => {
    const s = scheduleStreams(['a', 'b'], () => ({}), 0, { budget: 5, intervalMs: 2 * MIN, maxStalenessMs: 30 * MIN });
    expect(s).toEqual({ check: ['a', 'b'], skipped: [] });
  });

  it('200 streams, 10 active, budget 100/1m, interval 2m: nobody older than 30m, actives every pass', () => {
    const keys = Array.from({ length: 200 }, (_, i) => `s${i}`);
    const active = new Set(keys.slice(0, 10));
    const times = new Map<string, StreamTimes>();
    const budget = Math.floor(passBudget({ count: 100, windowMs: MIN }, 2 * MIN) / 2); // a tight 99 checks per pass
    const opts = { budget, intervalMs: 2 * MIN, maxStalenessMs: 30 * MIN };
    const activeChecks = new Map<string, number>();
    let worstAge = 0;
    let passes = 0;
    for (let now = 0; now < 6 * 60 * MIN; now += opts.intervalMs) {
      const { check, skipped } = scheduleStreams(keys, (k) => times.get(k) ?? {}, now, opts);
      expect(check.length).toBeLessThanOrEqual(budget);
      expect(check.length + skipped.length).toBe(200);
      for (const k of keys) {
        const at = times.get(k)?.checkedAt;
        if (at !== undefined) worstAge = Math.max(worstAge, now - at);
      }
      for (const k of check) {
        const found = active.has(k);
        times.set(k, { checkedAt: now, activeAt: found ? now : times.get(k)?.activeAt });
        if (found && now > 0) activeChecks.set(k, (activeChecks.get(k) ?? 0) + 1);
      }
      passes++;
    }
    // The age a stream reaches just before it is checked again.
    expect(worstAge).toBeLessThanOrEqual(30 * MIN);
    // Active streams were checked on (almost) every pass after they were found.
    for (const k of active) expect(activeChecks.get(k) ?? 0).toBeGreaterThanOrEqual(passes - 3);
  });

  it('due streams come first, then active, then the longest unchecked', () => {
    const times: Record<string, StreamTimes> = {
      fresh: { checkedAt: 100 * MIN },
      old: { checkedAt: 90 * MIN },
      busy: { checkedAt: 100 * MIN, activeAt: 100 * MIN },
      due: { checkedAt: 72 * MIN },
      never: {},
    };
    const s = scheduleStreams(Object.keys(times), (k) => times[k] ?? {}, 102 * MIN, {
      budget: 4,
      intervalMs: 2 * MIN,
      maxStalenessMs: 30 * MIN,
    });
    expect(s.check).toEqual(['never', 'due', 'busy', 'old']);
    expect(s.skipped).toEqual(['fresh']);
  });
});

describe('a fleet: 1,000 campaigns, 3 workers, one budget of 100 requests/min', () => {
  /**
   * Three watches (interval 2m, passes 40 s apart) on one mirror: each pass ranks every stream by the
   * times it knows and checks its share of the budget (fleetShare). Returns the longest any stream
   * went unchecked after the first hour, and the requests spent per interval.
   */
  function run(shared: boolean): { worst: number; perInterval: number } {
    const keys = Array.from({ length: 1000 }, (_, i) => `s${i}`);
    const rate = { count: 100, windowMs: MIN };
    const interval = 2 * MIN;
    const workers = 3;
    const limit = Math.min(fleetShare(passBudget(rate, interval), workers), Math.ceil(keys.length / workers));
    const fleet = new Map<string, number>();
    const own = Array.from({ length: workers }, () => new Map<string, number>());
    const last = new Map<string, number>();
    let worst = 0;
    let requests = 0;
    const end = 4 * 60 * MIN;
    for (let t = 0; t < end; t += interval / workers) {
      const w = Math.round(t / (interval / workers)) % workers;
      const known = shared ? fleet : (own[w] as Map<string, number>);
      const order = rankStreams(keys, (k) => ({ checkedAt: known.get(k) }), t, { intervalMs: interval, maxStalenessMs: 30 * MIN });
      for (const k of order.slice(0, limit)) {
        const before = last.get(k);
        if (t >= 60 * MIN) worst = Math.max(worst, t - (before ?? 0));
        last.set(k, t);
        fleet.set(k, t);
        (own[w] as Map<string, number>).set(k, t);
      }
      requests += 1 + limit;
    }
    for (const k of keys) worst = Math.max(worst, end - (last.get(k) ?? 0));
    return { worst, perInterval: (requests / end) * interval };
  }

  it('with the times every worker shares, every stream is checked within --max-staleness 30m, within the budget', () => {
    const { worst, perInterval } = run(true);
    expect(worst).toBeLessThanOrEqual(30 * MIN);
    expect(perInterval).toBeLessThanOrEqual(passBudget({ count: 100, windowMs: MIN }, 2 * MIN) + 3);
  });

  it('each worker with only its own times checks the same streams as the others: some wait past 30m', () => {
    expect(run(false).worst).toBeGreaterThan(30 * MIN);
  });
});

describe('passBudget', () => {
  it('is the interval share of the rate minus the campaign list', () => {
    expect(passBudget({ count: 100, windowMs: MIN }, 2 * MIN)).toBe(199);
    expect(passBudget({ count: 100, windowMs: MIN }, 10_000)).toBe(99);
  });
});

describe('longestWait', () => {
  it('is how long a stream may wait when the budget cannot check all streams on each pass', () => {
    // Hostile report 12: 30 streams, 30/1m, --interval 10s: 29 a pass, a pass a minute (the rate paces it).
    expect(longestWait(30, { count: 30, windowMs: 60_000 }, 10_000, passBudget({ count: 30, windowMs: 60_000 }, 10_000))).toBe(120_000);
    // README's case: 200 streams, 100/1m, 2m: 199 a pass, every stream within two passes.
    expect(longestWait(200, { count: 100, windowMs: 60_000 }, 120_000, passBudget({ count: 100, windowMs: 60_000 }, 120_000))).toBe(
      240_000,
    );
    // Every stream fits in each pass: --max-staleness never comes into play.
    expect(longestWait(5, { count: 100, windowMs: 60_000 }, 3_600_000, 99)).toBeUndefined();
  });
});

describe('watch within the budget', () => {
  it('checks what the interval can afford, reports the rest, and checks those first on the next pass', async () => {
    const { sim, tempDir } = await import('../../helpers/index.js');
    const { runCli } = await import('../../helpers/run-cli.js');
    const { fakeClock } = await import('../../helpers/clock.js');
    const s = await sim({ campaigns: 6, records: 5 });
    // 5 requests a second, a pass every second: 4 streams after the campaign list. The budget's
    // windows and the pause between passes are the run's fake clock's: nothing waits in real time.
    const clock = fakeClock(Date.now());
    const r = await runCli(
      [
        'watch',
        '--json',
        '--max-cycles',
        '2',
        '--interval',
        '1s',
        '--rate-limit',
        '5/1s',
        '--base-url',
        s.url,
        '--db',
        `${tempDir()}/m.db`,
      ],
      { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey }, clock },
    );
    expect(r.code, r.stderr).toBe(0);
    // One pause between the two passes, slept on that clock: the interval and its jitter.
    expect(clock.sleeps.filter((ms) => ms >= 1000)).toHaveLength(1);
    const passes = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { checked: number; unchecked: number; streams: Array<{ campaign_id: string; endpoint: string }> });
    expect(passes.map((p) => [p.checked, p.unchecked])).toEqual([
      [4, 2],
      [4, 2],
    ]);
    const key = (x: { campaign_id: string; endpoint: string }) => `${x.campaign_id}/${x.endpoint}`;
    const first = new Set(passes[0]?.streams.map(key));
    // The two left out of pass 1 were never checked: due, so first in pass 2.
    const second = passes[1]?.streams.map(key) ?? [];
    expect(second.filter((k) => !first.has(k))).toHaveLength(2);
  });
});
