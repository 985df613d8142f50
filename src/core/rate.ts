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

/** A slot lent to one request of a budget of window `windowMs`; `owner` is drawn at random for it alone. */
export interface SlotLoan {
  slot: number;
  owner: number;
  windowMs: number;
}

/** A slot, or none free: the wait until one may be (ms), and whether its request is in flight (it may end sooner). */
export type SlotTake = SlotLoan | { waitMs: number; inFlight: boolean };

/** How long a take holds its slot (ms): its request may reach the server until --timeout (none: a window), and counts a window more. */
export const holdMs = (timeoutMs: number, windowMs: number): number => Math.max(timeoutMs, windowMs) + windowMs;

/**
 * The slots every process with one key shares: N rows `(key, slot, busy_until, owner)` a key, in a file of
 * the user's (store/sqlite/budget-slots.ts) or a PostgreSQL mirror (store/pg/budget-slots.ts). A take sets a free
 * row of the first `count` (made as needed) busy for a hold; an answer, until a window after it. So no
 * window of the server holds more than N of the key's requests. It tells a budget waits, never times.
 */
export interface BudgetStore {
  /** Whether `take` answers at once (a local file) rather than with a promise (a server). */
  readonly immediate: boolean;
  take(count: number, windowMs: number): SlotTake | Promise<SlotTake>;
  /** Ends a loan: `answered`, or given up on (its end unknown: busy as taken). Never throws. */
  end(loan: SlotLoan, answered: boolean): void;
  close(): void | Promise<void>;
}
