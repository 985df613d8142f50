/**
 * The listeners a command hands down (core/events.ts), built once from its Output and spinner:
 * warnings and retries as lines on stderr, live counts on the spinner. Counts are only formatted
 * while a spinner is shown, so --quiet, --json, CI and pipes pay nothing per page.
 */
import type { Progress as PassProgress, RunEvents } from '../core/events.js';
import type { Output } from './output.js';
import type { Progress } from './progress.js';
import { requestLog } from './request-log.js';
import { formatCount, formatMs } from './table.js';

function progressText(p: PassProgress): string {
  return `${p.streamsDone}/${p.streams} streams, ${formatCount(p.records)} records, ${formatCount(p.requests)} requests`;
}

export function commandEvents(out: Output, progress?: Progress): RunEvents {
  const show = progress?.active ? (e: { progress: PassProgress }) => progress.update(progressText(e.progress)) : undefined;
  return {
    warning: (text) => out.warn(text),
    retry: (e) => out.info(`retrying in ${formatMs(e.delayMs)}: ${e.error.message}`),
    page: show,
    streamDone: show,
    // --verbose: the request log replaces the short retry line.
    ...requestLog(out),
  };
}
