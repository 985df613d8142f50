/**
 * Reading one table in rowid ranges inside one read transaction, so every range comes from the same
 * snapshot of the database whatever a concurrent pull commits meanwhile: SQLite gives a read
 * transaction the database as of its first read (CSV export, export/csv-table.ts).
 */
import type { Db } from './db.js';

/** The page cache of a range reader's connection, in KiB as SQLite takes it (negative: a size, not pages). */
export const READ_CACHE_KIB = -2000;

export class RangeReader {
  private readonly stmt;
  private readonly batchStmt;
  private open = false;

  /**
   * @param sql a SELECT ending in `rowid >= ? AND rowid <= ?` whose last column is the rowid
   * @param params the values of its other parameters, before the two bounds
   * @param batchSql the rows of a rowid range as one blob, its row count and its last rowid, bound alike (store/sqlite/export-sql.ts batchQuery)
   */
  constructor(
    private readonly db: Db,
    sql: string,
    private readonly params: readonly unknown[],
    batchSql?: string,
  ) {
    this.stmt = db.prepare(sql).raw(true).safeIntegers(true);
    this.batchStmt = batchSql === undefined ? undefined : db.prepare(batchSql).raw(true).safeIntegers(true);
  }

  /** Whether the reader has batches (a batch SQL was given). */
  get hasBatches(): boolean {
    return this.batchStmt !== undefined;
  }

  /**
   * The first `limit` rows whose rowid is in [from, to] (both included) as one blob (null for none),
   * how many, and the last one's rowid.
   */
  batch(from: bigint, to: bigint, limit: number): { bytes: Buffer | null; rows: number; last: bigint | null } {
    if (this.batchStmt === undefined) throw new Error('RangeReader: no batch SQL');
    const [bytes, rows, last] = this.batchStmt.get(...this.params, from, to, limit) as [Buffer | null, bigint, bigint | null];
    return { bytes, rows: Number(rows), last };
  }

  /** Opens the read transaction: its snapshot is the database as of the first batch or rows read. */
  begin(): void {
    // A range is read once, front to back: pages are not read again, so SQLite's page cache only has
    // to hold a B-tree path. better-sqlite3's default (16 MB) was filled page by page regardless, each
    // a fresh page of memory: 2 MB makes export faster and smaller (docs/performance.md).
    this.db.pragma(`cache_size = ${READ_CACHE_KIB}`);
    this.db.exec('BEGIN');
    this.open = true;
  }

  /** The rows whose rowid is in [lo, hi), in rowid order; each row ends with its rowid. */
  rows(lo: bigint, hi: bigint): IterableIterator<unknown[]> {
    // The SQL's upper bound is inclusive (store/sqlite/export-sql.ts exportRangeQuery).
    return this.stmt.iterate(...this.params, lo, hi - 1n) as IterableIterator<unknown[]>;
  }

  /** Ends the read transaction (every iterator must be finished); never throws. */
  end(): void {
    if (!this.open) return;
    this.open = false;
    try {
      this.db.exec('COMMIT');
    } catch {
      // A read transaction has nothing to lose; closing the connection ends it anyway.
    }
  }
}
