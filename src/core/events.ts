/**
 * What happens during a run, as events. The client and the sync engine emit them; the spinner (and a
 * request log or metrics) consume them. A command builds one RunEvents from its Output (ui/events.ts)
 * and hands it down once, instead of one hook per layer.
 */
import type { StreamId } from './types.js';

/** Live totals of a pass. */
export interface PassProgress {
  streamsDone: number;
  streams: number;
  records: number;
  requests: number;
}

/** One HTTP attempt, ended: with a status, or with the error that ended it. */
export interface RequestEvent {
  method: string;
  path: string;
  /** The query string as sent, with its `?` (empty when none). Never holds the key: that is a header. */
  query: string;
  campaignId?: string | undefined;
  /** 1 for the first try. */
  attempt: number;
  /** Attempts allowed in all: 1 + --max-retries. */
  maxAttempts: number;
  status?: number | undefined;
  ms: number;
  /** Body bytes received (compressed, when the body was), an error answer's too. */
  bytes: number;
  /** The answer's headers came and its body was refused unread (a Content-Length over the cap, an unknown coding). */
  bodySkipped?: boolean | undefined;
  /** Time this attempt waited for the request budget (or a 429's pause) before it was sent. */
  budgetWaitMs: number;
  /** The `request_id` of the service's error body, when it sent one. */
  requestId?: string | undefined;
  error?: string | undefined;
}

export interface RetryEvent {
  error: Error;
  delayMs: number;
  /** The retry about to be made: 1 for the first. */
  attempt: number;
  /** Attempts allowed in all: 1 + --max-retries. */
  maxAttempts: number;
  method: string;
  path: string;
  /** The status that caused it (429: a rate-limit pause for every stream), if the server answered. */
  status?: number | undefined;
  /** True when the wait is the server's Retry-After rather than our backoff. */
  retryAfter: boolean;
}

export interface PageEvent {
  stream: StreamId;
  records: number;
  progress: PassProgress;
}

export interface StreamDoneEvent {
  stream: StreamId;
  status: 'ok' | 'failed' | 'interrupted';
  progress: PassProgress;
}

/** Every listener is optional: emitters call what is there. */
export interface RunEvents {
  request?(e: RequestEvent): void;
  retry?(e: RetryEvent): void;
  /** A request waited this long for the request budget (or a 429's pause) before it could go. */
  budgetWait?(e: { ms: number }): void;
  /**
   * A request is about to wait for the request budget (or a 429's pause) for about `ms` (an
   * estimate: 0 when it waits for a request in flight to end). Followed by budgetWait when it goes.
   */
  budgetWaitStart?(e: { ms: number }): void;
  page?(e: PageEvent): void;
  streamDone?(e: StreamDoneEvent): void;
  warning?(text: string): void;
}

/** One RunEvents calling every listener of each (a command's own and, say, watch's metrics). */
export function mergeEvents(...all: Array<RunEvents | undefined>): RunEvents {
  const list = all.filter((e): e is RunEvents => e !== undefined);
  const merged: Record<string, (e: never) => void> = {};
  for (const events of list) {
    for (const [name, fn] of Object.entries(events) as Array<[string, ((e: never) => void) | undefined]>) {
      if (!fn) continue;
      const before = merged[name];
      merged[name] = before
        ? (e) => {
            before(e);
            fn(e);
          }
        : fn;
    }
  }
  return merged as RunEvents;
}
