/** A request rate (the request budget, the simulator's limit) and how durations and rates read. */

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

/** A slot a BudgetStore lent to one request; `owner` is drawn at random for that request alone. */
export interface SlotLoan {
  slot: number;
  owner: number;
}

/**
 * What asking a BudgetStore for a slot gave: one, or none free, with how long until one may be (ms)
 * and whether one of those busy is still in flight (its answer may free it sooner: look again soon).
 */
export type SlotTake = SlotLoan | { waitMs: number; inFlight: boolean };

/**
 * The slots every process with one key shares (store/budget-slots.ts in a file of the user's,
 * store/pg/budget-slots.ts in a PostgreSQL mirror): N per key, each busy from a request's send until a
 * window after its end. Its times are its own clock's; what it tells a budget is a wait, never a time.
 */
export interface BudgetStore {
  /** Whether `take` answers at once (a local file) rather than with a promise (a server). */
  readonly immediate: boolean;
  /** Takes one of the key's first `count` slots, for a budget of window `windowMs`, if one is free now. */
  take(count: number, windowMs: number): SlotTake | Promise<SlotTake>;
  /** Ends a loan: `answered`, its slot is busy until a window from now; not, as a request of unknown end. Never throws. */
  end(loan: SlotLoan, answered: boolean): void;
  close(): void | Promise<void>;
}
