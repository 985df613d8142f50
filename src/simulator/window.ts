import { formatRate, type Rate } from '../core/rate.js';
import { UsageError } from '../errors.js';

/**
 * The most requests a window may allow: the log keeps one 8-byte time per allowed request, so this
 * bounds it at 8 MB. A million a window is far beyond any service's per-key budget, and a limit that
 * large is better spelled `--rate-limit off`.
 */
export const MAX_WINDOW_COUNT = 1_000_000;

/** Refuses a rate limit whose log would not fit in memory (exit 2, naming the bound). */
export function checkRateLimit(rate: Rate, flag = '--rate-limit'): void {
  if (rate.count <= MAX_WINDOW_COUNT) return;
  throw new UsageError(
    `${flag}: ${formatRate(rate)} allows more than ${MAX_WINDOW_COUNT} requests a window, the most the simulator counts; use a lower count or --rate-limit off`,
  );
}

/**
 * A sliding-window log of the last `count` request times. At most `count` events fall in any
 * interval of `windowMs`: the strictest reading of "N per duration", so a client that respects it
 * is safe whether the server counts in fixed, sliding or token-bucket windows.
 */
export class SlidingWindow {
  private readonly times: Float64Array;
  private next = 0;

  constructor(
    readonly count: number,
    readonly windowMs: number,
  ) {
    checkRateLimit({ count, windowMs });
    this.times = new Float64Array(count).fill(Number.NEGATIVE_INFINITY);
  }

  /** Milliseconds until another event may happen at `now` (0: now). */
  waitMs(now: number): number {
    // The slot we would overwrite holds the oldest of the last `count` events.
    const oldest = this.times[this.next] as number;
    return Math.max(0, oldest + this.windowMs - now);
  }

  /** Records an event at `now`; call only when waitMs(now) is 0. */
  record(now: number): void {
    this.times[this.next] = now;
    this.next = (this.next + 1) % this.count;
  }
}
