/**
 * A PostgreSQL team mirror, opened: a pool of connections whose search_path is pg_catalog, then the
 * mirror's schema (refused when a role other than ours could create in it: schema-guard.ts), migrated
 * on open. A host off this machine is reached over TLS, or in plaintext only when the URL says so
 * (core/pg-url.ts). Every failure of the server (unreachable, refused login, a failed write) is a
 * StorageError (exit 74) naming the database with its password redacted; one while opening also
 * names where the URL came from (--db, CAMPAIGN_SYNC_DB, a profile's key), the value to fix.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import { CampaignSyncError, errorCode, StorageError, UsageError } from '../../errors.js';
import { ident, migratePg } from './schema.js';
import { guardSchema } from './schema-guard.js';
import { checkPgUrl, driverInput, redactUrl, withoutSecrets } from './url.js';

export interface PgOpenOptions {
  /** Connections in the pool (open.ts: two per concurrent stream, plus two). */
  connections?: number;
  /** Do not create or migrate (status, export): a missing schema is a usage error. */
  mustExist?: boolean;
  /** With mustExist: a mirror that exists is still brought to the current version (export --since-last writes). */
  upgrade?: boolean;
  /** Where the URL came from (`--db`, the default; `CAMPAIGN_SYNC_DB`; a profile's key): what a failure to open names. */
  where?: string;
  /**
   * Ends a session idle inside a transaction this long (ms): a worker frozen mid-page (SIGSTOP, a
   * host cut off) holds its stream's lease row no longer than its lease (leases.ts).
   */
  idleInTransactionMs?: number;
}

export class PgDatabase {
  /** The database as messages name it: URL without password, and the schema. */
  readonly name: string;

  private constructor(
    readonly pool: pg.Pool,
    readonly url: string,
    readonly schema: string,
  ) {
    this.name = `${redactUrl(url)} (schema ${schema})`;
  }

  static async open(url: string, schema: string, opts: PgOpenOptions = {}): Promise<PgDatabase> {
    const where = opts.where ?? '--db';
    const driver = driverInput(url, checkPgUrl(url, where));
    const idle =
      opts.idleInTransactionMs === undefined ? '' : ` -c idle_in_transaction_session_timeout=${Math.ceil(opts.idleInTransactionMs)}`;
    const pool = new pg.Pool({
      connectionString: driver.connectionString,
      ...(driver.ssl === undefined ? {} : { ssl: driver.ssl }),
      max: opts.connections ?? 5,
      connectionTimeoutMillis: 15_000,
      // A server or network that vanishes without a reset is noticed by TCP keepalive, not never.
      keepAlive: true,
      // Who holds a stream's lock, for the message of a second worker (store/pg/lock.ts).
      application_name: `campaign-sync pid ${process.pid} on ${hostname()}`.slice(0, 63),
      // synchronous_commit off: a commit does not wait for its WAL flush. A crash of the server (not
      // of campaign-sync: a kill -9 of ours loses nothing committed) may drop the last fraction of a
      // second of pages, records and checkpoints together, so they are read again, never duplicated:
      // the trade SQLite's synchronous=NORMAL makes (store/sqlite/db.ts). Per-page commits cost 3-5x less.
      // Read committed whatever the role's or database's default: a page's compare-and-set reads the
      // checkpoint row as the page before it committed it (statements.ts withTicket), which repeatable
      // read refuses (40001).
      // search_path: pg_catalog, then the mirror's schema alone, which schema-guard.ts checks no other
      // role can create in: every unqualified function, operator, type and sequence resolves in one of
      // the two, never in public or a "$user" schema another login made. After the URL's own options,
      // so that ours win (a later -c beats an earlier one).
      options: `${driver.options ? `${driver.options} ` : ''}-c search_path=pg_catalog,${ident(schema)} -c synchronous_commit=off -c default_transaction_isolation=read\\ committed${idle}`,
    });
    // A connection the server ends (pg_terminate_backend, a restart, idle_session_timeout) or whose
    // network goes emits 'error' on its client, and an 'error' event nobody listens to ends the process
    // with a stack trace. The pool listens on its idle clients (and drops them: the next checkout opens
    // a new one), re-emitting on the pool; a client checked out loses that listener, so every client
    // gets one of its own at birth. The statement under way, or the next one, fails with the cause,
    // and becomes a StorageError (`failure`).
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new PgDatabase(pool, url, schema);
    try {
      const client = await pool.connect();
      try {
        // Before anything else runs with the schema on the search_path.
        await guardSchema(client, schema, db.name);
        if (opts.mustExist) await db.checkExists(client, where);
        if (!opts.mustExist || opts.upgrade) await migratePg(client, schema, db.name);
      } finally {
        client.release();
      }
    } catch (err) {
      await pool.end().catch(() => {});
      throw missingDatabase(err, url, where) ?? db.failure(err, `${where}: cannot open`);
    }
    return db;
  }

  private async checkExists(client: pg.PoolClient, where: string): Promise<void> {
    const r = await client.query("SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'sync_state'", [
      this.schema,
    ]);
    if (r.rowCount === 0) {
      // As a missing SQLite file: a wrong --db or --pg-schema (exit 2), not a storage failure.
      throw new UsageError(
        `${where}: no campaign-sync mirror in ${this.name} (run \`campaign-sync pull\` on it first, or pass --pg-schema)`,
      );
    }
  }

  /** A query on any connection of the pool; failures become StorageErrors (`what`: what failed). */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    what = 'cannot read',
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      // Ended while it waited in the pool: the statement never ran; once more on a new connection.
      if (!endedWhileIdle(err)) throw this.failure(err, what);
    }
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw this.failure(err, what);
    }
  }

  /** Runs `fn` on one connection, outside a transaction (each statement commits on its own). */
  async session<T>(fn: (client: pg.PoolClient) => Promise<T>, what = 'cannot write to'): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.checkout(what);
      const counted = counting(client);
      let dead = false;
      try {
        return await fn(counted.client);
      } catch (err) {
        dead = isDisconnect(errorCode(err), (err as Error)?.message);
        if (attempt === 0 && counted.ran() === 0 && endedWhileIdle(err)) continue;
        throw this.failure(err, what);
      } finally {
        client.release(dead);
      }
    }
  }

  /**
   * Runs `fn` in one transaction on one connection: all of it commits, or none. `begin`: the
   * statement that opens it (BEGIN, or BEGIN with what the transaction must hold first, a lock).
   */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>, what = 'cannot write to', begin = 'BEGIN'): Promise<T> {
    const { client } = await this.opened(begin, what);
    let broken = false;
    try {
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw this.failure(err, what);
    } finally {
      client.release(broken);
    }
  }

  /**
   * A connection of the pool on which `first` (a BEGIN, or --since-last's window end) ran, and its
   * result; the caller releases it.
   * One the server ended while it waited in the pool (57P05: `first` never ran) is replaced once.
   */
  async opened(first: string, what: string): Promise<{ client: pg.PoolClient; result: pg.QueryResult }> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.checkout(what);
      try {
        return { client, result: await client.query(first) };
      } catch (err) {
        client.release(true);
        if (attempt === 0 && endedWhileIdle(err)) continue;
        throw this.failure(err, what);
      }
    }
  }

  private async checkout(what: string): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw this.failure(err, what);
    }
  }

  /** A driver or server error as a one-line StorageError; ours pass through. */
  failure(err: unknown, what: string): unknown {
    if (err instanceof CampaignSyncError) return err;
    const e = err as { message?: string; code?: string };
    const code = errorCode(err);
    const message = withoutSecrets(e?.message ?? String(err), this.url);
    const disconnected = isDisconnect(code, e?.message);
    return new StorageError(
      `${what} ${this.name}: ${message}${code ? ` (${code})` : ''}; nothing committed was lost: ${disconnected ? 'run again' : 'fix the database and run again'}`,
      { code, cause: err, disconnected },
    );
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}

/**
 * A database the server does not have (3D000, invalid_catalog_name): the URL names one nobody created,
 * a mistake in the set-up rather than a failure of storage, so a usage error (exit 2) saying how to
 * create it. `createdb`'s flags are those `pg` itself resolved from the URL and the PG* variables.
 */
function missingDatabase(err: unknown, url: string, where: string): UsageError | undefined {
  if (errorCode(err) !== '3D000') return undefined;
  const p = new pg.Client(url);
  const word = (v: string | number) => (/^[\w./:@+-]+$/.test(String(v)) ? String(v) : `'${String(v).replace(/'/g, `'\\''`)}'`);
  const flags = [p.host ? `-h ${word(p.host)}` : '', p.port ? `-p ${word(p.port)}` : '', p.user ? `-U ${word(p.user)}` : '']
    .filter(Boolean)
    .join(' ');
  const name = p.database ?? '';
  return new UsageError(
    `${where}: the database "${name}" does not exist on the server at ${p.host}:${p.port} (3D000); create it (\`createdb ${flags ? `${flags} ` : ''}${word(name)}\`) or name an existing one in the URL`,
  );
}

/**
 * The server had ended the connection for sitting idle outside a transaction (57P05,
 * idle_session_timeout) before the statement reached it: a connection the pool handed out before
 * its end was read (a busy process). That statement never ran, so the work can start again on a new
 * connection when it was the first of its checkout.
 */
function endedWhileIdle(err: unknown): boolean {
  return errorCode(err) === '57P05';
}

/**
 * `client` as a `session` function sees it, counting its statements that ran to their end: whether
 * a failure came before anything was done on this checkout.
 */
function counting(client: pg.PoolClient): { client: pg.PoolClient; ran: () => number } {
  let ran = 0;
  const query = (...args: unknown[]) => {
    const out = (client.query as (...a: unknown[]) => unknown)(...args);
    if (out instanceof Promise)
      out.then(
        () => ran++,
        () => {},
      );
    return out;
  };
  const proxy = new Proxy(client, {
    get: (target, key) => {
      if (key === 'query') return query;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { client: proxy, ran: () => ran };
}

/** Errno codes of a connection that failed or broke at the network: the server may be back soon. */
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a failure is the loss of the connection rather than a fault of the database: SQLSTATE class
 * 08 (connection exception); 57P01-57P03 (the server shutting down, restarting or starting) and 57P05
 * (idle_session_timeout); a network errno; the driver's own words for a socket that closed.
 */
function isDisconnect(code: string | undefined, message: string | undefined): boolean {
  // 25P03: the server ended a session left idle inside a transaction (a worker frozen mid-page, open.ts).
  if (code !== undefined && (code.startsWith('08') || /^57P0[1235]$/.test(code) || code === '25P03' || NETWORK_CODES.has(code)))
    return true;
  return /^Connection terminated|connection error and is not queryable/.test(message ?? '');
}
