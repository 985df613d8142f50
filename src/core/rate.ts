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
  /** End times (or provisional ends, for requests still in flight) of the requests that ended after `since`, oldest first. */
  recent(since: number): number[];
  /** Records a request sent now that holds its slot until `until` at most (if the process dies with it in flight). */
  begin(until: number): number;
  /** Records when the request `id` ended. */
  end(id: number, at: number): void;
}
