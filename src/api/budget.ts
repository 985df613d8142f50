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
 * Cost: each slot idles for one response time per window (docs/performance.md).
 * A 429's Retry-After pauses everyone.
 *
 * Across processes: with a BudgetStore (core/rate.ts), a request also takes one of the key's slots
 * there, which every process with the key shares, by the same rule; so back-to-back cron runs, a
 * restarted watch, two processes at once on different databases and (PostgreSQL) workers on different
 * hosts stay within the rate together. The store counts by the stricter of the limits its processes
 * were given (core/rate.ts stricterRate), so one given a looser --rate-limit keeps to the others' and
 * says so once (`onLimit`). The process's own slots still bound it alone, on the monotonic clock,
 * whatever the store's clock does. A slot the store lent is used within SEND_WITHIN_MS of asking for
 * it, or given back: the store holds an unanswered request's slot from the take for that long plus
 * its --timeout, and a request sent later would reach the server after its slot stopped counting it.
 */
import { type Clock, realClock } from '../core/clock.js';
import { type BudgetStore, paddedWindow, type Rate, SEND_WITHIN_MS, type SlotLoan, type SlotTake, sameRate } from '../core/rate.js';
import { AbortedError } from '../errors.js';

/**
 * Ends a request's hold on its slot; call when the response has ended (or failed). `answered`
 * false: no answer came (a timeout, an abort, a connection lost), so the server may still count the
 * request later; its slot is held as one of unknown end, a window after it was sent at the earliest.
 */
export type Release = (answered?: boolean) => void;

/** One of this process's slots taken for a request: never used yet, or free since `end` (monotonic). */
type Held = { unused: true } | { unused: false; end: number };

export class RequestBudget {
  /** Slots never used yet. */
  private unused: number;
  /**
   * End times of the free slots, oldest first, so the oldest free slot is at the head. Releases come
   * in time order and are appended (O(1) per request), but for a request given up on, whose slot ends
   * a window after it was sent: a release earlier than that goes in before it (`release`), or every
   * slot freed meanwhile waited behind it.
   */
  private readonly free: number[] = [];
  private head = 0;
  private readonly windowMs: number;
  private pausedUntil = 0;
  /** Until when (monotonic) the store said none of the key's slots is free. */
  private storeNext = 0;
  /** Whether the store's agreed limit was told (once: `onLimit`). */
  private told = false;
  /** The limit the store last said the key's processes keep to. */
  private agreed: Rate | undefined;
  /** Those sleeping until a slot comes round: woken when a request ends, since its slot may come round sooner. */
  private readonly dozing = new Set<AbortController>();
  /** Wakes waiters when a slot whose request was in flight becomes free. */
  private waiters: Array<() => void> = [];
  /**
   * The clock the slots are timed on: monotonic, so a wall clock set back during a run (NTP, a
   * resumed VM) does not make every free slot look a step's length in the future (a pull stopped for
   * the minute the clock went back).
   */
  private readonly tick: () => number;

  constructor(
    readonly rate: Rate,
    private readonly clock: Clock = realClock,
    private readonly store?: BudgetStore,
    /** Told once when the store counts this key by a limit other than `rate` (another process's stricter one). */
    private readonly onLimit?: (agreed: Rate) => void,
  ) {
    this.unused = rate.count;
    this.tick = clock.monotonic === undefined ? () => clock.now() : () => (clock.monotonic as () => number)();
    this.windowMs = paddedWindow(rate.windowMs);
  }

  /**
   * Takes a slot at once if one is free now, without yielding, so a request can be dispatched in
   * the same tick it is asked for (the sync engine relies on it to overlap fetching and storing).
   * A store on a server answers with a promise: then always undefined, and `acquire` asks.
   */
  tryAcquire(): Release | undefined {
    const now = this.tick();
    if (this.pausedUntil > now || (this.store !== undefined && !this.store.immediate)) return undefined;
    const held = this.reserve(now);
    if (held === undefined) return undefined;
    return this.settle(held, this.store?.take(this.rate) as SlotTake | undefined, now, now);
  }

  /** Waits until a request may be sent, then holds a slot for it until `release()`. */
  async acquire(signal?: AbortSignal): Promise<Release> {
    for (;;) {
      if (signal?.aborted) throw new AbortedError();
      const now = this.tick();
      const held = this.pausedUntil > now || this.storeNext > now ? undefined : this.reserve(now);
      if (held !== undefined) {
        let taken: SlotTake | undefined;
        try {
          taken = await this.store?.take(this.rate);
        } catch (err) {
          // A store that cannot be reached: nothing is sent.
          this.unreserve(held);
          throw err;
        }
        const release = this.settle(held, taken, now, this.tick());
        if (release) return release;
        if (signal?.aborted) throw new AbortedError();
        // Given back (asked for too long ago): asked again at once.
        if (this.storeNext <= this.tick()) continue;
      } else if (this.pausedUntil <= now && this.unused === 0 && this.head === this.free.length) {
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
      await this.doze(Math.max(1, this.waitEstimate()), signal);
    }
  }

  /** Takes the oldest of this process's slots free at `now` (an unused one first), if any. */
  private reserve(now: number): Held | undefined {
    if (this.unused > 0) {
      this.unused--;
      return { unused: true };
    }
    const end = this.free[this.head];
    if (end === undefined || end + this.windowMs > now) return undefined;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.free.length) {
      this.free.splice(0, this.head);
      this.head = 0;
    }
    return { unused: false, end };
  }

  /** Gives back a slot reserved for a request that was not sent. */
  private unreserve(held: Held): void {
    if (held.unused) this.unused++;
    else this.release(held.end);
  }

  /**
   * A request sent on `held` (at `sent`, monotonic) if the store lent a slot too (`taken`, asked for at
   * `asked`; no store: none needed). A slot lent longer than SEND_WITHIN_MS after it was asked for (the
   * process frozen or starved meanwhile) is given back unused: the store's hold of an unanswered
   * request counts from its take.
   */
  private settle(held: Held, taken: SlotTake | undefined, asked: number, sent: number): Release | undefined {
    if (taken?.limit !== undefined) {
      this.agreed = taken.limit;
      if (!this.told && !sameRate(taken.limit, this.rate)) {
        this.told = true;
        this.onLimit?.(taken.limit);
      }
    }
    if (taken !== undefined && 'waitMs' in taken) {
      this.unreserve(held);
      this.storeNext = sent + taken.waitMs;
      return undefined;
    }
    const loan: SlotLoan | undefined = taken;
    if (loan !== undefined && sent - asked > SEND_WITHIN_MS) {
      // Never sent: its slot is free a window from now, the earliest an answer could have freed it.
      this.store?.end(loan, true);
      this.unreserve(held);
      return undefined;
    }
    let released = false;
    return (answered = true) => {
      if (released) return;
      released = true;
      if (loan !== undefined) this.store?.end(loan, answered);
      // Given up on, it may still reach the server: it counts as ending a window after it was sent
      // (the rule for a request a killed process left in flight), or now if that is later.
      const now = this.tick();
      this.release(answered ? now : Math.max(now, sent + this.windowMs));
      const woken = this.waiters;
      this.waiters = [];
      for (const w of woken) w();
      for (const d of this.dozing) d.abort();
      this.dozing.clear();
    };
  }

  /**
   * Sleeps `ms`, or until a request ends: a slot it frees may come round before the one this sleep
   * was timed for (one given up on holds its slot a window longer), and a waiter that slept on
   * through it left the slot idle for up to a window.
   */
  private async doze(ms: number, signal: AbortSignal | undefined): Promise<void> {
    const wake = new AbortController();
    const onAbort = () => wake.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.dozing.add(wake);
    try {
      await this.clock.sleep(ms, wake.signal);
    } catch (err) {
      if (signal?.aborted || !wake.signal.aborted) throw err;
    } finally {
      this.dozing.delete(wake);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Puts a slot that ended at `end` back in the free queue, in order. */
  private release(end: number): void {
    const free = this.free;
    if (free.length === this.head || (free[free.length - 1] as number) <= end) {
      free.push(end);
      return;
    }
    // Before the ends of requests given up on, a window after they were sent.
    let i = free.length;
    while (i > this.head && (free[i - 1] as number) > end) i--;
    free.splice(i, 0, end);
  }

  /**
   * About how long a request asked for now would wait: until the pause ends, the oldest free slot
   * comes round, or the store's next chance; 0 when a slot is free now or every slot is in flight
   * (its end is unknown).
   */
  waitEstimate(): number {
    const now = this.tick();
    const oldest = this.free[this.head];
    const own = this.unused > 0 || oldest === undefined ? 0 : oldest + this.windowMs - now;
    return Math.max(0, this.pausedUntil - now, own, this.storeNext - now);
  }

  /**
   * The limit this budget keeps to: the one the store last said the key's processes agree on (another
   * process's stricter one), else its own (none said yet, or no store). Watch plans its passes by it.
   */
  get keptRate(): Rate {
    return this.agreed ?? this.rate;
  }

  /** Holds every stream back for `ms` (after a 429). */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.tick() + ms);
  }
}
