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
