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

/**
 * Where a request budget keeps the requests it granted, so that the next process with the same key
 * starts from them (store/budget-ledger.ts keeps it in a small SQLite file). Times are ms since the epoch.
 */
export interface RequestLedger {
  /**
   * When the recorded requests ended, for a budget of `windowMs`, those after `since`, oldest first.
   * A request of unknown end (still in flight, left in flight by a killed process, or given up on
   * without an answer) counts as ending a window of that budget after it was sent, or when it was
   * given up on if that is later: the server may count it any time until it answers.
   */
  recent(since: number, windowMs: number): number[];
  /** Records a request sent at `sentAt`, of unknown end until `end`; returns its id (negative: not recorded). */
  begin(sentAt: number): number;
  /**
   * Records the end of request `id`, sent at `sentAt`: `answered`, it ended at `at`; not (a timeout,
   * an abort, a connection lost before the answer), its end stays unknown, no earlier than `at`.
   */
  end(id: number, sentAt: number, at: number, answered: boolean): void;
}
