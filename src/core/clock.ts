/** Time, injectable so tests can run the budget, retries and watch on a fake clock. */
import { AbortedError } from '../errors.js';

/** Time source and sleep, injectable so tests can use a fake clock. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Sleeps `ms`, cut short by the signal (rejects with AbortedError). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const realClock: Clock = { now: () => Date.now(), sleep };
