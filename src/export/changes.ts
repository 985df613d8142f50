/**
 * The rows of an `export --since-last` file: one row per result deleted since (a tombstone: its id,
 * its campaign id and `_deleted_at`, every other cell null), then the rows inserted or changed, each
 * with a null `_deleted_at`. Whichever mirror gives them: synchronously (SQLite) or not (PostgreSQL).
 */
import type { ChangeRows, Rows, Tombstone } from '../store/port.js';
import { untilAborted } from './interrupt.js';

/** What the file's rows were: counted as they are written. */
export interface ChangeCounts {
  rows: number;
  tombstones: number;
}

/**
 * The file's rows for `columns` (the changes' columns, then `_deleted_at`); `counts` fills as they
 * are read. A signal stops asynchronous rows at the next one (synchronous ones: the writers, between chunks).
 */
export function changeRows(
  columns: readonly string[],
  changes: Pick<ChangeRows, 'tombstones' | 'rows'>,
  signal?: AbortSignal,
): { rows: Rows; counts: ChangeCounts } {
  const counts = { rows: 0, tombstones: 0 };
  const idAt = columns.indexOf('id');
  const campaignAt = columns.indexOf('campaign_id');
  const tombstone = (t: Tombstone): unknown[] => {
    const row: unknown[] = new Array(columns.length).fill(null);
    if (idAt >= 0) row[idAt] = t.id;
    if (campaignAt >= 0) row[campaignAt] = t.campaign_id;
    row[columns.length - 1] = t.deleted_at;
    counts.tombstones++;
    return row;
  };
  const changed = (r: unknown[]): unknown[] => {
    counts.rows++;
    return [...r, null];
  };
  const tombstones = changes.tombstones();
  if (Symbol.asyncIterator in tombstones) {
    const all = async function* (): AsyncGenerator<unknown[]> {
      for await (const t of tombstones) yield tombstone(t);
      for await (const r of changes.rows()) yield changed(r);
    };
    return { rows: untilAborted(all(), signal), counts };
  }
  const all = function* (): Generator<unknown[]> {
    for (const t of tombstones) yield tombstone(t);
    for (const r of changes.rows() as Iterable<unknown[]>) yield changed(r);
  };
  return { rows: all(), counts };
}
