/** Time, injectable so tests can run the budget, retries and watch on a fake clock. */
import { AbortedError } from '../errors.js';

/** Time source and sleep, injectable so tests can use a fake clock. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Milliseconds that never go back, for measuring intervals (the request budget's slots): `now()`
   * follows the wall clock, which NTP, a resumed VM or an operator may set back. Defaults to `now`.
   */
  monotonic?(): number;
}

/**
 * The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms
 * with a TimeoutOverflowWarning, which turned `watch --interval 25d` into a busy loop.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Sleeps `ms` (any length: in timers of at most MAX_TIMER_MS), cut short by the signal (rejects with AbortedError). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError());
    const until = Date.now() + ms;
    let timer: NodeJS.Timeout;
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const arm = (left: number) => {
      timer = setTimeout(
        () => {
          const rest = until - Date.now();
          if (rest > 0 && left > MAX_TIMER_MS) return arm(rest);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.min(left, MAX_TIMER_MS),
      );
    };
    arm(ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const realClock: Clock = { now: () => Date.now(), sleep, monotonic: () => performance.now() };
