/**
 * How long the program waits on something outside it before it gives up: the defaults, and a run's
 * own through its Io (`io.waits`, read by `currentWaits()` of core/io.ts), which a test shortens so
 * that it never waits out the real lengths. Nothing else sets them: they are not settings.
 */
import { BUSY_WAIT_S } from '../errors.js';

export interface Waits {
  /** How long a SQLite statement waits for another connection's lock before SQLITE_BUSY (store/sqlite/db.ts). */
  sqliteBusyMs: number;
  /** How long a take of the request budget's file waits for another process's lock before looking again later (store/sqlite/budget-slots.ts). */
  budgetBusyMs: number;
  /**
   * How long a PostgreSQL erasure's rewrite waits for the transactions that began before it, whose
   * snapshot may still see the erased rows, to end (store/pg/rewrite.ts).
   */
  pgSnapshotMs: number;
}

/**
 * `status` and `export` read while a pull commits; a group commit and a WAL checkpoint take well
 * under a second, so ten seconds only runs out when something is truly stuck. A budget take is a
 * few rows: 50 ms is many of them, and a take that runs out looks again 25 ms later. A worker's
 * page is a transaction of a second or so; a minute is a dashboard's query left open.
 */
export const DEFAULT_WAITS: Readonly<Waits> = { sqliteBusyMs: BUSY_WAIT_S * 1000, budgetBusyMs: 50, pgSnapshotMs: 60_000 };

/** A wait in a message: `10 s`, `1.5 s`, `50 ms`. */
export function waitWords(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
}
