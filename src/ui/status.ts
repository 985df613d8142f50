/** How `status` shows the mirror's streams: one row each, fitted to the terminal. */
import type { StreamRow } from '../store/mirror-port.js';
import { relativeTime, retiredAs, unlistedSince } from './health.js';
import { type Column, formatCount, renderTable, type TableStyle } from './table.js';

/**
 * On a narrow terminal the cursor goes first, then the report type, the endpoint and the count;
 * what says whether a stream is well (campaign, last success, last error) stays. An error is cut
 * later than a name: its end (status, message, request id) is what helps.
 */
const STATUS_COLUMNS: Column[] = [
  { head: 'campaign', shrink: 20 },
  { head: 'endpoint', drop: 3 },
  { head: 'report', drop: 2 },
  { head: 'cursor', drop: 1 },
  { head: 'records', drop: 4 },
  { head: 'id conflicts', drop: 0 },
  { head: 'last success' },
  { head: 'last error', shrink: 16, max: 160 },
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
      relativeTime(r.last_success_at, now),
      r.last_error
        ? `${relativeTime(r.last_error_at, now)}: ${r.last_error}`
        : r.unlisted_since
          ? unlistedSince(r, now)
          : r.type_changed_to
            ? retiredAs(r)
            : '',
    ]),
    style,
  );
}
