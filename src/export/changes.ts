/**
 * The rows of an `export --since-last` file: the deletion rows first, then the rows inserted or
 * changed, each with a null `_deleted_at` and `_deleted_reason`. A deletion row of a results table
 * is a result deleted since (a tombstone: its id, `_deleted_at` and `_deleted_reason`, and for one
 * reconcile --prune deleted its campaign id); one of a table whose rows belong to results (score
 * details, eval results, the views) names a result whose rows the loader drops, by the feed's key
 * (store/model/export-tables.ts FEEDS). Every other cell is null: an erased result's row names
 * nobody. Whichever mirror gives them: synchronously (SQLite) or not (PostgreSQL).
 */
import { deletionKey, type ExportTable, FEEDS } from '../store/model/export-tables.js';
import type { ChangeRows, Rows, Tombstone } from '../store/port.js';
import { untilAborted } from './interrupt.js';

/** What the file's rows were: counted as they are written. */
export interface ChangeCounts {
  rows: number;
  tombstones: number;
}

/** The columns every --since-last file ends with, in this order. */
export const DELETION_COLUMNS = ['_deleted_at', '_deleted_reason'] as const;

/**
 * The file's rows for `columns` (the changes' columns, then DELETION_COLUMNS); `counts` fills as they
 * are read. A signal stops asynchronous rows at the next one (synchronous ones: the writers, between chunks).
 */
export function changeRows(
  table: ExportTable,
  columns: readonly string[],
  changes: Pick<ChangeRows, 'tombstones' | 'rows'>,
  signal?: AbortSignal,
): { rows: Rows; counts: ChangeCounts } {
  const counts = { rows: 0, tombstones: 0 };
  const idAt = columns.indexOf('id');
  const campaignAt = columns.indexOf('campaign_id');
  const byResult = FEEDS[table].kind === 'results';
  const tombstone = (t: Tombstone): unknown[] => {
    const row: unknown[] = new Array(columns.length).fill(null);
    if (byResult) {
      for (const [column, value] of Object.entries(deletionKey(table, t.kind ?? 'session', t.id))) {
        const at = columns.indexOf(column);
        if (at >= 0) row[at] = value;
      }
    } else {
      if (idAt >= 0) row[idAt] = t.id;
      // An erasure's tombstone holds the id alone (its campaign_id is null).
      if (campaignAt >= 0) row[campaignAt] = t.campaign_id;
    }
    row[columns.length - 2] = t.deleted_at;
    row[columns.length - 1] = t.reason;
    counts.tombstones++;
    return row;
  };
  const changed = (r: unknown[]): unknown[] => {
    counts.rows++;
    return [...r, null, null];
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
