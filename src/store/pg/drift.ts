/** Drift in the PostgreSQL mirror (schema 9, `drift_seen`), as store/sqlite/drift-ledger.ts keeps it in SQLite. */
import type pg from 'pg';
import type { DriftChange, DriftKind, DriftPage, KnownDrift } from '../../core/drift.js';
import { driftChanges } from '../model/drift.js';
import type { PgDatabase } from './database.js';

/** What the stream's earlier passes recorded. */
export async function knownDrift(db: PgDatabase, stream: string): Promise<KnownDrift[]> {
  const r = await db.query<{ kind: DriftKind; value: string; present: boolean }>(
    'SELECT kind, value, present FROM drift_seen WHERE stream = $1',
    [stream],
  );
  return r.rows;
}

/** Records a page's new paths and values, on the page's connection inside its transaction. */
export async function recordDrift(client: pg.ClientBase, stream: string, page: DriftPage, at: string): Promise<void> {
  await client.query(
    `INSERT INTO drift_seen (stream, kind, value, record_id, seen_at, baseline, present, pending)
      SELECT $1, x.kind, x.value, x.record_id, $2, $3, true, $4 FROM unnest($5::text[], $6::text[], $7::text[]) AS x(kind, value, record_id)
      ON CONFLICT (stream, kind, value) DO UPDATE SET present = true, gone_at = NULL, record_id = excluded.record_id,
        seen_at = excluded.seen_at, pending = excluded.pending`,
    [
      stream,
      at,
      !page.report,
      page.report ? 'appeared' : null,
      page.items.map((d) => d.kind),
      page.items.map((d) => d.value),
      page.items.map((d) => d.recordId),
    ],
  );
}

/** Marks what a full read of the stream no longer carried. */
export async function driftGone(db: PgDatabase, stream: string, items: readonly KnownDrift[], at: string): Promise<void> {
  await db.query(
    `UPDATE drift_seen d SET present = false, gone_at = $2, pending = 'disappeared'
      FROM unnest($3::text[], $4::text[]) AS x(kind, value) WHERE d.stream = $1 AND d.kind = x.kind AND d.value = x.value`,
    [stream, at, items.map((d) => d.kind), items.map((d) => d.value)],
    'cannot write to',
  );
}

/** What status has yet to report, marked reported as it is read (a row changed meanwhile stays pending). */
export async function takeDriftChanges(db: PgDatabase): Promise<DriftChange[]> {
  // A mirror status does not migrate may predate drift: nothing to report.
  const table = await db.query<{ t: string | null }>("SELECT to_regclass('drift_seen')::text AS t");
  if (table.rows[0]?.t == null) return [];
  return db.transaction(async (client) => {
    const r = await client.query(
      `SELECT stream, kind, value, record_id, to_json(seen_at)#>>'{}' AS seen_at, to_json(gone_at)#>>'{}' AS gone_at, pending
        FROM drift_seen WHERE pending IS NOT NULL ORDER BY stream, kind, value FOR UPDATE`,
    );
    const changes = driftChanges(r.rows);
    if (changes.length > 0)
      await client.query(
        `UPDATE drift_seen d SET pending = NULL FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(stream, kind, value, pending)
          WHERE d.stream = x.stream AND d.kind = x.kind AND d.value = x.value AND d.pending = x.pending`,
        [changes.map((c) => c.stream), changes.map((c) => c.kind), changes.map((c) => c.value), changes.map((c) => c.change)],
      );
    return changes;
  });
}
