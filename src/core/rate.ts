/** A request rate (the request budget, the simulator's limit), how durations and rates read, and the budget's slots. */

/** A request budget: at most `count` requests in any window of `windowMs`. */
export interface Rate {
  count: number;
  windowMs: number;
}

export function formatRate(rate: Rate): string {
  return `${rate.count}/${formatDuration(rate.windowMs)}`;
}

export function formatDuration(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** A slot lent to one request of a budget of window `windowMs`; `owner` is drawn at random for that request alone. */
export interface SlotLoan {
  slot: number;
  owner: number;
  windowMs: number;
}

/** A slot, or none free: how long until one may be (ms), and whether it is held by a request in flight (it may end sooner). */
export type SlotTake = SlotLoan | { waitMs: number; inFlight: boolean };

/**
 * How long a take holds its slot (ms): a request left in flight (its process killed) may reach the
 * server until it times out (with no --timeout, a window), and counts a window after that.
 */
export const holdMs = (timeoutMs: number, windowMs: number): number => Math.max(timeoutMs, windowMs) + windowMs;

/**
 * The slots every process with one key shares: N rows per key `(key, slot, busy_until, owner)`, in a
 * file of the user's (store/budget-slots.ts) or in a PostgreSQL mirror (store/pg/budget-slots.ts).
 * A take sets a row with `busy_until <= now` (one of the first `count`; rows are made as needed) to
 * now plus a hold; an end sets it to a window after the answer (no answer: a window after the later
 * of now and a window after its send). So a row is busy from its request's send until a window after
 * the server saw it, and no window holds more than N of the key's requests. Times are the store's
 * clock's: what it tells a budget is a wait, never a time.
 */
export interface BudgetStore {
  /** Whether `take` answers at once (a local file) rather than with a promise (a server). */
  readonly immediate: boolean;
  take(count: number, windowMs: number): SlotTake | Promise<SlotTake>;
  /** Ends a loan: `answered`, or given up on (its end unknown). Never throws. */
  end(loan: SlotLoan, answered: boolean): void;
  close(): void | Promise<void>;
}
