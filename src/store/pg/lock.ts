/**
 * The run lock of the PostgreSQL mirror: one session-level advisory lock per stream, held on one
 * connection for the life of the process. Several workers (other keys, other campaigns) write one
 * database; a stream is synced by one worker at a time, and a second worker reaching a stream another
 * holds stops with LockedError (exit 75). The server releases a dead worker's locks when its
 * connection drops (kill -9 included): nothing stale to clean up.
 *
 * Keys are (hashtext('campaign-sync <schema>'), hashtext(stream)): two streams whose hashes collide
 * would exclude each other; a false "locked", never a missed one.
 */
import type pg from 'pg';
import { LockedError } from '../../errors.js';
import type { PgDatabase } from './database.js';

export class PgLocks {
  // A promise, so that streams opening together share one connection (and one set of locks).
  private client: Promise<pg.PoolClient> | undefined;
  private readonly held = new Set<string>();
  /** Lock queries one at a time: one connection runs one query at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: PgDatabase) {}

  /**
   * Set when the locks' connection dropped (the server ended it, or its network went): the server
   * released every lock with it, so this process must stop writing (the sink checks it).
   */
  lost: unknown;

  private connection(): Promise<pg.PoolClient> {
    this.client ??= this.open().catch((err: unknown) => {
      this.client = undefined;
      throw this.db.failure(err, 'cannot lock');
    });
    return this.client;
  }

  private async open(): Promise<pg.PoolClient> {
    const client = await this.db.pool.connect();
    // Checked out for the whole run: its loss is recorded here, and the next write stops on it.
    client.on('error', (err) => {
      this.lost ??= this.db.failure(err, 'lost the stream locks of');
    });
    try {
      // Idle for the whole run by design: a server's idle_session_timeout (PostgreSQL 14 and later;
      // earlier servers have no such setting) would end it, and the locks with it, in every pass
      // longer than the timeout. The pool's other connections idle only in the pool, which drops one
      // the server ends and opens another.
      await client.query(
        "SELECT set_config('idle_session_timeout', '0', false) WHERE current_setting('idle_session_timeout', true) IS NOT NULL",
      );
    } catch (err) {
      client.release(true);
      throw err;
    }
    return client;
  }

  /** Takes the lock of `name` (a stream key, or `*` for the whole mirror) or throws LockedError at once. */
  acquire(name: string, what = `stream ${name}`): Promise<void> {
    const next = this.queue.then(() => this.take(name, what));
    this.queue = next.catch(() => {});
    return next;
  }

  private async take(name: string, what: string): Promise<void> {
    if (this.held.has(name)) return;
    const client = await this.connection();
    const key = [`campaign-sync ${this.db.schema}`, name];
    let got: boolean;
    try {
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1), hashtext($2)) AS ok', key);
      got = r.rows[0]?.ok === true;
    } catch (err) {
      throw this.db.failure(err, 'cannot lock');
    }
    if (!got) throw new LockedError(`another campaign-sync is syncing ${what} of ${this.db.name} (${await this.holder(client, key)})`);
    this.held.add(name);
  }

  /** Who holds the lock: its connection's application name (pid and host), address and start. */
  private async holder(client: pg.PoolClient, key: string[]): Promise<string> {
    try {
      const r = await client.query<{ app: string | null; addr: string | null; since: Date | null }>(
        `SELECT a.application_name AS app, a.client_addr::text AS addr, a.backend_start AS since
           FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.classid::int = hashtext($1) AND l.objid::int = hashtext($2) AND l.objsubid = 2
          LIMIT 1`,
        key,
      );
      const h = r.rows[0];
      if (!h) return 'holder unknown';
      return `${h.app || 'another client'}${h.addr ? ` from ${h.addr}` : ''}, since ${h.since?.toISOString() ?? '?'}`;
    } catch {
      return 'holder unknown';
    }
  }

  /** Releases every lock (the connection is closed, so nothing of it lingers). */
  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) (await client.catch(() => undefined))?.release(true);
    this.held.clear();
  }
}

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
