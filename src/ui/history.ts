/** How `history` shows a person's or a record's results over time: one row per version. */
import type { HistoryVersion } from '../store/port.js';
import { type Column, renderTable, type TableStyle } from './table.js';

const HISTORY_COLUMNS: Column[] = [
  { head: 'record', shrink: 12 },
  { head: 'kind', drop: 2 },
  { head: 'version' },
  { head: 'score' },
  { head: 'recommendation', drop: 1 },
  { head: 'seen from' },
  { head: 'until', drop: 0 },
  { head: 'user', shrink: 12, drop: 3 },
];

/** The versions' table, in the order given; a deletion shows as such instead of a score. */
export function historyTable(versions: readonly HistoryVersion[], style: TableStyle): string {
  return renderTable(
    HISTORY_COLUMNS,
    versions.map((v) => [
      v.id,
      v.kind,
      String(v.version),
      v.deleted ? 'deleted' : v.score === null ? '' : String(v.score),
      v.recommendation ?? '',
      v.valid_from,
      v.valid_to ?? 'now',
      v.user_email ?? v.user_id ?? '',
    ]),
    style,
  );
}
