/**
 * The domain's vocabulary, shared by the client, the sync engine, the stores and the simulator: the
 * two results endpoints, the role report types, streams, and a record that passed the identity rules.
 */

/** The results endpoint a campaign is read from (its type decides: spec/paths.ts). */
export type Endpoint = 'session' | 'role';

export const REPORT_TYPES = ['DETAILED', 'OVERALL'] as const;
export type ReportType = (typeof REPORT_TYPES)[number];

/** A stream is (campaign id, endpoint, report type): it has one checkpoint. */
export interface StreamId {
  key: string;
  campaignId: string;
  endpoint: Endpoint;
  reportType: string | null;
}

export function streamId(campaignId: string, endpoint: Endpoint, reportType: string | null): StreamId {
  const key = endpoint === 'role' ? `${campaignId}/role/${reportType}` : `${campaignId}/session`;
  return { key, campaignId, endpoint, reportType: endpoint === 'role' ? reportType : null };
}

/** A record that passed the identity rules, with its JSON text as stored and written (made on first read). */
export interface CheckedRecord {
  readonly record: Record<string, unknown>;
  readonly id: string;
  readonly orderIndex: bigint;
  readonly raw: string;
}

/** A checkpoint move: from the cursor the stream last committed to the page's last order_index. */
export interface CheckpointMove {
  from: bigint | undefined;
  to: bigint;
}

/** Where a pull sends records: the SQLite mirror, or NDJSON files in one folder (absolute). */
export type Destination = { kind: 'sqlite' } | { kind: 'ndjson'; out: string };
