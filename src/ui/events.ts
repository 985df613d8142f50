/**
 * The listeners a command hands down (core/events.ts), built once from its Output and spinner:
 * warnings and retries as lines on stderr, live counts on the spinner. Counts are only formatted
 * while a spinner is shown, so --quiet, --json, CI and pipes pay nothing per page.
 */
import type { RetryEvent, RunEvents } from '../core/events.js';
import { currentClock } from '../core/io.js';
import { ApiError } from '../errors.js';
import { liveProgress } from './live-progress.js';
import type { Output } from './output.js';
import type { ProgressLine } from './progress.js';
import { requestLog } from './request-log.js';
import { formatMs } from './table.js';

export function commandEvents(out: Output, progress?: ProgressLine): RunEvents {
  const live = liveProgress(progress);
  const log = requestLog(out);
  return {
    warning: (text) => out.warn(text),
    // --verbose: the request log's retry line replaces the short one.
    retry: both(log.retry ?? retryLines(out), live.retry),
    request: both(log.request, live.request),
    budgetWaitStart: both(log.budgetWaitStart, live.budgetWaitStart),
    page: live.page,
    streamDone: live.streamDone,
  };
}

/**
 * The short retry lines. A 429 pauses every stream at once (the budget is shared): one line for the
 * pause, not one per stream whose request it stopped, and none for a 429 whose wait ends within a
 * second of a pause already told. Other retries are one line each, the reason first.
 */
function retryLines(out: Output): (e: RetryEvent) => void {
  let toldUntil = Number.NEGATIVE_INFINITY;
  return (e) => {
    const reason = e.error instanceof ApiError ? e.error.reason : e.error.message;
    if (e.status !== 429) {
      out.info(`retrying in ${formatMs(e.delayMs)}: ${e.error.message}`);
      return;
    }
    const until = currentClock().now() + e.delayMs;
    if (until <= toldUntil + 1000) return;
    toldUntil = until;
    out.info(`rate-limited (${reason}): every stream waits ${formatMs(e.delayMs)}${e.retryAfter ? ', as Retry-After asks' : ''}`);
  };
}

/** One listener calling both (either may be absent). */
function both<E>(a?: (e: E) => void, b?: (e: E) => void): ((e: E) => void) | undefined {
  if (!a || !b) return a ?? b;
  return (e) => {
    a(e);
    b(e);
  };
}
