/**
 * The request budget: one per process, shared by every stream.
 *
 * Guarantee: the server never sees more than N requests in any window of the configured duration,
 * whatever kind of window it counts in and however the network delays requests. There are N slots;
 * a request holds a slot from when it is sent until its response ends, and a slot is reused only a
 * full window after its last request ended. A request reaches the server between being sent and its
 * response ending, so two requests on one slot arrive at least a window apart; among any N + 1
 * requests two share a slot, so no window holds more than N. A server-side count at arrival can
 * never be exceeded by latency jitter, which a log of send times alone cannot promise.
 *
 * Cost: each slot idles for one response time per window, e.g. 10 ms per second (1%) at 20/1s.
 * A 429's Retry-After pauses everyone.
 *
 * Across processes: with a ledger (core/rate.ts), the budget starts from the requests the previous
 * processes with the same key made within the window (their slots are busy until a window after
 * they ended) and records its own as it goes, so back-to-back cron runs or a restarted watch stay
 * within the rate together.
 */
import { type Clock, realClock } from '../core/clock.js';
import type { Rate, RequestLedger } from '../core/rate.js';
import { AbortedError } from '../errors.js';

/**
 * Ends a request's hold on its slot; call when the response has ended (or failed). `answered`
 * false: no answer came (a timeout, an abort, a connection lost), so the server may still count the
 * request later; its slot is held as one of unknown end, a window after it was sent at the earliest.
 */
export type Release = (answered?: boolean) => void;

export class RequestBudget {
  /** Slots never used yet. */
  private unused: number;
  /**
   * End times of the free slots, oldest first, so the oldest free slot is at the head. This
   * process's releases come in time order and are appended (O(1) per request); an earlier process's
   * request still in flight came from the ledger with a provisional end in the future, and a release
   * earlier than it goes in before it (`release`), or every slot freed meanwhile waited behind it.
   */
  private readonly free: number[] = [];
  private head = 0;
  private readonly windowMs: number;
  private pausedUntil = 0;
  /** Wakes waiters when a slot whose request was in flight becomes free. */
  private waiters: Array<() => void> = [];
  /**
   * The clock the slots are timed on: monotonic, so a wall clock set back during a run (NTP, a
   * resumed VM) does not make every free slot look a step's length in the future (a pull stopped for
   * the minute the clock went back). The ledger shares times with other processes, so it gets wall
   * times (`clock.now()`), converted at the edges.
   */
  private readonly tick: () => number;

  constructor(
    readonly rate: Rate,
    private readonly clock: Clock = realClock,
    private readonly ledger?: RequestLedger,
  ) {
    this.unused = rate.count;
    this.tick = clock.monotonic === undefined ? () => clock.now() : () => (clock.monotonic as () => number)();
    // A hair of margin for servers that round their clock.
    this.windowMs = rate.windowMs + Math.min(100, Math.ceil(rate.windowMs * 0.002));
    if (ledger) {
      // The last `count` requests of earlier processes hold their slots as if they were ours. An end
      // later than a window from now (an earlier process's longer window, or a clock set back since)
      // holds its slot one window from now, never longer: a row dated a year ahead had every later
      // run wait a year. Clamping keeps the order (the ledger's is ascending).
      const wall = this.clock.now();
      const tick = this.tick();
      const ends = ledger.recent(wall - this.windowMs, this.windowMs).slice(-rate.count);
      for (const end of ends) this.free.push(Math.min(end - wall, this.windowMs) + tick);
      this.unused -= ends.length;
    }
  }

  /**
   * Takes a slot at once if one is free now, without yielding, so a request can be dispatched in
   * the same tick it is asked for (the sync engine relies on it to overlap fetching and storing).
   */
  tryAcquire(): Release | undefined {
    const now = this.tick();
    if (this.pausedUntil > now) return undefined;
    if (this.unused > 0) {
      this.unused--;
      return this.grant();
    }
    if (this.head < this.free.length && (this.free[this.head] as number) + this.windowMs <= now) return this.takeFree();
    return undefined;
  }

  /** Waits until a request may be sent, then holds a slot for it until `release()`. */
  async acquire(signal?: AbortSignal): Promise<Release> {
    for (;;) {
      if (signal?.aborted) throw new AbortedError();
      const ready = this.tryAcquire();
      if (ready) return ready;
      const now = this.tick();
      const pause = this.pausedUntil - now;
      if (this.unused === 0 && this.head === this.free.length) {
        // Every slot is in flight: wait for one to end.
        await new Promise<void>((resolve, reject) => {
          const onAbort = () => reject(new AbortedError());
          signal?.addEventListener('abort', onAbort, { once: true });
          this.waiters.push(() => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          });
        });
        continue;
      }
      const oldest = this.unused > 0 ? Number.NEGATIVE_INFINITY : (this.free[this.head] as number);
      await this.clock.sleep(Math.max(1, oldest + this.windowMs - now, pause), signal);
    }
  }

  private takeFree(): Release {
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.free.length) {
      this.free.splice(0, this.head);
      this.head = 0;
    }
    return this.grant();
  }

  private grant(): Release {
    let released = false;
    const sentWall = this.clock.now();
    const sent = this.tick();
    // A process killed with the request in flight leaves it in the ledger as one of unknown end.
    const id = this.ledger?.begin(sentWall);
    return (answered = true) => {
      if (released) return;
      released = true;
      if (id !== undefined) this.ledger?.end(id, sentWall, this.clock.now(), answered);
      // Given up on, it may still reach the server: it counts as ending a window after it was sent
      // (the rule for a request a killed process left in flight), or now if that is later.
      const now = this.tick();
      this.release(answered ? now : Math.max(now, sent + this.windowMs));
      const woken = this.waiters;
      this.waiters = [];
      for (const w of woken) w();
    };
  }

  /** Puts a slot that ended at `end` back in the free queue, in order. */
  private release(end: number): void {
    const free = this.free;
    if (free.length === this.head || (free[free.length - 1] as number) <= end) {
      free.push(end);
      return;
    }
    // Before the provisional ends of earlier processes' requests (at most `count` of them).
    let i = free.length;
    while (i > this.head && (free[i - 1] as number) > end) i--;
    free.splice(i, 0, end);
  }

  /**
   * About how long a request asked for now would wait: until the pause ends or the oldest free slot
   * comes round; 0 when a slot is free now or every slot is in flight (its end is unknown).
   */
  waitEstimate(): number {
    const now = this.tick();
    const pause = this.pausedUntil - now;
    let slot = 0;
    if (this.unused === 0 && this.head < this.free.length) slot = (this.free[this.head] as number) + this.windowMs - now;
    return Math.max(0, pause, slot);
  }

  /** Holds every stream back for `ms` (after a 429). */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.tick() + ms);
  }
}
