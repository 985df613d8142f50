/**
 * Stream leases of a PostgreSQL mirror that several workers (pull or watch processes, on several
 * hosts) sync together. A worker registers in `workers` and renews its heartbeat and its leases every
 * third of the lease; it takes a stream whose lease is free or expired, with a new fencing token from
 * `lease_tokens`, and gives it back when the stream is done for the pass. A worker that dies (kill -9,
 * its host gone) stops renewing: its leases expire within one lease, and another worker takes them.
 *
 * Fencing: each page's transaction first reads the stream's lease row with this worker's token FOR
 * SHARE (`fence`), and fails with LeaseLostError when the row names another holding. A taker's update
 * of that row waits for the page's transaction to end, so a page either commits before the takeover
 * (and the taker reads its checkpoint) or not at all. A worker frozen inside a transaction is cut off
 * by the server after one lease (idle_in_transaction_session_timeout, open.ts), so it cannot hold a
 * stream's row, nor its takeover, for longer.
 *
 * Every time is the server's clock (clock_timestamp()): the hosts' clocks need not agree.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { LeaseLostError } from '../../errors.js';
import type { Claim, FleetTimes, StreamLeases } from '../model/stream-leases.js';
import type { PgDatabase } from './database.js';

const SQL = {
  register: `INSERT INTO workers (id, host, pid, started_at, heartbeat_at, lease_ms) VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp(), $4)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp()`,
  // Workers silent for a day are gone for good: their rows go, and the lease rows they left are free.
  purge: "DELETE FROM workers WHERE heartbeat_at < clock_timestamp() - interval '1 day'",
  // Renewed only where the token is still this worker's: a lease another worker took stays theirs.
  renew: `WITH w AS (
      INSERT INTO workers (id, host, pid, started_at, heartbeat_at, lease_ms) VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp(), $4)
      ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp() RETURNING id)
    UPDATE leases SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
     WHERE worker = (SELECT id FROM w) AND token = ANY($5::bigint[]) RETURNING stream`,
  now: 'SELECT clock_timestamp()::text AS now',
  // A free lease (released, or expired: its holder stopped renewing) is taken with a new token; one
  // whose last completed sync began after the pass started is left alone ('done'). A lease seen held
  // is not written at all: the answer 'busy' never waits for the holder's page to commit.
  claim: `WITH prior AS (
      SELECT (worker IS NOT NULL AND expires_at > clock_timestamp()) AS held, coalesce(done_since >= $4::timestamptz, false) AS done
        FROM leases WHERE stream = $1),
    t AS (
      INSERT INTO leases AS l (stream, worker, token, since, expires_at)
      SELECT $1, $2, nextval('lease_tokens'), clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond'
       WHERE NOT EXISTS (SELECT 1 FROM prior WHERE held OR done)
      ON CONFLICT (stream) DO UPDATE SET worker = excluded.worker, token = excluded.token, since = excluded.since, expires_at = excluded.expires_at
      WHERE (l.worker IS NULL OR l.expires_at <= clock_timestamp()) AND (l.done_since IS NULL OR l.done_since < $4::timestamptz)
      RETURNING l.token)
    SELECT (SELECT token::text FROM t) AS token, coalesce((SELECT done FROM prior), false) AS done`,
  release: `UPDATE leases SET worker = NULL, expires_at = clock_timestamp(), done_since = CASE WHEN $4 THEN since ELSE done_since END
     WHERE stream = $1 AND worker = $2 AND token = $3`,
  releaseAll: 'UPDATE leases SET worker = NULL, expires_at = clock_timestamp() WHERE worker = $1',
  leave: 'DELETE FROM workers WHERE id = $1',
  fence: 'SELECT 1 FROM leases WHERE stream = $1 AND worker = $2 AND token = $3 FOR SHARE',
  times: `SELECT extract(epoch FROM clock_timestamp()) * 1000 AS now,
      (SELECT count(*)::int FROM workers WHERE heartbeat_at > clock_timestamp() - lease_ms * interval '1 millisecond') AS workers,
      (SELECT coalesce(json_agg(json_build_array(stream, extract(epoch FROM done_since) * 1000)), '[]') FROM leases WHERE done_since IS NOT NULL) AS done`,
};

export class PgLeases implements StreamLeases {
  readonly id = randomUUID();
  private readonly host = hostname();
  /** Stream -> this worker's token for it. */
  private readonly tokens = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private registered: Promise<void> | undefined;

  constructor(
    private readonly db: PgDatabase,
    /** --lease, in milliseconds. */
    readonly leaseMs: number,
  ) {}

  get retryMs(): number {
    return Math.max(100, Math.min(1000, Math.floor(this.leaseMs / 4)));
  }

  /** Registers the worker (once) and starts renewing its heartbeat and leases. */
  private register(): Promise<void> {
    this.registered ??= (async () => {
      await this.db.query(SQL.purge, [], 'cannot write to');
      await this.db.query(SQL.register, [this.id, this.host, process.pid, this.leaseMs], 'cannot write to');
      this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.leaseMs / 3)));
      this.timer.unref();
    })().catch((err: unknown) => {
      this.registered = undefined;
      throw err;
    });
    return this.registered;
  }

  /** The heartbeat: a failure is left to the next page, whose fence fails if the lease went meanwhile. */
  private async renew(): Promise<void> {
    try {
      await this.db.pool.query(SQL.renew, [this.id, this.host, process.pid, this.leaseMs, [...this.tokens.values()]]);
    } catch {}
  }

  async begin(): Promise<string> {
    await this.register();
    const r = await this.db.query<{ now: string }>(SQL.now);
    return r.rows[0]?.now as string;
  }

  async claim(stream: string, passStart: string): Promise<Claim> {
    await this.register();
    const r = await this.db.query<{ token: string | null; done: boolean }>(
      SQL.claim,
      [stream, this.id, this.leaseMs, passStart],
      'cannot write to',
    );
    const row = r.rows[0];
    if (row?.token) {
      this.tokens.set(stream, row.token);
      return 'taken';
    }
    return row?.done ? 'done' : 'busy';
  }

  /** Whether this worker took the stream's lease (and has not given it back). */
  holds(stream: string): boolean {
    return this.tokens.has(stream);
  }

  async release(stream: string, done: boolean): Promise<void> {
    const token = this.tokens.get(stream);
    if (token === undefined) return;
    this.tokens.delete(stream);
    await this.db.query(SQL.release, [stream, this.id, token, done], 'cannot write to');
  }

  /**
   * In a page's transaction, before its writes: the stream's lease is still this worker's (held FOR
   * SHARE until the transaction ends, so no takeover lands in between); else LeaseLostError.
   */
  async fence(client: pg.ClientBase, stream: string): Promise<void> {
    const token = this.tokens.get(stream);
    const r = token === undefined ? undefined : await client.query(SQL.fence, [stream, this.id, token]);
    if (r?.rowCount !== 1) throw this.lost(stream);
  }

  /**
   * The parameters (stream, worker, token) of the fence a one-statement page checks in its own
   * statement (statements.ts withTicket), FOR SHARE as `fence` does; throws LeaseLostError when this
   * worker holds no lease of the stream.
   */
  fenceParams(stream: string): [string, string, string] {
    const token = this.tokens.get(stream);
    if (token === undefined) throw this.lost(stream);
    return [stream, this.id, token];
  }

  /** The error of a page whose stream's lease this worker lost (it forgets the lease). */
  lost(stream: string): LeaseLostError {
    this.tokens.delete(stream);
    return new LeaseLostError(
      `stream ${stream}: this worker lost its lease (it went longer than --lease ${this.leaseMs / 1000}s without renewing it) and another worker took the stream; this page was not written`,
    );
  }

  /** When each stream's last completed sync began, the database's clock now, and the live workers. */
  async times(): Promise<FleetTimes> {
    await this.register();
    const r = await this.db.query<{ now: string; workers: number; done: Array<[string, number]> }>(SQL.times);
    const row = r.rows[0];
    return {
      now: Number(row?.now),
      checked: new Map((row?.done ?? []).map(([stream, at]) => [stream, Number(at)])),
      workers: Math.max(1, row?.workers ?? 1),
    };
  }

  /** Gives back every lease and leaves the fleet (the end of a pull or watch). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.tokens.clear();
    if (this.registered === undefined) return;
    this.registered = undefined;
    try {
      await this.db.pool.query(SQL.releaseAll, [this.id]);
      await this.db.pool.query(SQL.leave, [this.id]);
    } catch {}
  }
}
