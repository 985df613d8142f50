/** How `status` shows the mirror's streams: one row each, fitted to the terminal. */
import type { StreamRow } from '../store/port.js';
import { showText } from './escape.js';
import { relativeTime, retiredAs, unlistedText } from './health.js';
import { type Column, formatCount, renderTable, type TableStyle } from './table.js';

/**
 * On a narrow terminal the columns with nothing to say go first (a healthy mirror's id conflicts,
 * quarantine and last error), then the cursor, the report type, the endpoint and the count; what says whether a
 * stream is well (campaign, last success, last error) stays. The campaign's name is never cut (it is
 * what `--campaign` takes); an error is cut from its end, after its reason (`2 min ago: 500 Inte…`),
 * which leads every error text.
 */
const STATUS_COLUMNS: Column[] = [
  { head: 'campaign', whole: true },
  { head: 'endpoint', drop: 3 },
  { head: 'report', drop: 2 },
  { head: 'cursor', drop: 1 },
  { head: 'records', drop: 4 },
  { head: 'id conflicts', drop: 0, optional: true },
  { head: 'quarantined', drop: 0, optional: true },
  { head: 'last success' },
  // No stream failing, nothing to say: the column goes (its absence says it).
  { head: 'last error', shrink: 18, max: 160, optional: true },
];

/** The streams' table, in the order given; `nameOf` gives a campaign's name for its id. */
export function statusTable(rows: readonly StreamRow[], nameOf: (id: string) => string, now: number, style: TableStyle): string {
  return renderTable(
    STATUS_COLUMNS,
    rows.map((r) => [
      nameOf(r.campaign_id),
      r.endpoint,
      r.report_type ?? '',
      r.cursor === null ? '' : r.cursor.toString(),
      formatCount(r.records),
      formatCount(r.id_conflicts),
      formatCount(r.quarantined ?? 0),
      relativeTime(r.last_success_at, now),
      r.last_error
        ? `${relativeTime(r.last_error_at, now)}: ${r.last_error}`
        : r.unlisted_since
          ? unlistedText(r, now)
          : r.type_changed_to
            ? retiredAs(r)
            : '',
    ]),
    style,
  );
}

/**
 * `status --check`'s warning for a stream holding quarantined records: the stream is healthy (it
 * went on), but records of it are missing from the mirror until retried or dropped.
 */
export function quarantineLines(rows: readonly StreamRow[], label: (row: StreamRow) => string): string[] {
  return rows
    .filter((r) => (r.quarantined ?? 0) > 0)
    .map(
      (r) =>
        `warning: ${showText(label(r))}: ${r.quarantined} ${r.quarantined === 1 ? 'record' : 'records'} in the quarantine (\`campaign-sync quarantine list\`, then retry or drop)`,
    );
}

/** The streams holding quarantined records, for `status --check --json`: stream -> count. */
export function quarantineDocument(rows: readonly StreamRow[]): Record<string, number> {
  return Object.fromEntries(rows.filter((r) => (r.quarantined ?? 0) > 0).map((r) => [r.stream, r.quarantined as number]));
}
