/**
 * A service stricter than `--rate-limit`: the pull says once which budget to set (from what the
 * service answered before its first 429), and tells each pause of every stream once, not one long
 * retry line per stream. On the run's fake clock, which the simulator's limiter shares: the
 * Retry-After waits pass at once and the simulator's window moves with them.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors.js';
import { commandEvents } from '../../../src/ui/events.js';
import { Output } from '../../../src/ui/output.js';
import { fakeClock } from '../../helpers/clock.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

describe('a service stricter than the request budget', () => {
  it('one warning naming the --rate-limit to set; one line per pause, none per stream', async () => {
    const clock = fakeClock(Date.now());
    const s = await sim({ campaigns: 4, records: 30, rateLimit: { count: 6, windowMs: 60_000 }, now: () => clock.now() });
    const r = await runCli(['pull', '--db', join(tempDir(), 'm.db'), '--page-size', '10', '--max-retries', '20'], {
      env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
      clock,
    });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    const advice = lines.filter((l) => l.startsWith('warning: '));
    expect(advice).toEqual([
      'warning: 429 after 6 requests in 1m: the service allows fewer than --rate-limit 100/1m; set --rate-limit 6/1m (or CAMPAIGN_SYNC_RATE_LIMIT) to stay under it',
    ]);
    const pauses = lines.filter((l) => l.startsWith('rate-limited'));
    expect(pauses.length).toBeGreaterThan(0);
    for (const p of pauses)
      expect(p).toMatch(/^rate-limited \(429 Too many requests\): every stream waits \d+\.\d s, as Retry-After asks$/);
    expect(r.stderr).not.toMatch(/GET \/v1/);
  });

  it('streams stopped by one pause get one line between them; a later, longer pause gets its own', () => {
    const err: string[] = [];
    const streams = { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) > 0 } } as never;
    const events = commandEvents(new Output({}, streams, {}));
    const pause = (delayMs: number, campaignId: string) =>
      events.retry?.({
        error: new ApiError({ method: 'GET', path: '/v1/campaigns/session/results', campaignId }, '429 Too many requests', {
          status: 429,
          requestId: `r-${campaignId}`,
          retryAfterMs: delayMs,
        }),
        delayMs,
        attempt: 1,
        maxAttempts: 6,
        method: 'GET',
        path: '/v1/campaigns/session/results',
        status: 429,
        retryAfter: true,
      });
    for (const c of ['c1', 'c2', 'c3', 'c4']) pause(59_000, c);
    pause(119_000, 'c1');
    expect(err).toEqual([
      'rate-limited (429 Too many requests): every stream waits 59.0 s, as Retry-After asks\n',
      'rate-limited (429 Too many requests): every stream waits 119.0 s, as Retry-After asks\n',
    ]);
  });
});
