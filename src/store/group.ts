/**
 * Group commit. Each page is written at once, atomically, in a savepoint of a transaction that
 * stays open across pages; the transaction commits once it holds `records` records or `bytes` of
 * JSON, `ms` after it began (a timer, so a quiet stream still commits promptly), at the end of a
 * pass, and before the database closes.
 *
 * Why: committing every page alone rewrites the scattered index pages of the random-UUID primary
 * keys on every commit, which costs more than the data itself. Grouping keeps every promise of a
 * per-page commit: a page's records and its checkpoint are in one transaction, and a crash only
 * loses work that was never committed — it is read again, never duplicated.
 */
import type { Db } from './db.js';

export interface GroupLimits {
  records: number;
  bytes: number;
  ms: number;
}

export const DEFAULT_GROUP: GroupLimits = { records: 1000, bytes: 2 * 1024 * 1024, ms: 1000 };

export class GroupCommit {
  private open = false;
  private records = 0;
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  /** A commit made by the timer that failed: reported by the next write or commit. */
  private deferred: unknown;

  constructor(
    private readonly db: Db,
    private readonly limits: GroupLimits = DEFAULT_GROUP,
  ) {}

  /** Runs `fn` (one page's writes) atomically in the current group; commits the group when full. */
  write<T>(fn: () => T, records: number, bytes: number): T {
    this.rethrow();
    if (!this.open) {
      this.db.exec('BEGIN IMMEDIATE');
      this.open = true;
      this.timer = setTimeout(() => {
        try {
          this.commit();
        } catch (err) {
          this.deferred = err;
        }
      }, this.limits.ms);
      this.timer.unref();
    }
    // Inside an open transaction better-sqlite3 runs this as a savepoint: all of it or none.
    const out = this.db.transaction(fn)();
    this.records += records;
    this.bytes += bytes;
    if (this.records >= this.limits.records || this.bytes >= this.limits.bytes) this.commit();
    return out;
  }

  /** Commits what the group holds (nothing to do when no group is open). */
  commit(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.rethrow();
    if (!this.open) return;
    this.open = false;
    this.records = 0;
    this.bytes = 0;
    try {
      if (this.db.inTransaction) this.db.exec('COMMIT');
    } catch (err) {
      // A failed COMMIT (a full disk…) may leave the transaction open: roll it back, so nothing
      // half-done stays and the next group starts clean. What it held is read again next time.
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  private rethrow(): void {
    if (this.deferred === undefined) return;
    const err = this.deferred;
    this.deferred = undefined;
    throw err;
  }
}
