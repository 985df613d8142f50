/** How `quarantine` shows its records: a table (escaped by renderTable), and its --json document. */
import type { QuarantineRow } from '../store/sqlite/quarantine.js';
import { showText } from './escape.js';
import { relativeTime } from './health.js';
import { type Column, renderTable, type TableStyle } from './table.js';

/**
 * `id` is what `retry` and `drop` take; the campaign is named as people know it, whole. On a narrow
 * terminal the raw text goes first, then when, the record's id (shortened first to a telling prefix)
 * and the stream's kind; the reason, which leads with the field at fault, is cut from its end.
 */
const COLUMNS: Column[] = [
  { head: 'id' },
  { head: 'campaign', whole: true },
  { head: 'type', drop: 3 },
  { head: 'record', drop: 2, prefix: 8 },
  { head: 'quarantined', drop: 1 },
  { head: 'reason', shrink: 24, max: 200 },
  { head: 'raw', drop: 0, shrink: 16, max: 120 },
];

/** The records' table, in id order; `names` gives a campaign's name for its id. */
export function quarantineTable(
  rows: readonly QuarantineRow[],
  names: ReadonlyMap<string, string>,
  now: number,
  style: TableStyle,
): string {
  return renderTable(
    COLUMNS,
    rows.map((r) => [
      String(r.id),
      names.get(r.campaign_id) ?? r.campaign_id,
      r.endpoint === 'role' ? `role ${r.report_type ?? ''}`.trim() : 'session',
      r.record_id ?? '',
      relativeTime(r.quarantined_at, now),
      r.reason,
      r.raw,
    ]),
    style,
  );
}

/** A record in --json: every column, the raw text as stored. */
export function quarantineEntry(r: QuarantineRow) {
  return {
    id: r.id,
    stream: r.stream,
    campaign_id: r.campaign_id,
    endpoint: r.endpoint,
    report_type: r.report_type,
    record_id: r.record_id,
    order_index: r.order_index,
    reason: r.reason,
    request_id: r.request_id,
    quarantined_at: r.quarantined_at,
    page: { starting_after: r.page_after, start_date: r.page_since, end_date: r.page_until, position: r.page_position },
    raw: r.raw,
  };
}

/** One line per record a retry kept, escaped: the service's words may be in it. */
export function keptLines(kept: ReadonlyArray<{ row: QuarantineRow; why: string }>): string[] {
  return kept.map(({ row, why }) => showText(`quarantined record ${row.id} (stream ${row.stream}) kept: ${why}`));
}
