/**
 * The request budget: one per process, shared by every stream. Never more than N requests start in
 * any window of the configured duration (a sliding log, safe whatever window the server counts in),
 * and a 429's Retry-After pauses everyone.
 */
import type { Rate } from '../config/duration.js';
import { AbortedError } from '../errors.js';
import { SlidingWindow } from './window.js';

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

export class RequestBudget {
  private readonly window: SlidingWindow;
  private pausedUntil = 0;
  /** How many requests were let through. */
  granted = 0;

  constructor(
    readonly rate: Rate,
    private readonly clock: Clock = realClock,
  ) {
    // A small margin (2% of the window, 10 ms to 1 s) absorbs the jitter between when we send and
    // when the server counts, so a budget equal to the server's limit draws no 429.
    const margin = Math.min(1000, Math.max(10, rate.windowMs * 0.02));
    this.window = new SlidingWindow(rate.count, rate.windowMs + margin);
  }

  /** Waits until a request may start, then counts it. */
  async acquire(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw new AbortedError();
      const now = this.clock.now();
      const wait = Math.max(this.window.waitMs(now), this.pausedUntil - now);
      if (wait <= 0) {
        this.window.record(now);
        this.granted++;
        return;
      }
      await this.clock.sleep(wait, signal);
    }
  }

  /** Holds every stream back for `ms` (after a 429). */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + ms);
  }
}
