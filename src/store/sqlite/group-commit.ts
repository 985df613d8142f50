/**
 * Group commit. Each page is written at once in a transaction that stays open across pages; the
 * transaction commits once it holds `records` records or `bytes` of JSON, `ms` after it began (a
 * timer, so a quiet stream still commits promptly), at the end of a pass, and before the database
 * closes.
 *
 * Why: committing every page alone rewrites the scattered index pages of the random-UUID primary
 * keys on every commit, which costs more than the data itself. Grouping keeps every promise of a
 * per-page commit: a page's records and its checkpoint are in one transaction, and a crash only
 * loses work that was never committed — it is read again, never duplicated.
 *
 * A page is not wrapped in a savepoint of its own: a savepoint copies every page of the database
 * file it touches first into a statement journal (spilled to a temporary file past 64 KiB), and
 * with random-UUID keys a page of records touches hundreds of them. That cost 1.5x the floor's CPU
 * for role results (paired, process.cpuUsage, 20,000 records), more than the inserts themselves.
 * Without it, any failure while a page is written (a storage failure, a checkpoint that moved under
 * us, or anything unexpected) rolls back the whole group: its pages with their checkpoints, so they
 * stay in step.
 *
 * A failed write or commit is final for this process: the group is rolled back and every later
 * write, commit or flush throws the same StorageError without touching the database. Otherwise a
 * stream whose pages were rolled back with the group could go on from its in-memory cursor and
 * commit a checkpoint past pages that were never stored (a full disk lost records for good).
 */
import { StorageError, storageError } from '../../errors.js';
import type { Db } from './db.js';

export interface GroupLimits {
  records: number;
  bytes: number;
  ms: number;
}

// 5,000 records: each commit rewrites the scattered pages of the UUID key and the analysts' indexes
// (schema 5); fewer, larger commits cost a pull less CPU (docs/performance.md).
const DEFAULT_GROUP: GroupLimits = { records: 5000, bytes: 8 * 1024 * 1024, ms: 1000 };

/**
 * What a sink does around each commit: `before` runs inside the transaction, just before COMMIT (its
 * writes commit with the group; a throw fails it); `after` once COMMIT succeeded; `failed` when the
 * group is rolled back.
 */
export interface CommitHooks {
  before(): void;
  after(): void;
  failed(): void;
}

export class GroupCommit {
  private open = false;
  private hooks: CommitHooks | undefined;
  private records = 0;
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Set by the first failed write or commit: thrown by everything after it. */
  private broken: StorageError | undefined;

  constructor(
    private readonly db: Db,
    private readonly limits: GroupLimits = DEFAULT_GROUP,
  ) {}

  /** Sets what runs around each commit (the NDJSON manifest: store/sqlite/ndjson/manifest.ts). */
  setHooks(hooks: CommitHooks): void {
    this.hooks = hooks;
  }

  /** The failure that stopped this database's writes, if one did. */
  get failure(): StorageError | undefined {
    return this.broken;
  }

  /**
   * Runs `fn` (one page's writes) in the current group; commits the group when full. Any error `fn`
   * throws rolls back the group (this page and the uncommitted ones before it, with their
   * checkpoints) and stops every later write: a StorageError, exit 74.
   */
  write<T>(fn: () => T, records: number, bytes: number | (() => number)): T {
    this.check();
    let out: T;
    try {
      if (!this.open) {
        this.db.exec('BEGIN IMMEDIATE');
        this.open = true;
        this.timer = setTimeout(() => {
          try {
            this.commit();
          } catch {
            // Kept in `broken`: the next write, commit or flush reports it.
          }
        }, this.limits.ms);
        this.timer.unref();
      }
      out = fn();
    } catch (err) {
      throw this.failWith(err, `cannot write to ${this.db.name}`);
    }
    this.records += records;
    // A function is read after the writes: the bytes they stored.
    this.bytes += typeof bytes === 'function' ? bytes() : bytes;
    if (this.records >= this.limits.records || this.bytes >= this.limits.bytes) this.commit();
    return out;
  }

  /** Commits what the group holds (nothing to do when no group is open). */
  commit(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.check();
    if (!this.open) return;
    this.open = false;
    this.records = 0;
    this.bytes = 0;
    try {
      if (this.db.inTransaction) {
        this.hooks?.before();
        this.db.exec('COMMIT');
      }
    } catch (err) {
      throw this.failWith(err, `cannot commit to ${this.db.name}`);
    }
    this.hooks?.after();
  }

  /** Stops every later write for `err` (what failed: `what`) and returns the StorageError to throw. */
  failWith(err: unknown, what: string): StorageError {
    const wrapped = storageError(err, what);
    const failure =
      wrapped instanceof StorageError ? wrapped : new StorageError(`${what}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    this.fail(failure);
    return this.broken ?? failure;
  }

  /**
   * Stops every later write: the open group is rolled back (what it held is read again next run,
   * never half-kept), and the error is kept for whoever writes next.
   */
  fail(error: StorageError): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.broken ??= error;
    this.open = false;
    this.hooks?.failed();
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } catch {
      // SQLite may already have rolled back on its own (SQLITE_FULL does): nothing is left open.
    }
  }

  private check(): void {
    if (this.broken) throw this.broken;
  }
}
