/**
 * Reading one table in rowid ranges inside one read transaction, so every range comes from the same
 * snapshot of the database whatever a concurrent pull commits meanwhile; and the check that lets a
 * second connection (export's helper thread) share that snapshot.
 *
 * SQLite gives each read transaction the database as of its first read. Two connections read the
 * same state when no commit lands between their first reads, which `PRAGMA data_version` tells: a
 * third connection's value changes when anyone else committed between two of its reads (a WAL
 * checkpoint may change it too: a false alarm, never a missed commit). So: read it (t0), open the
 * main snapshot, open the helper's, read it again; equal values prove the two snapshots are one.
 */
import type { Db } from './db.js';

/** The rowid span of a table in the snapshot, both ends included. */
export interface Span {
  lo: bigint;
  hi: bigint;
}

export class RangeReader {
  private readonly stmt;
  private readonly textStmt;
  private open = false;

  /**
   * @param sql a SELECT ending in `rowid >= ? AND rowid <= ?` whose last column is the rowid
   * @param params the values of its other parameters, before the two bounds
   * @param textSql the same rows as one text each, bound alike and then a LIMIT (export/tables.ts textQuery)
   */
  constructor(
    private readonly db: Db,
    sql: string,
    private readonly params: readonly unknown[],
    textSql?: string,
  ) {
    this.stmt = db.prepare(sql).raw(true).safeIntegers(true);
    this.textStmt = textSql === undefined ? undefined : db.prepare(textSql).pluck(true);
  }

  /** Whether the reader has texts (a text SQL was given). */
  get hasTexts(): boolean {
    return this.textStmt !== undefined;
  }

  /** At most `limit` rows' texts whose rowid is in [from, hi), in rowid order. */
  texts(from: bigint, hi: bigint, limit: number): string[] {
    if (this.textStmt === undefined) throw new Error('RangeReader: no text SQL');
    return this.textStmt.all(...this.params, from, hi - 1n, limit) as string[];
  }

  /** One row's cells by its rowid (ending with it), or undefined when the snapshot has no such row. */
  cells(rowid: bigint): unknown[] | undefined {
    return this.stmt.get(...this.params, rowid, rowid) as unknown[] | undefined;
  }

  /** Opens the read transaction and fixes its snapshot by reading `spanSql` (export/tables.ts exportRangeQuery). */
  begin(spanSql: string): Span | undefined {
    this.db.exec('BEGIN');
    this.open = true;
    const [lo, hi] = this.db.prepare(spanSql).raw(true).safeIntegers(true).get() as [bigint | null, bigint | null];
    return lo === null || hi === null ? undefined : { lo, hi };
  }

  /** The rows whose rowid is in [lo, hi), in rowid order; each row ends with its rowid. */
  rows(lo: bigint, hi: bigint): IterableIterator<unknown[]> {
    // The SQL's upper bound is inclusive (export/tables.ts exportRangeQuery).
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

/** This connection's `PRAGMA data_version`: it changes when another connection committed since its last read. */
export function dataVersion(db: Db): number {
  return db.pragma('data_version', { simple: true }) as number;
}
