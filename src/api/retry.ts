/**
 * The retry policy, as one pure function of (error, attempt) -> delay or stop.
 */
import { formatDuration } from '../core/rate.js';
import { ApiError, AuthError, NetworkError } from '../errors.js';

/**
 * Statuses worth another try: 408 (request timeout), 425 (too early), 429 (rate limited) and the
 * 5xx family (server trouble is usually passing). 501 and 505 are 5xx that never get better.
 */
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 523, 524]);

/**
 * Certificate and TLS failures (Node's and OpenSSL's codes): an expired, self-signed or mismatched
 * certificate, or a port that does not speak TLS, is the same in 13 s, so they are never retried.
 * A handshake that merely timed out (ERR_TLS_HANDSHAKE_TIMEOUT) is the network's and stays retryable.
 */
const TLS_FAILURE =
  /^(CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|INVALID_CA$|HOSTNAME_MISMATCH$|ERR_TLS_CERT_|ERR_SSL_)/;

/** A plain-http request to a port that speaks TLS (api/failures.ts tells it from the answer, or by a handshake). */
export const TLS_PORT = 'TLS_PORT';

/** OpenSSL found no TLS in the answer to https://: the port speaks something else, plain HTTP most often. */
export const NOT_TLS = /^ERR_SSL_(WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG)$/;

/**
 * The same through an https:// proxy: the first TLS handshake is with the proxy, and most proxies
 * speak plain HTTP (`HTTPS_PROXY=https://proxy:3128` written for `http://proxy:3128` is a common
 * slip), so the proxy is the likelier culprit than the service's port.
 */
export const PROXY_NOT_TLS = 'PROXY_NOT_TLS';

/** The host name did not resolve. One more try covers a resolver hiccup; five only delay the message. */
const DNS_FAILURE = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);

export interface RetryOptions {
  maxRetries: number;
  /** First backoff step. */
  baseMs?: number;
  /** Longest backoff (Retry-After may ask for more, up to maxRetryAfterMs). */
  capMs?: number;
  /** Longest Retry-After we honour (--max-retry-wait); beyond it the server is not coming back soon. */
  maxRetryAfterMs: number;
}

/**
 * Wait `delayMs` and try again, or stop; `reason`, when set, is what the user needs to read after the
 * error itself (why waiting would not help, what to check).
 */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason?: string };

/**
 * What to do after `err` when `attempt` retries were made so far (0 for the first failure). Backoff is
 * exponential with "equal jitter" (half fixed, half random) so concurrent streams do not retry in
 * lockstep; a Retry-After from the server wins when present, unless it is longer than we may wait.
 */
export function retryDecision(err: unknown, attempt: number, opts: RetryOptions, random: () => number = Math.random): RetryDecision {
  if (err instanceof AuthError) return { retry: false };
  // The wrong scheme for the port: the same on every try.
  if (err instanceof NetworkError && err.code === TLS_PORT) return { retry: false, reason: 'not retried: use https:// in --base-url' };
  if (err instanceof NetworkError && err.code === PROXY_NOT_TLS) {
    return {
      retry: false,
      reason:
        'not retried: most proxies speak plain HTTP: write http:// in the proxy variable (the tunnel to the service is TLS either way); if the proxy does speak TLS, check the port in --base-url',
    };
  }
  if (err instanceof NetworkError && NOT_TLS.test(err.code)) {
    return {
      retry: false,
      reason:
        'not retried: that port does not speak HTTPS (a plain-http server?): check the port in --base-url; http:// is for a plain-http server, such as `campaign-sync simulate` without --tls-cert',
    };
  }
  if (err instanceof NetworkError && TLS_FAILURE.test(err.code)) {
    return {
      retry: false,
      reason:
        "not retried: check the server's certificate (expiry, issuer, the host name in --base-url) and that the port speaks HTTPS; for a private CA, set NODE_EXTRA_CA_CERTS to the CA's certificate file",
    };
  }
  // A proxy that refuses the tunnel (407 wants credentials, 403 forbids the host) says the same in 13 s.
  const proxyStatus = err instanceof NetworkError ? /^PROXY_(\d{3})$/.exec(err.code)?.[1] : undefined;
  if (proxyStatus !== undefined && Number(proxyStatus) < 500 && !RETRYABLE_STATUS.has(Number(proxyStatus))) {
    return { retry: false, reason: 'not retried: check HTTPS_PROXY / HTTP_PROXY (and any credentials in them) and NO_PROXY' };
  }
  const retryable =
    err instanceof NetworkError || (err instanceof ApiError && err.status !== undefined && RETRYABLE_STATUS.has(err.status));
  if (!retryable) return { retry: false };
  if (err instanceof NetworkError && DNS_FAILURE.has(err.code) && attempt >= Math.min(1, opts.maxRetries)) {
    return { retry: false, reason: `check the host name in --base-url and DNS${attempt > 0 ? ' (tried twice)' : ''}` };
  }
  const retryAfter = err instanceof ApiError ? err.retryAfterMs : undefined;
  const cap = opts.maxRetryAfterMs;
  // Checked before the retry count: waiting this long is refused on the first such answer, not the last.
  if (retryAfter !== undefined && retryAfter > cap) {
    return {
      retry: false,
      reason: `Retry-After ${Math.ceil(retryAfter / 1000)} s is longer than --max-retry-wait ${formatDuration(cap)}: gave up`,
    };
  }
  if (attempt >= opts.maxRetries) return { retry: false };
  if (retryAfter !== undefined) return { retry: true, delayMs: retryAfter };
  const step = Math.min(opts.capMs ?? 30_000, (opts.baseMs ?? 500) * 2 ** attempt);
  return { retry: true, delayMs: Math.round(step / 2 + (step / 2) * random()) };
}

/** The delay of retryDecision, or undefined to give up. */
export function retryDelay(err: unknown, attempt: number, opts: RetryOptions, random: () => number = Math.random): number | undefined {
  const decision = retryDecision(err, attempt, opts, random);
  return decision.retry ? decision.delayMs : undefined;
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/**
 * RFC 9110 §5.6.7's three HTTP-date forms: IMF-fixdate, the obsolete RFC 850 form and asctime. Only
 * these go to Date.parse, which reads nearly anything as a date ("-1" and "1.5" are days of 2001).
 */
const HTTP_DATE = new RegExp(
  `^(?:${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT|${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4})$`,
);

/**
 * Parses Retry-After: delta-seconds or an HTTP date, as milliseconds from `now` (never negative).
 * Anything else (-1, 1.5, 1e10, an ISO date) is invalid and reads as absent: the backoff applies.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!HTTP_DATE.test(text)) return undefined;
  // asctime carries no zone, and an HTTP date is always GMT: not the machine's local time.
  const at = Date.parse(text.endsWith('GMT') ? text : `${text} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
