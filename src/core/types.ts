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

/**
 * A record that failed the record rules (sync/records.ts), kept as received so that it can be read
 * again (`quarantine retry`) or dropped: stored in the same transaction as its page's good records.
 */
export interface QuarantinedRecord {
  /** The record's JSON text exactly as the service sent it (the API key, were it in it, taken out). */
  raw: string;
  /** Why it failed, naming the request, its position in the page and the field. */
  reason: string;
  /** Its id and order_index, when usable. */
  recordId: string | undefined;
  orderIndex: bigint | undefined;
  /** The page that held it: the request's `starting_after`, date window, and the record's 1-based position. */
  after: bigint | undefined;
  since: string | undefined;
  until: string | undefined;
  position: number;
  /** The answer's request id (its `x-request-id` header), when it sent one. */
  requestId: string | undefined;
  /** When it was read (ISO 8601). */
  at: string;
}

/** What a page's commit does to the quarantine: records to add, and quarantined ones to release (a retry that stored them). */
export interface PageQuarantine {
  add: readonly QuarantinedRecord[];
  release?: readonly number[] | undefined;
}
