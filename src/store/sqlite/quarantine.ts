/**
 * The quarantine: records a stream was served that failed the record rules (sync/records.ts), kept
 * with their text exactly as received, why, the request id and the page that held them, while the
 * stream goes on. They are written in the same transaction as their page's good records and
 * checkpoint move, so a crash at any instant neither loses nor repeats one; a record served again
 * as it was (a lookback, a --full pass) is kept once per stream, by the digest of its text.
 * `quarantine retry` reads their pages again and releases those that now pass, in the transaction
 * that stores them; `quarantine drop` deletes them; `forget` erases those naming the person.
 * SQLite's class is here (the NDJSON sink keeps them in its database too); the SQL of both backends
 * shares the column names and QuarantineRow.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { QuarantinedRecord, StreamId } from '../../core/types.js';
import type { ErasurePlan } from '../model/erasure-plan.js';
import {
  QUARANTINE_COLUMNS,
  QUARANTINE_COUNTS_SQL,
  QUARANTINE_SELECT,
  type QuarantineRow,
  type QuarantineSelection,
  quarantineValues,
} from '../model/quarantine.js';
import type { Db } from './db.js';

export type { QuarantineRow, QuarantineSelection };

type Statement = BetterSqlite3.Statement<unknown[]>;

/** The quarantine of a SQLite database (the mirror's, or the one holding an NDJSON folder's checkpoints). */
export class SqliteQuarantine {
  private insert: Statement | undefined;
  private readonly exists: boolean;

  constructor(private readonly db: Db) {
    // A database opened read-only at an older schema (status) has no such table: nothing quarantined.
    this.exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'quarantine'").get() !== undefined;
  }

  /** Adds a page's quarantined records and releases those a retry stored. Call inside the page's transaction. */
  apply(id: StreamId, add: readonly QuarantinedRecord[], release: readonly number[] = []): void {
    if (add.length > 0) {
      // Prepared on first use: most pages quarantine nothing.
      const insert = (this.insert ??= this.db.prepare(
        `INSERT INTO quarantine (${QUARANTINE_COLUMNS}) VALUES (${new Array(15).fill('?').join(', ')}) ON CONFLICT (stream, digest) DO NOTHING`,
      ));
      for (const q of add) insert.run(...quarantineValues(id, q));
    }
    if (release.length > 0) {
      const del = this.db.prepare('DELETE FROM quarantine WHERE id = ?');
      for (const n of release) del.run(n);
    }
  }

  /** Every quarantined record, in the order they were quarantined. */
  list(): QuarantineRow[] {
    if (!this.exists) return [];
    return this.db.prepare(`${QUARANTINE_SELECT} ORDER BY id`).all() as QuarantineRow[];
  }

  /** Deletes the selected records; returns those deleted. */
  drop(which: QuarantineSelection): QuarantineRow[] {
    if (!this.exists) return [];
    return this.db.transaction(() => {
      const rows = this.list().filter((r) => which === 'all' || which.includes(r.id));
      const del = this.db.prepare('DELETE FROM quarantine WHERE id = ?');
      for (const r of rows) del.run(r.id);
      return rows;
    })();
  }

  /** Deletes the records the erasure's plan takes (store/model/erasure-plan.ts quarantined); returns how many. Call inside the erasure's transaction. */
  erase(plan: ErasurePlan, count = false): number {
    if (!this.exists) return 0;
    const named = this.list().filter((r) => plan.quarantined(r.raw).do === 'delete');
    // Counting (forget --dry-run): each was read just now, in the caller's transaction.
    if (count) return named.length;
    const del = this.db.prepare('DELETE FROM quarantine WHERE id = ?');
    let n = 0;
    for (const r of named) n += del.run(r.id).changes;
    return n;
  }

  /** Each stream's count of quarantined records. */
  perStream(): Map<string, number> {
    if (!this.exists) return new Map();
    const rows = this.db.prepare(QUARANTINE_COUNTS_SQL).all() as Array<{ stream: string; n: number }>;
    return new Map(rows.map((r) => [r.stream, Number(r.n)]));
  }
}
