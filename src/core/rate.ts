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
 * Other processes' recent requests with the same key and service, as a budget of one window sees
 * them when it last asked: until when each holds a slot (ms since the epoch), ascending, those that
 * still did then. A request holds its slot a window after it ended; one of unknown end (left in
 * flight by a killed process, given up on without an answer) a window after the later of its give-up
 * and a window after its send: the server may count it any time until it answers.
 */
export interface OtherRequests {
  holds: readonly number[];
  /**
   * The latest of `holds` of those still in flight (-Infinity: none): their answers may come sooner
   * than `holds` says, and free their slots sooner.
   */
  inFlightUntil: number;
  /** The ledger is locked by another process or program: wait a moment and ask again. */
  locked: boolean;
}

/** How often a budget asks the ledger again while it is locked (OtherRequests.locked). */
export const LOCK_RETRY_MS = 25;

/**
 * Where every process's request budget records the requests it sends, so that processes with the
 * same key, one after another or at the same time, stay within the rate together
 * (store/budget-ledger.ts keeps it in a small SQLite file). Times are ms since the epoch.
 */
export interface RequestLedger {
  /**
   * Calls `take` with the other processes' requests (read again only when one of them has written
   * since: cheap otherwise) and, when it says yes, records a request of this process sent at
   * `sentAt`, both under the ledger's write lock, so that two processes cannot both take the last
   * slot. Returns the request's id (negative: sent, but not recorded), or undefined when `take`
   * declined. `windowMs`: the window of the asking budget. Never throws: the ledger is advisory.
   */
  reserve(sentAt: number, windowMs: number, take: (others: OtherRequests) => boolean): number | undefined;
  /**
   * Records the end of request `id`, sent at `sentAt`: `answered`, it ended at `at`; not (a timeout,
   * an abort, a connection lost before the answer), its end stays unknown, no earlier than `at`.
   */
  end(id: number, sentAt: number, at: number, answered: boolean): void;
}
