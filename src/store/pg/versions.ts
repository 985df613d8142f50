import { namesUser, versionColumns, versionRows, withSummary } from '../model/versions.js';
import type { HistoryQuery, HistoryVersion, MirrorTarget, ResultVersion, VersionReader } from '../port.js';
import { campaignIdsFor } from './campaigns.js';
import { PgDatabase } from './database.js';
import { readOnlyRows } from './export.js';

const COLUMNS =
  'v.kind, v.id, v.version, v.campaign_id, v.report_type, v.user_id, v.user_email, v.order_index::text AS order_index, v.deleted, v.valid_from, v.valid_to, v.request_id, v.raw::text AS raw';

/** Who each stored version names at its top (the raw is not read: a DETAILED one costs its rebuild). */
const PEOPLE = `SELECT * FROM (SELECT 'session' AS kind, id, user_id, user_email FROM session_results
  UNION SELECT 'role', id, user_id, user_email FROM role_results UNION SELECT kind, id, user_id, user_email FROM past_versions) AS p`;

/** A row as pg returns it: int8 as text (exact), timestamptz as Date. */
type Row = Omit<ResultVersion, 'order_index' | 'valid_from' | 'valid_to'> & {
  order_index: string | null;
  valid_from: Date;
  valid_to: Date | null;
};

function version(r: Row): ResultVersion {
  return {
    ...r,
    order_index: r.order_index === null ? null : BigInt(r.order_index),
    valid_from: r.valid_from.toISOString(),
    valid_to: r.valid_to === null ? null : r.valid_to.toISOString(),
  };
}

export async function openPgVersions(t: MirrorTarget): Promise<VersionReader> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 1, mustExist: true, upgrade: true, where: t.where });
  async function* asOf(kind: 'session' | 'role', at: string, campaign?: string): AsyncGenerator<ResultVersion> {
    const params: unknown[] = [kind, at];
    const where = `v.kind = $1${campaign === undefined ? '' : ` AND v.campaign_id = $${params.push(campaign)}`}`;
    const sql = `SELECT ${COLUMNS} FROM results_as_of($2::timestamptz) v WHERE ${where} ORDER BY v.id`;
    for await (const row of readOnlyRows<Row>(db, 'versions_as_of', sql, params)) yield version(row);
  }
  return {
    async history(q: HistoryQuery): Promise<HistoryVersion[]> {
      const people =
        q.record !== undefined
          ? await db.query<{ kind: string; id: string; user_id: string | null; user_email: string | null }>(`${PEOPLE} WHERE p.id = $1`, [
              q.record,
            ])
          : await db.query<{ kind: string; id: string; user_id: string | null; user_email: string | null }>(PEOPLE);
      const keys = new Map<string, { kind: string; id: string }>();
      for (const r of people.rows) {
        if (q.user !== undefined && !namesUser(q.user, r.user_id, r.user_email)) continue;
        keys.set(`${r.kind}\u0000${r.id}`, { kind: r.kind, id: r.id });
      }
      if (keys.size === 0) return [];
      const list = [...keys.values()];
      const r = await db.query<Row>(
        `SELECT ${COLUMNS} FROM result_versions v JOIN unnest($1::text[], $2::text[]) AS k(kind, id) ON v.kind = k.kind AND v.id = k.id ORDER BY v.kind, v.id, v.version`,
        [list.map((k) => k.kind), list.map((k) => k.id)],
      );
      return r.rows.map((row) => withSummary(version(row)));
    },
    asOf: (kind, at, campaign) => ({ columns: versionColumns(kind), rows: versionRows(asOf(kind, at, campaign)) }),
    campaignIds: (selector) => campaignIdsFor(db, selector),
    // Every version's valid_from is the time of a recorded change (timeOf in migrations/v7.ts): none is earlier.
    async start() {
      const r = await db.query<{ at: Date | null }>('SELECT min(at) AS at FROM change_times');
      return r.rows[0]?.at?.toISOString() ?? null;
    },
    // A team mirror's records are always in its tables (it has no NDJSON destination).
    recordsElsewhere: async () => undefined,
    close: () => db.close(),
  };
}
