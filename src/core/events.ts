/**
 * What happens during a run, as events. The client and the sync engine emit them; the spinner (and a
 * request log or metrics) consume them. A command builds one RunEvents from its Output (ui/events.ts)
 * and hands it down once, instead of one hook per layer.
 */
import type { StreamId } from './types.js';

/** Live totals of a pass. */
export interface Progress {
  streamsDone: number;
  streams: number;
  records: number;
  requests: number;
}

/** One HTTP attempt, ended: with a status, or with the error that ended it. */
export interface RequestEvent {
  method: string;
  path: string;
  campaignId?: string | undefined;
  /** 1 for the first try. */
  attempt: number;
  status?: number | undefined;
  ms: number;
  bytes: number;
  error?: string | undefined;
}

export interface RetryEvent {
  error: Error;
  delayMs: number;
  /** The retry about to be made: 1 for the first. */
  attempt: number;
}

export interface PageEvent {
  stream: StreamId;
  records: number;
  progress: Progress;
}

export interface StreamDoneEvent {
  stream: StreamId;
  status: 'ok' | 'failed' | 'interrupted';
  progress: Progress;
}

/** Every listener is optional: emitters call what is there. */
export interface RunEvents {
  request?(e: RequestEvent): void;
  retry?(e: RetryEvent): void;
  /** A request waited this long for the request budget (or a 429's pause) before it could go. */
  budgetWait?(e: { ms: number }): void;
  page?(e: PageEvent): void;
  streamDone?(e: StreamDoneEvent): void;
  warning?(text: string): void;
}
