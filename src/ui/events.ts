/**
 * The listeners a command hands down (core/events.ts), built once from its Output and spinner:
 * warnings and retries as lines on stderr, live counts on the spinner. Counts are only formatted
 * while a spinner is shown, so --quiet, --json, CI and pipes pay nothing per page.
 */
import type { RunEvents } from '../core/events.js';
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
    retry: both(log.retry ?? ((e) => out.info(`retrying in ${formatMs(e.delayMs)}: ${e.error.message}`)), live.retry),
    request: both(log.request, live.request),
    budgetWaitStart: both(log.budgetWaitStart, live.budgetWaitStart),
    page: live.page,
    streamDone: live.streamDone,
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
