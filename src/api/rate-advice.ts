/**
 * What to tell a user whose service is stricter than their request budget: a 429 means the server
 * counts fewer requests in its window than `--rate-limit` allows (or another process shares the
 * key). From the service's own limit headers when it sends them (`RateLimit-Limit`,
 * `X-RateLimit-Limit`, the window from `RateLimit-Policy: 10;w=60`), else from how many requests this
 * client had answered within one budget window before the 429, the budget to set instead.
 */
import { formatDuration, formatRate, type Rate } from '../core/rate.js';

/** The limit a 429's headers state, if any: requests per window (the window when the headers say it). */
export interface StatedLimit {
  count: number;
  windowMs?: number | undefined;
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** The limit of `RateLimit-Limit` / `X-RateLimit-Limit` (and `RateLimit-Policy`'s `w=`), when a 429 carries one. */
export function statedLimit(headers: Record<string, string | string[] | undefined>): StatedLimit | undefined {
  const limit = first(headers['ratelimit-limit']) ?? first(headers['x-ratelimit-limit']);
  const policy = first(headers['ratelimit-policy']);
  // `RateLimit-Policy: 10;w=60` (the IETF draft) states both; a plain limit states the count only.
  const fromPolicy = policy === undefined ? undefined : /^\s*(\d+)\s*;(?:.*;)?\s*w=(\d+)/.exec(policy);
  const count = Number(fromPolicy?.[1] ?? /^\s*(\d+)/.exec(limit ?? '')?.[1]);
  if (!Number.isSafeInteger(count) || count < 1) return undefined;
  return { count, windowMs: fromPolicy ? Number(fromPolicy[2]) * 1000 : undefined };
}

/** Requests per millisecond. */
const pace = (r: Rate) => r.count / r.windowMs;

/**
 * The advice for a 429, or undefined when there is none to give: the rate to set, and why. `answered`:
 * how many of this client's requests were answered within the budget's last window; `retryAfterMs`:
 * what the 429 asked. Without stated limits, a short Retry-After (a blip, a fault), one longer than the
 * budget's window, or nothing answered yet (another process may hold the key's window) says too little
 * to name a rate.
 */
export function rateAdvice(
  budget: Rate,
  stated: StatedLimit | undefined,
  answered: number,
  retryAfterMs: number | undefined,
): string | undefined {
  let suggested: Rate;
  let why: string;
  if (stated !== undefined) {
    suggested = { count: stated.count, windowMs: stated.windowMs ?? budget.windowMs };
    why = `429: the service allows ${formatRate(suggested)} (its rate-limit headers), fewer requests`;
  } else {
    // A wait longer than the budget's window says the service counts over a longer window than ours:
    // how much longer is unknown, so no rate is named.
    if (answered < 1 || retryAfterMs === undefined || retryAfterMs < 2000 || retryAfterMs > budget.windowMs) return undefined;
    suggested = { count: answered, windowMs: budget.windowMs };
    why = `429 after ${answered} ${answered === 1 ? 'request' : 'requests'} in ${formatDuration(budget.windowMs)}: the service allows fewer`;
  }
  if (pace(suggested) >= pace(budget)) return undefined;
  return `${why} than --rate-limit ${formatRate(budget)}; set --rate-limit ${formatRate(suggested)} (or CAMPAIGN_SYNC_RATE_LIMIT) to stay under it`;
}
