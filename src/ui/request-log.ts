/**
 * The request log of `--verbose`: one line on stderr per HTTP attempt, one per retry or
 * rate-limit pause, and one when a request must wait a second or more for the request budget. With
 * `--json` each line is a JSON object. The key is a header and never part of an event, so it cannot
 * reach this log; paths and error texts may quote the service and are escaped by Output.
 */
import type { RequestEvent, RetryEvent, RunEvents } from '../core/events.js';
import type { Output } from './output.js';
import { formatMs } from './table.js';

/** A budget wait shorter than this gets no line of its own (it is on the request's line anyway). */
const WAIT_LINE_MS = 1000;

/** `GET /v1/campaigns?limit=100 200 12 ms 4567 B attempt 1/6 budget-wait 0 ms` (and the request_id, the error). */
export function requestLine(e: RequestEvent): string {
  const parts = [
    'http',
    `${e.method} ${e.path}${e.query}`,
    e.status === undefined ? 'no-status' : String(e.status),
    formatMs(e.ms),
    // A body refused at its headers was not read: "0 B" would read as an empty body.
    e.bodySkipped ? 'body not read' : `${e.bytes} B`,
    `attempt ${e.attempt}/${e.maxAttempts}`,
    `budget-wait ${formatMs(e.budgetWaitMs)}`,
  ];
  if (e.requestId !== undefined) parts.push(`request_id ${e.requestId}`);
  const line = parts.join(' ');
  // An error status speaks for itself; a success status with an error is a body that failed after it (cut off, not JSON).
  return e.error === undefined || (e.status !== undefined && e.status >= 300) ? line : `${line}: ${e.error}`;
}

/** Why and how long: `rate-limit: 429, every stream paused 30.0 s (Retry-After), then attempt 2/6 of GET /v1/campaigns`. */
export function retryLine(e: RetryEvent): string {
  const then = `then attempt ${e.attempt + 1}/${e.maxAttempts} of ${e.method} ${e.path}`;
  const source = e.retryAfter ? 'Retry-After' : 'backoff';
  if (e.status === 429) return `rate-limit: 429, every stream paused ${formatMs(e.delayMs)} (${source}), ${then}`;
  const reason = e.status === undefined ? e.error.message : String(e.status);
  return `retry: ${reason}, waiting ${formatMs(e.delayMs)} (${source}), ${then}`;
}

export function requestDocument(e: RequestEvent) {
  return {
    event: 'request',
    method: e.method,
    path: e.path,
    query: e.query,
    status: e.status ?? null,
    ms: e.ms,
    bytes: e.bytes,
    body_not_read: e.bodySkipped === true,
    attempt: e.attempt,
    max_attempts: e.maxAttempts,
    budget_wait_ms: e.budgetWaitMs,
    request_id: e.requestId ?? null,
    error: e.error ?? null,
  };
}

export function retryDocument(e: RetryEvent) {
  return {
    event: e.status === 429 ? 'rate_limit' : 'retry',
    method: e.method,
    path: e.path,
    status: e.status ?? null,
    reason: e.error.message,
    wait_ms: e.delayMs,
    retry_after: e.retryAfter,
    next_attempt: e.attempt + 1,
    max_attempts: e.maxAttempts,
  };
}

/** The listeners of the request log; empty unless the Output is verbose. */
export function requestLog(out: Output): Pick<RunEvents, 'request' | 'retry' | 'budgetWaitStart'> {
  if (!out.verbose) return {};
  if (out.json) {
    return {
      request: (e) => out.trace(requestDocument(e)),
      retry: (e) => out.trace(retryDocument(e)),
      budgetWaitStart: (e) => {
        if (e.ms >= WAIT_LINE_MS) out.trace({ event: 'budget_wait', wait_ms: Math.round(e.ms) });
      },
    };
  }
  return {
    request: (e) => out.trace(requestLine(e)),
    retry: (e) => out.trace(retryLine(e)),
    budgetWaitStart: (e) => {
      if (e.ms >= WAIT_LINE_MS) out.trace(`budget-wait: waiting about ${formatMs(e.ms)} for the request budget`);
    },
  };
}
