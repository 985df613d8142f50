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
 * Across processes: with a ledger (core/rate.ts), every request is recorded, and a request is sent
 * only while this process's busy slots and the other processes' (their requests within a window of
 * ending, or in flight) number fewer than N, checked and recorded under the ledger's lock. The proof
 * above needs no slot identities: among any N + 1 requests arriving in one window, the last one sent
 * found the N others busy when it was sent. So back-to-back cron runs, a restarted watch and two
 * processes running at the same time on different databases stay within the rate together.
 */
import { type Clock, realClock } from '../core/clock.js';
import { LOCK_RETRY_MS, type OtherRequests, type Rate, type RequestLedger } from '../core/rate.js';
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
   * End times of the free slots, oldest first, so the oldest free slot is at the head. Releases come
   * in time order and are appended (O(1) per request), but for a request given up on, whose slot ends
   * a window after it was sent: a release earlier than that goes in before it (`release`), or every
   * slot freed meanwhile waited behind it.
   */
  private readonly free: number[] = [];
  private head = 0;
  private readonly windowMs: number;
  private pausedUntil = 0;
  /** The other processes' requests, as the ledger last showed them (for waits). */
  private others: OtherRequests | undefined;
  /** Those sleeping until a slot comes round: woken when a request ends, since its slot may come round sooner. */
  private readonly dozing = new Set<AbortController>();
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
  }

  /**
   * Takes a slot at once if one is free now, without yielding, so a request can be dispatched in
   * the same tick it is asked for (the sync engine relies on it to overlap fetching and storing).
   */
  tryAcquire(): Release | undefined {
    const now = this.tick();
    if (this.pausedUntil > now) return undefined;
    const ledger = this.ledger;
    if (ledger === undefined) {
      const slot = this.pick(now, 0);
      return slot === undefined ? undefined : this.grant(slot, undefined, this.clock.now(), now);
    }
    const wall = this.clock.now();
    let slot: Slot | undefined;
    const id = ledger.reserve(wall, this.windowMs, (others) => {
      this.others = others;
      slot = others.locked ? undefined : this.pick(now, busyAfter(others.holds, wall));
      return slot !== undefined;
    });
    return slot === undefined ? undefined : this.grant(slot, id, wall, now);
  }

  /**
   * Which of this process's slots a request may take now, when the other processes hold `busy`:
   * one only while ours that are free (never used, or come round) outnumber theirs, so that ours in
   * use and theirs stay under N together. An unused slot first: the free ones keep their order.
   */
  private pick(now: number, busy: number): Slot | undefined {
    if (this.unused > busy) return 'unused';
    let ready = this.unused;
    for (let i = this.head; i < this.free.length && ready <= busy; i++) {
      if ((this.free[i] as number) + this.windowMs > now) break;
      ready++;
    }
    if (ready <= busy) return undefined;
    return this.unused > 0 ? 'unused' : 'free';
  }

  /**
   * When a slot may next be free (on the monotonic clock): the next of ours to come round, or the
   * next of the other processes' to stop holding one, whichever is sooner; no later than POLL_MS
   * from now while one of theirs is in flight, whose end may come sooner than counted (`poll`), or
   * LOCK_RETRY_MS while the ledger is locked.
   */
  private nextChance(now: number, poll = true): number {
    let next = Number.POSITIVE_INFINITY;
    for (let i = this.head; i < this.free.length; i++) {
      const due = (this.free[i] as number) + this.windowMs;
      if (due > now) {
        next = due;
        break;
      }
    }
    const others = this.others;
    if (others?.locked) return now + LOCK_RETRY_MS;
    if (others !== undefined && others.holds.length > 0) {
      const wall = this.clock.now();
      const first = others.holds.length - busyAfter(others.holds, wall);
      if (first < others.holds.length) next = Math.min(next, (others.holds[first] as number) - wall + now);
      if (poll && others.inFlightUntil > wall) next = Math.min(next, now + POLL_MS);
    }
    return Number.isFinite(next) ? next : now + POLL_MS;
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
      await this.doze(Math.max(1, this.nextChance(now) - now, pause), signal);
    }
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

  /** Takes `slot` for a request sent now (`sentWall`, `sent` on the monotonic clock), recorded in the ledger as `id`. */
  private grant(slot: Slot, id: number | undefined, sentWall: number, sent: number): Release {
    if (slot === 'unused') this.unused--;
    else {
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.free.length) {
        this.free.splice(0, this.head);
        this.head = 0;
      }
    }
    let released = false;
    // A process killed with the request in flight leaves it in the ledger as one of unknown end.
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
      for (const d of this.dozing) d.abort();
      this.dozing.clear();
    };
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
   * About how long a request asked for now would wait: until the pause ends or the oldest free slot
   * comes round; 0 when a slot is free now or every slot is in flight (its end is unknown).
   */
  waitEstimate(): number {
    const now = this.tick();
    const pause = this.pausedUntil - now;
    let slot = 0;
    const others = this.others === undefined ? 0 : busyAfter(this.others.holds, this.clock.now());
    const allInFlight = this.unused === 0 && this.head === this.free.length;
    // Behind another process's request in flight, the wait is until its hold ends at most: said so, not the next look.
    if (!allInFlight && (this.others?.locked || this.pick(now, others) === undefined)) slot = this.nextChance(now, false) - now;
    return Math.max(0, pause, slot);
  }

  /** Holds every stream back for `ms` (after a 429). */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.tick() + ms);
  }
}

/** A slot never used yet, or the oldest free one. */
type Slot = 'unused' | 'free';

/**
 * How often a budget waiting on another process's request in flight looks again: its end, once
 * answered, may free the slot sooner than a window after it was sent.
 */
const POLL_MS = 50;

/** How many of `holds` (ascending) are later than `now`: the slots they hold then. */
function busyAfter(holds: readonly number[], now: number): number {
  let lo = 0;
  let hi = holds.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((holds[mid] as number) > now) hi = mid;
    else lo = mid + 1;
  }
  return holds.length - lo;
}
