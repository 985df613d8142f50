/** The advice a 429 gets when the service is stricter than the request budget: the --rate-limit to set, and when there is none to give. */
import { describe, expect, it } from 'vitest';
import { rateAdvice, statedLimit } from '../../../src/api/rate-advice.js';

const BUDGET = { count: 100, windowMs: 60_000 };

describe('rateAdvice', () => {
  it("names the budget the run's answers before the 429 show, when that is below --rate-limit", () => {
    expect(rateAdvice(BUDGET, undefined, 10, 54_000)).toBe(
      '429 after 10 requests in 1m: the service allows fewer than --rate-limit 100/1m; set --rate-limit 10/1m (or CAMPAIGN_SYNC_RATE_LIMIT) to stay under it',
    );
  });

  it("takes the service's own rate-limit headers first, with their window", () => {
    const stated = statedLimit({ 'ratelimit-policy': '20;w=120', 'ratelimit-limit': '20' });
    expect(stated).toEqual({ count: 20, windowMs: 120_000 });
    expect(rateAdvice(BUDGET, stated, 0, undefined)).toBe(
      '429: the service allows 20/2m (its rate-limit headers), fewer requests than --rate-limit 100/1m; set --rate-limit 20/2m (or CAMPAIGN_SYNC_RATE_LIMIT) to stay under it',
    );
    expect(statedLimit({ 'x-ratelimit-limit': '30' })).toEqual({ count: 30, windowMs: undefined });
    expect(statedLimit({ 'x-ratelimit-limit': 'lots' })).toBeUndefined();
  });

  it('says nothing it cannot back: no answer yet, a short Retry-After (a blip), or a limit at or above the budget', () => {
    expect(rateAdvice(BUDGET, undefined, 0, 54_000)).toBeUndefined();
    expect(rateAdvice(BUDGET, undefined, 10, 1000)).toBeUndefined();
    expect(rateAdvice(BUDGET, undefined, 10, undefined)).toBeUndefined();
    // Waiting longer than the budget's window: the service's window is longer, by how much is unknown.
    expect(rateAdvice(BUDGET, undefined, 10, 3_000_000)).toBeUndefined();
    expect(rateAdvice(BUDGET, { count: 200, windowMs: 60_000 }, 0, undefined)).toBeUndefined();
    expect(rateAdvice(BUDGET, { count: 100, windowMs: 60_000 }, 0, undefined)).toBeUndefined();
  });
});
