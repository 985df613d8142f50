/**
 * Drift in the SQLite database (schema 11, `drift_seen`): the field paths and enumeration values each
 * stream's records carried (sync/drift.ts decides which), written with the page that brought them, and
 * what `status` has yet to report once. Holds record ids as examples, never a record's values.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { DriftChange, DriftKind, DriftPage, KnownDrift } from '../../core/drift.js';
import { driftChanges, ERASED_EXAMPLE, type PendingRow } from '../model/drift.js';
import type { Db } from './db.js';

export { driftChanges, ERASED_EXAMPLE };

type Statement = BetterSqlite3.Statement<unknown[]>;

const RECORD_SQL = `INSERT INTO drift_seen (stream, kind, value, record_id, seen_at, baseline, present, pending)
  VALUES (?, ?, ?, ?, ?, ?, 1, ?)
  ON CONFLICT (stream, kind, value) DO UPDATE SET present = 1, gone_at = NULL, record_id = excluded.record_id,
    seen_at = excluded.seen_at, pending = excluded.pending`;

export class DriftLedger {
  private insert: Statement | undefined;
  private update: Statement | undefined;
  private readonly select: Statement | undefined;

  constructor(private readonly db: Db) {
    // A database opened read-only at an older schema (status) has no such table: nothing known.
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drift_seen'").get() !== undefined;
    this.select = exists ? db.prepare('SELECT kind, value, present FROM drift_seen WHERE stream = ?') : undefined;
  }

  /** What the stream's earlier passes recorded. */
  known(stream: string): KnownDrift[] {
    const rows = (this.select?.all(stream) ?? []) as Array<{ kind: DriftKind; value: string; present: number }>;
    return rows.map((r) => ({ kind: r.kind, value: r.value, present: r.present === 1 }));
  }

  /** Records a page's new paths and values. Call inside the page's transaction. */
  record(stream: string, page: DriftPage, at: string): void {
    const insert = (this.insert ??= this.db.prepare(RECORD_SQL));
    const pending = page.report ? 'appeared' : null;
    for (const d of page.items) insert.run(stream, d.kind, d.value, d.recordId, at, page.report ? 0 : 1, pending);
  }

  /** Marks what a full read of the stream no longer carried. Call inside a transaction. */
  gone(stream: string, items: readonly KnownDrift[], at: string): void {
    const update = (this.update ??= this.db.prepare(
      "UPDATE drift_seen SET present = 0, gone_at = ?, pending = 'disappeared' WHERE stream = ? AND kind = ? AND value = ?",
    ));
    for (const d of items) update.run(at, stream, d.kind, d.value);
  }

  /** What status has yet to report. */
  pending(): DriftChange[] {
    if (this.select === undefined) return [];
    const rows = this.db
      .prepare(
        'SELECT stream, kind, value, record_id, seen_at, gone_at, pending FROM drift_seen WHERE pending IS NOT NULL ORDER BY stream, kind, value',
      )
      .all() as PendingRow[];
    return driftChanges(rows);
  }

  /** Marks changes reported (unless the row changed since they were read). */
  reported(changes: readonly DriftChange[]): void {
    const done = this.db.prepare('UPDATE drift_seen SET pending = NULL WHERE stream = ? AND kind = ? AND value = ? AND pending = ?');
    this.db.transaction(() => {
      for (const c of changes) done.run(c.stream, c.kind, c.value, c.change);
    })();
  }
}

/** Marks the example of erased records (forget): the path or value stays, the record's id goes. Call inside the erasure's transaction. */
export function forgetDriftExamples(db: Db, ids: Iterable<string>): void {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drift_seen'").get() === undefined) return;
  const update = db.prepare(`UPDATE drift_seen SET record_id = '${ERASED_EXAMPLE}' WHERE record_id = ?`);
  for (const id of ids) update.run(id);
}
