/** What `status` shows of a fleet on a PostgreSQL mirror: its workers, their leases, the shared budget's use. */
import type { FleetStatus } from '../model/stream-leases.js';
import type { PgDatabase } from './database.js';

const iso = (d: Date) => d.toISOString();

/** The fleet as the database sees it; undefined for a mirror of a schema before the leases (status does not migrate). */
export async function fleetStatus(db: PgDatabase): Promise<FleetStatus | undefined> {
  const has = await db.query<{ leases: string | null; budget: string | null }>(
    "SELECT to_regclass('leases')::text AS leases, to_regclass('budget_slots')::text AS budget",
  );
  if (!has.rows[0]?.leases) return undefined;
  const now = (await db.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]?.now as Date;
  // A worker is alive while its heartbeat is younger than its lease; a dead one is shown while it still names a lease.
  const workers = await db.query<{
    id: string;
    host: string;
    pid: number;
    started_at: Date;
    heartbeat_at: Date;
    lease_ms: number;
    alive: boolean;
  }>(
    `SELECT w.id, w.host, w.pid, w.started_at, w.heartbeat_at, w.lease_ms, w.heartbeat_at > $1::timestamptz - w.lease_ms * interval '1 millisecond' AS alive
       FROM workers w
      WHERE w.heartbeat_at > $1::timestamptz - w.lease_ms * interval '1 millisecond' OR EXISTS (SELECT 1 FROM leases l WHERE l.worker = w.id)
      ORDER BY w.started_at, w.id`,
    [now],
  );
  const leases = await db.query<{ stream: string; worker: string; since: Date; expires_at: Date }>(
    'SELECT stream, worker, since, expires_at FROM leases WHERE worker IS NOT NULL ORDER BY stream',
  );
  const byId = new Map(workers.rows.map((w) => [w.id, w]));
  let budget: FleetStatus['budget'];
  if (has.rows[0]?.budget) {
    // Of the limit the slots are counted by: the stricter of the live limits (budget_limits), or of
    // the last ones kept when no process lives; the slots' rows made so far only before that table.
    const limits = (await db.query("SELECT to_regclass('budget_limits') IS NOT NULL AS t")).rows[0]?.t === true;
    const b = await db.query<{ used: number; slots: number }>(
      limits
        ? `SELECT (SELECT count(*) FROM budget_slots WHERE busy_until > $1::timestamptz)::int AS used,
             coalesce((SELECT min(count) FROM budget_limits WHERE until > $1::timestamptz), (SELECT min(count) FROM budget_limits),
               (SELECT count(*) FROM budget_slots))::int AS slots`
        : 'SELECT count(*) FILTER (WHERE busy_until > $1::timestamptz)::int AS used, count(*)::int AS slots FROM budget_slots',
      [now],
    );
    const row = b.rows[0];
    if (row && row.slots > 0) budget = { used: row.used, slots: row.slots };
  }
  return {
    now: iso(now),
    workers: workers.rows.map((w) => ({
      id: w.id,
      host: w.host,
      pid: w.pid,
      since: iso(w.started_at),
      heartbeat: iso(w.heartbeat_at),
      leaseMs: w.lease_ms,
      alive: w.alive,
      streams: leases.rows.filter((l) => l.worker === w.id).map((l) => l.stream),
    })),
    leases: leases.rows.map((l) => {
      const w = byId.get(l.worker);
      return {
        stream: l.stream,
        worker: l.worker,
        host: w?.host ?? 'unknown',
        pid: w?.pid ?? 0,
        since: iso(l.since),
        expires: iso(l.expires_at),
        stalled: w === undefined || !w.alive,
      };
    }),
    budget,
  };
}
