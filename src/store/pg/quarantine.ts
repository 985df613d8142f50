/** The quarantine of a PostgreSQL mirror: store/sqlite/quarantine.ts says what it holds and why. */
import type pg from 'pg';
import type { PageQuarantine, StreamId } from '../../core/types.js';
import {
  QUARANTINE_COLUMNS,
  QUARANTINE_COUNTS_SQL,
  QUARANTINE_SELECT,
  type QuarantineRow,
  type QuarantineSelection,
  quarantineValues,
} from '../model/quarantine.js';
import type { PgDatabase } from './database.js';

/** Whether the page's commit has anything to do in the quarantine. */
export function touchesQuarantine(q: PageQuarantine | undefined): q is PageQuarantine {
  return q !== undefined && (q.add.length > 0 || (q.release?.length ?? 0) > 0);
}

/**
 * Adds a page's quarantined records (one statement, whatever their number) and releases those a retry
 * stored, on the page's transaction.
 */
export async function applyQuarantine(client: pg.PoolClient, id: StreamId, q: PageQuarantine): Promise<void> {
  if (q.add.length > 0) {
    const values = q.add.map((record) => quarantineValues(id, record));
    const rows = values.map((row, i) => `(${row.map((_, j) => `$${i * row.length + j + 1}`).join(', ')})`).join(', ');
    await client.query(
      `INSERT INTO quarantine (${QUARANTINE_COLUMNS}) VALUES ${rows} ON CONFLICT (stream, digest) DO NOTHING`,
      values.flat(),
    );
  }
  if ((q.release?.length ?? 0) > 0) await client.query('DELETE FROM quarantine WHERE id = ANY($1::bigint[])', [q.release]);
}

type RawRow = Omit<QuarantineRow, 'id' | 'quarantined_at'> & { id: string; quarantined_at: Date | string };

function toRow(r: RawRow): QuarantineRow {
  const at = r.quarantined_at;
  return { ...r, id: Number(r.id), quarantined_at: at instanceof Date ? at.toISOString() : String(at) };
}

/** Whether the mirror has the table (one read without migrating it, by status, may be older). */
async function exists(db: PgDatabase): Promise<boolean> {
  const r = await db.query<{ t: string | null }>("SELECT to_regclass('quarantine')::text AS t");
  return typeof r.rows[0]?.t === 'string';
}

export async function listQuarantine(db: PgDatabase): Promise<QuarantineRow[]> {
  if (!(await exists(db))) return [];
  const r = await db.query<RawRow>(`${QUARANTINE_SELECT} ORDER BY id`);
  return r.rows.map(toRow);
}

export async function dropQuarantine(db: PgDatabase, which: QuarantineSelection): Promise<QuarantineRow[]> {
  if (!(await exists(db))) return [];
  const r =
    which === 'all'
      ? await db.query<RawRow>(`DELETE FROM quarantine RETURNING *`, [], 'cannot write to')
      : await db.query<RawRow>('DELETE FROM quarantine WHERE id = ANY($1::bigint[]) RETURNING *', [[...which]], 'cannot write to');
  return r.rows.map(toRow).sort((a, b) => a.id - b.id);
}

export async function quarantineCounts(db: PgDatabase): Promise<Map<string, number>> {
  if (!(await exists(db))) return new Map();
  const r = await db.query<{ stream: string; n: string }>(QUARANTINE_COUNTS_SQL);
  return new Map(r.rows.map((row) => [row.stream, Number(row.n)]));
}
