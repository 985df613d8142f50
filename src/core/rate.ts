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

/**
 * A request budget's window with a hair of margin for servers that round their clock: what the slots
 * count in (api/budget.ts and the stores), never what people are told.
 */
export const paddedWindow = (windowMs: number): number => windowMs + Math.min(100, Math.ceil(windowMs * 0.002));

/**
 * The limit every process with one key keeps to when their `--rate-limit`s differ: the smaller count in
 * the longer window, which keeps both (any window of either length holds no more than either count).
 * Rates with one window or one count give the stricter of the two exactly (20/5s over 20/1s, 60/1m over
 * 100/1m); others (100/1m and 10/1s give 10/1m) are kept by a budget slower than both, the safe side of
 * a limit nobody can say which of the two the service counts by.
 */
export function stricterRate(a: Rate, b: Rate): Rate {
  return { count: Math.min(a.count, b.count), windowMs: Math.max(a.windowMs, b.windowMs) };
}

/** Whether two rates are the same limit. */
export const sameRate = (a: Rate, b: Rate): boolean => a.count === b.count && a.windowMs === b.windowMs;

/**
 * How long a process's limit binds the others with its key (ms) after it last said it keeps to it: it
 * says so at each take and every third of this while it lives (a watch idle between passes included),
 * so a stricter limit lapses this long after its last process stopped, frozen or was killed.
 */
export const LIMIT_LIFE_MS = 60_000;

/** A slot lent to one request of a budget of window `windowMs`; `owner` is drawn at random for it alone. */
export interface SlotLoan {
  slot: number;
  owner: number;
  /** The padded window the slot is held for after the answer: the key's agreed limit's, when the take lent it. */
  windowMs: number;
  /** The limit the key's processes agreed on at the take (the stricter of theirs: stricterRate), unpadded. */
  limit?: Rate | undefined;
}

/**
 * A slot, or none free: the wait until one may be (ms: the soonest a busy slot can be free, a request in
 * flight counted as answered now), with the key's agreed limit.
 */
export type SlotTake = SlotLoan | { waitMs: number; limit?: Rate | undefined };

/**
 * How long after its take a request may still be sent on its slot (ms): a process frozen (SIGSTOP, a
 * suspended VM) or starved between the take's answer and the send gives the slot back and takes another
 * (api/budget.ts), so a request never leaves after the hold below stopped counting it.
 */
export const SEND_WITHIN_MS = 5_000;

/**
 * How long a take holds its slot (ms): its request is sent within SEND_WITHIN_MS of the take, may reach
 * the server until --timeout after that (none: a window), and counts a window more.
 */
export const holdMs = (timeoutMs: number, windowMs: number): number => SEND_WITHIN_MS + Math.max(timeoutMs, windowMs) + windowMs;

/**
 * The slots every process with one key shares: N rows `(key, slot, busy_until, owner)` a key, in a file of
 * the user's (store/sqlite/budget-slots.ts) or a PostgreSQL mirror (store/pg/budget-slots.ts). A take sets a free
 * row of the first `count` (made as needed) busy for a hold; an answer, until a window after it. So no
 * window of the server holds more than N of the key's requests. Beside the rows, each live process's
 * limit: a take counts by the stricter of them all (stricterRate), and takes nothing while as many rows
 * are busy as that count allows, whichever rows they are (a count that shrank leaves rows past it busy
 * for a while). It tells a budget waits, never times.
 */
export interface BudgetStore {
  /** Whether `take` answers at once (a local file) rather than with a promise (a server). */
  readonly immediate: boolean;
  /** A slot for a request of a process whose own limit is `rate` (unpadded). */
  take(rate: Rate): SlotTake | Promise<SlotTake>;
  /** Ends a loan: `answered`, or given up on (its end unknown: busy as taken). Never throws. */
  end(loan: SlotLoan, answered: boolean): void;
  close(): void | Promise<void>;
}
