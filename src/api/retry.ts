/**
 * The retry policy, as one pure function of (error, attempt) -> delay or stop (STYLE.md rule 4).
 */
import { ApiError, AuthError, NetworkError } from '../errors.js';

/**
 * Statuses worth another try: 408 (request timeout), 425 (too early), 429 (rate limited) and the
 * 5xx family (server trouble is usually passing). 501 and 505 are 5xx that never get better.
 */
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 523, 524]);

export interface RetryOptions {
  maxRetries: number;
  /** First backoff step. */
  baseMs?: number;
  /** Longest backoff (Retry-After may ask for more, up to maxRetryAfterMs). */
  capMs?: number;
  /** Longest Retry-After we honour; beyond it the server is not coming back soon. */
  maxRetryAfterMs?: number;
}

/**
 * How long to wait before retrying `err` after `attempt` retries so far (0 for the first failure),
 * or undefined to give up. Backoff is exponential with "equal jitter" (half fixed, half random) so
 * concurrent streams do not retry in lockstep; a Retry-After from the server wins when present.
 */
export function retryDelay(err: unknown, attempt: number, opts: RetryOptions, random: () => number = Math.random): number | undefined {
  if (attempt >= opts.maxRetries) return undefined;
  if (err instanceof AuthError) return undefined;
  const retryable =
    err instanceof NetworkError || (err instanceof ApiError && err.status !== undefined && RETRYABLE_STATUS.has(err.status));
  if (!retryable) return undefined;
  const retryAfter = err instanceof ApiError ? err.retryAfterMs : undefined;
  if (retryAfter !== undefined) {
    if (retryAfter > (opts.maxRetryAfterMs ?? 3_600_000)) return undefined;
    return retryAfter;
  }
  const step = Math.min(opts.capMs ?? 30_000, (opts.baseMs ?? 500) * 2 ** attempt);
  return Math.round(step / 2 + (step / 2) * random());
}

/** Parses Retry-After: delta-seconds or an HTTP date, as milliseconds from `now` (never negative). */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
