/**
 * The advisory stream locks of campaign-sync versions before the stream leases (leases.ts): one
 * session-level lock per stream, keyed (hashtext('campaign-sync <schema>'), hashtext(stream)).
 * `status` on a mirror of a schema before the leases still names their holders.
 */
import type { PgDatabase } from './database.js';

/** The workers holding stream locks of `db`'s schema now, for `status` (without taking any lock). */
export async function lockHolders(db: PgDatabase): Promise<Array<{ pid: number; host: string; since: string }>> {
  const r = await db.query<{ app: string | null; addr: string | null; since: Date | null }>(
    `SELECT DISTINCT a.application_name AS app, a.client_addr::text AS addr, a.backend_start AS since
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid::int = hashtext($1) AND l.objsubid = 2
      ORDER BY since`,
    [`campaign-sync ${db.schema}`],
  );
  return r.rows.map((h) => {
    const m = /^campaign-sync pid (\d+) on (.*)$/.exec(h.app ?? '');
    return { pid: m ? Number(m[1]) : 0, host: m ? (m[2] as string) : (h.addr ?? 'unknown'), since: h.since?.toISOString() ?? '' };
  });
}
