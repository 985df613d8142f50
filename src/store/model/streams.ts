/**
 * A stream's row as every backend gives it (checkpoint, health, whether its campaign is still
 * listed or was retired by a change of type, its id conflicts), and the rules that make it from what
 * the database holds: which campaigns each lister listed last, and which streams are retired.
 */
import type { Endpoint } from '../../core/types.js';
import { endpointFor } from '../../spec/paths.js';

export interface StreamRow {
  stream: string;
  campaign_id: string;
  endpoint: Endpoint;
  report_type: string | null;
  cursor: bigint | null;
  records: bigint;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  /**
   * When the stream's campaign was last listed, if the service's newest campaign list left it out
   * (its key lost access, or the campaign was removed); null while it is listed.
   */
  unlisted_since: string | null;
  /**
   * The campaign's type as last listed, when it no longer routes to this stream's endpoint (the type
   * changed, say SESSION_COMPLETION to ROLE_SUBMISSION): the stream is retired, as an unlisted
   * campaign's is. Null while the type routes here, and while the campaign is unlisted.
   */
  type_changed_to: string | null;
  /** Records served through this stream whose id another campaign holds: skipped (store/sqlite/conflicts.ts, store/pg/sink.ts). */
  id_conflicts: number;
  /** Records of this stream that failed the record rules, held in the quarantine (store/sqlite/quarantine.ts). */
  quarantined?: number | undefined;
}

/** A stream row as each backend's streams query reads it (sync_state joined to campaigns), before streamRow and the conflict counts fill it in. */
export type StreamSqlRow = Omit<StreamRow, 'unlisted_since' | 'type_changed_to' | 'id_conflicts'> & {
  campaign_seen_at: string | null;
  campaign_type: string | null;
};

/** A campaign a pull skips, as stored. */
export interface SkippedRow {
  id: string;
  name: string | null;
  type: string | null;
}

/** The `meta` key prefix of the state `--notify` last delivered for a stream: `notified:<stream>`. */
export const NOTIFIED_PREFIX = 'notified:';

/** The keys of the retired streams of the given campaigns (all when none). */
export function retiredStreams(rows: readonly StreamRow[], campaignIds: readonly string[]): string[] {
  return rows
    .filter((r) => r.type_changed_to !== null && (campaignIds.length === 0 || campaignIds.includes(r.campaign_id)))
    .map((r) => r.stream);
}

/** A stream's row with what is made of the campaign list and the conflicts. */
export function streamRow(
  { campaign_seen_at, campaign_type, ...row }: StreamSqlRow,
  listed: Set<string> | undefined,
  conflicts: Map<string, number>,
): StreamRow {
  const unlisted_since = unlistedSince(row.campaign_id, campaign_seen_at, listed);
  return {
    ...row,
    unlisted_since,
    type_changed_to: unlisted_since === null && campaign_seen_at !== null ? retiredType(row.endpoint, campaign_type) : null,
    id_conflicts: conflicts.get(row.stream) ?? 0,
  };
}

/**
 * The campaign's type (`none` when it has none) when it routes to another endpoint than the stream's,
 * or none at all: the stream is retired. Null while it routes here.
 */
export function retiredType(endpoint: Endpoint, type: string | null): string | null {
  return endpointFor(type) === endpoint ? null : (type ?? 'none');
}

/*
 * Which campaigns each lister (a service and API key: ApiClient.lister, a fingerprint) listed last, so
 * that a campaign the service no longer lists is told apart from one another key lists: workers with
 * different keys write one mirror side by side (a PostgreSQL team mirror), and each sees only its
 * own campaigns. A campaign is unlisted when no lister's newest list holds it; a mirror that has
 * recorded no list yet (written by an earlier release) calls nothing unlisted. Kept in `meta`, one row
 * per lister: `listed_by:<fingerprint>` → `{ "at", "ids" }`. Here, beside the stream rows that use
 * them, rather than in a module of their own: one more shared chunk of the bundle for a no-op pull.
 */

/** The `meta` key of a lister's newest list. */
export const listingKey = (lister: string) => `listed_by:${lister}`;

/** The value stored for a list. */
export function listingValue(ids: readonly string[], at: string): string {
  return JSON.stringify({ at, ids: [...new Set(ids)].sort() });
}

/** Every campaign id some lister listed last; undefined when none has recorded a list. */
export function listedIds(values: readonly string[]): Set<string> | undefined {
  if (values.length === 0) return undefined;
  const ids = new Set<string>();
  for (const value of values) {
    try {
      const parsed = JSON.parse(value) as { ids?: unknown };
      if (Array.isArray(parsed.ids)) for (const id of parsed.ids) ids.add(String(id));
    } catch {
      // A row this release did not write: it lists nothing.
    }
  }
  return ids;
}

/**
 * `unlisted_since` of a stream: when its campaign was last seen in a list (`seenAt`), if no lister's
 * newest list holds it; null while one does, or when nothing can be said.
 */
export function unlistedSince(campaignId: string, seenAt: string | null, listed: Set<string> | undefined): string | null {
  if (listed === undefined || seenAt === null || listed.has(campaignId)) return null;
  return seenAt;
}
