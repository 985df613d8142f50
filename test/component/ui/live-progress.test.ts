/**
 * Honest progress: records, pages, requests, elapsed time, streams done as they finish,
 * and what the run waits for with the seconds left, moving while no page arrives.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../../src/app/client.js';
import { LiveProgress, liveProgress } from '../../../src/ui/live-progress.js';
import { clientConfig, sim } from '../../helpers/index.js';

const stream = { key: 'k', campaignId: 'c', endpoint: 'session' as const, reportType: null };

describe('the progress text', () => {
  it('counts pages, requests and streams as they finish, with the elapsed time', () => {
    let t = 1_000;
    const view = new LiveProgress(() => t);
    const ev = view.events(() => {});
    const progress = { streamsDone: 0, streams: 2, records: 1500, requests: 3 };
    ev.request?.({} as never);
    ev.page?.({ stream, records: 100, progress });
    t += 64_000;
    ev.streamDone?.({ stream, status: 'ok', progress: { ...progress, streamsDone: 1 } });
    expect(view.text()).toBe('1/2 streams, 1,500 records, 1 page, 1 request, 1m 04s');
  });

  it('says it waits for the rate limit, with the seconds left counting down (fake clock)', () => {
    let t = 0;
    const view = new LiveProgress(() => t);
    const ev = view.events(() => {});
    ev.budgetWaitStart?.({ ms: 41_000 });
    expect(view.text()).toBe('0 requests, 0 s; waiting for rate limit: 41 s');
    t += 10_000;
    expect(view.text()).toBe('0 requests, 10 s; waiting for rate limit: 31 s');
    ev.request?.({} as never);
    expect(view.text()).toBe('1 request, 10 s');
    ev.retry?.({
      error: new Error('429'),
      delayMs: 30_000,
      attempt: 1,
      maxAttempts: 6,
      method: 'GET',
      path: '/v1/campaigns',
      status: 429,
      retryAfter: true,
    });
    expect(view.text()).toMatch(/waiting for rate limit \(429\): 30 s$/);
  });

  it('the spinner shows the wait while the request budget is exhausted (tiny budget, real time)', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const shown: string[] = [];
    let active = true;
    const spinner = {
      get active() {
        return active;
      },
      update: (t: string) => shown.push(t),
      stop() {
        active = false;
      },
    };
    const client = createClient(clientConfig(s, { rate: { count: 1, windowMs: 2500 } }), { events: liveProgress(spinner, Date.now, 100) });
    try {
      await client.listCampaigns();
      await client.listCampaigns();
    } finally {
      spinner.stop();
      await client.close();
    }
    const waits = shown.filter((t) => /; waiting for rate limit: \d s$/.test(t));
    expect(waits.length).toBeGreaterThan(3);
    // The countdown moves while nothing else happens.
    expect(new Set(waits).size).toBeGreaterThan(1);
    expect(shown.at(-1)).toMatch(/^2 requests, \d s$/);
  });

  it('no spinner: no listeners, no ticker', () => {
    expect(liveProgress({ active: false, update: () => expect.unreachable(), stop() {} })).toEqual({});
  });
});
