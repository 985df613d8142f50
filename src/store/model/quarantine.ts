/**
 * What a quarantined record is, for both backends: its row as read back, the columns a record fills,
 * and the SQL text SQLite and PostgreSQL share (store/sqlite/quarantine.ts, store/pg/quarantine.ts).
 * Why a record no backend can hold goes there is store/model/storable.ts.
 */
import type { QuarantinedRecord, StreamId } from '../../core/types.js';

/** One quarantined record as stored. */
export interface QuarantineRow {
  id: number;
  stream: string;
  campaign_id: string;
  endpoint: 'session' | 'role';
  report_type: string | null;
  record_id: string | null;
  /** Its order_index as decimal text, when it had a usable one. */
  order_index: string | null;
  raw: string;
  reason: string;
  request_id: string | null;
  /** The page that held it: `starting_after` (decimal text), date window, the record's 1-based position. */
  page_after: string | null;
  page_since: string | null;
  page_until: string | null;
  page_position: number;
  quarantined_at: string;
}

/** Who asks which quarantined records: all, or those of these ids. */
export type QuarantineSelection = 'all' | readonly number[];

/** The columns a quarantined record fills, in QUARANTINE_COLUMNS' order. Shared by SQLite and PostgreSQL. */
export function quarantineValues(id: StreamId, q: QuarantinedRecord): unknown[] {
  return [
    id.key,
    id.campaignId,
    id.endpoint,
    id.reportType,
    q.recordId ?? null,
    q.orderIndex?.toString() ?? null,
    q.raw,
    process.getBuiltinModule('node:crypto').createHash('sha256').update(q.raw).digest('hex'),
    q.reason,
    q.requestId ?? null,
    q.after?.toString() ?? null,
    q.since ?? null,
    q.until ?? null,
    q.position,
    q.at,
  ];
}

export const QUARANTINE_COLUMNS =
  'stream, campaign_id, endpoint, report_type, record_id, order_index, raw, digest, reason, request_id, page_after, page_since, page_until, page_position, quarantined_at';

/** The columns read back, in id order. Shared by SQLite and PostgreSQL. */
export const QUARANTINE_SELECT =
  'SELECT id, stream, campaign_id, endpoint, report_type, record_id, order_index, raw, reason, request_id, page_after, page_since, page_until, page_position, quarantined_at FROM quarantine';

/** Each stream's count of quarantined records. Shared by SQLite and PostgreSQL. */
export const QUARANTINE_COUNTS_SQL = 'SELECT stream, count(*) AS n FROM quarantine GROUP BY stream';
