/**
 * The rewrite that follows a PostgreSQL erasure. A DELETE or UPDATE leaves the old row versions in
 * the table's files, and a plain VACUUM only marks their space free: the bytes stay until something
 * overwrites them. `VACUUM (FULL)` copies the live rows into new files (the table, its TOAST table
 * and every index) and unlinks the old ones, so no byte of an erased row stays in the relation files.
 *
 * The erasure's transaction records which tables it changed in `meta` (REWRITE_PENDING_KEY), so the
 * mark commits with the erasure: a crash, a refused rewrite (VACUUM FULL needs room for a second copy
 * of the table) or a killed forget leaves the mark, and the next `forget` or `pull` rewrites what it
 * names. The mark names tables only, never a person. Each table leaves the mark once rewritten.
 *
 * VACUUM FULL copies every row version a transaction still open may see: one that began before the
 * erasure committed (a dashboard's query left open, a worker's page) keeps the erased versions alive,
 * and the copy would carry their bytes over. So the rewrite first waits (Waits.pgSnapshotMs) for the
 * transactions of the database that began before it, and a copy that still had to keep dead versions
 * (VACUUM's VERBOSE report says so) leaves its table on the mark and says which transaction held them.
 *
 * VACUUM FULL holds an ACCESS EXCLUSIVE lock on the table while it copies: it runs while the caller
 * holds every stream's lease, so no worker has a page to write, and a worker's read of the table
 * (its checkpoints, status, export) waits for the lock rather than failing. It cannot run inside a
 * transaction block: each table is one statement on its own.
 */
import type pg from 'pg';
import { currentWaits } from '../../core/io.js';
import { errorCode, LockedError, StorageError } from '../../errors.js';
import type { PgDatabase } from './database.js';
import { holdAll } from './lease-hold.js';
import { PgLeases } from './leases.js';
import { withoutSecrets } from './url.js';

/** The `meta` key of the tables an erasure changed and whose files are not rewritten yet. */
export const REWRITE_PENDING_KEY = 'erasure_rewrite_pending';

/**
 * Every table an erasure may change, in the order they are rewritten. Only these names are ever
 * put in a statement, whatever the mark says.
 */
export const REWRITTEN_TABLES = [
  'session_results',
  'role_results',
  'score_details',
  'eval_results',
  'past_versions',
  'quarantine',
  'drift_seen',
  'sync_state',
  'tombstones',
] as const;
export type RewrittenTable = (typeof REWRITTEN_TABLES)[number];

function known(value: string | undefined): RewrittenTable[] {
  if (value === undefined) return [];
  let named: unknown;
  try {
    named = JSON.parse(value);
  } catch {
    return [...REWRITTEN_TABLES];
  }
  // A mark this version cannot read names every table: rewriting too much is only slower.
  if (!Array.isArray(named)) return [...REWRITTEN_TABLES];
  return REWRITTEN_TABLES.filter((t) => named.includes(t));
}

async function write(q: Pick<pg.ClientBase, 'query'>, tables: readonly RewrittenTable[]): Promise<void> {
  if (tables.length === 0) await q.query('DELETE FROM meta WHERE key = $1', [REWRITE_PENDING_KEY]);
  else
    await q.query('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [
      REWRITE_PENDING_KEY,
      JSON.stringify(tables),
    ]);
}

/** In the erasure's transaction: adds `tables` to the mark, so it commits with the rows it changed. */
export async function markRewrite(c: pg.PoolClient, tables: ReadonlySet<RewrittenTable>): Promise<void> {
  if (tables.size === 0) return;
  const stored = await c.query<{ value: string }>('SELECT value FROM meta WHERE key = $1 FOR UPDATE', [REWRITE_PENDING_KEY]);
  const before = new Set(known(stored.rows[0]?.value));
  await write(
    c,
    REWRITTEN_TABLES.filter((t) => tables.has(t) || before.has(t)),
  );
}

/** The tables the mark names (none when no rewrite is pending). */
export async function pendingRewrite(db: PgDatabase): Promise<RewrittenTable[]> {
  const stored = await db.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [REWRITE_PENDING_KEY]);
  return known(stored.rows[0]?.value);
}

/**
 * Rewrites each table the mark names (VACUUM FULL), taking it off the mark once done, and clears the
 * mark. Call with every stream's lease held. A refusal of the server (no room for the copy, a
 * lock_timeout of the role) is a StorageError (exit 74) saying that the erasure itself is committed
 * and how the bytes left go; the mark stays for the next `forget` or `pull`.
 */
export async function rewriteErased(db: PgDatabase): Promise<RewrittenTable[]> {
  const tables = await pendingRewrite(db);
  if (tables.length === 0) return tables;
  // One wait for the whole rewrite, however many tables.
  const until = Date.now() + currentWaits().pgSnapshotMs;
  const holder = await snapshotsEnded(db, until);
  const left = [...tables];
  const kept: RewrittenTable[] = [];
  for (const table of tables) {
    const present = await db.query<{ t: boolean }>('SELECT to_regclass($1) IS NOT NULL AS t', [table]);
    try {
      if (present.rows[0]?.t === true && !(await rewriteWhole(db, table, until))) kept.push(table);
    } catch (err) {
      const code = errorCode(err);
      const message = withoutSecrets((err as Error)?.message ?? String(err), db.url);
      throw new StorageError(
        `the erasure is committed, but ${db.name} refused to rewrite table ${table}: ${message}${code ? ` (${code})` : ''}; ` +
          `the erased rows' bytes stay in its files until \`campaign-sync forget\` runs again (any --user) or a \`VACUUM FULL ${table}\` succeeds (it needs free space for a copy of the table)`,
        { code, cause: err },
      );
    }
    left.shift();
    await db.session((c) => write(c, [...kept, ...left]), 'cannot write to');
  }
  if (kept.length > 0) {
    const who = holder ?? (await olderSnapshot(db, new Date()));
    throw new StorageError(
      `the erasure is committed, but ${who === undefined ? 'a transaction' : `a transaction open since ${who.since} (${who.who}, pid ${who.pid})`} ` +
        `still sees the erased rows, so their old versions stay in the files of ${kept.join(', ')}: ` +
        'once it has ended, run `campaign-sync forget` again (any --user), or the next pull rewrites them',
    );
  }
  return tables;
}

/** A session of this database whose transaction began before `at` and holds a snapshot: it may see what an erasure removed. */
interface Holder {
  pid: number;
  since: string;
  who: string;
}

async function olderSnapshot(db: PgDatabase, at: Date): Promise<Holder | undefined> {
  // Another role's sessions show no snapshot here without pg_read_all_stats: VACUUM's report catches those.
  const r = await db.query<{ pid: number; since: Date; who: string }>(
    `SELECT pid, xact_start AS since, coalesce(nullif(application_name, ''), usename::text, 'a session') AS who FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND xact_start < $1
      ORDER BY xact_start LIMIT 1`,
    [at],
  );
  const row = r.rows[0];
  return row === undefined ? undefined : { pid: row.pid, since: row.since.toISOString(), who: row.who };
}

/**
 * Waits, until `until`, for the transactions that began before `at` (now, by default) to end; the
 * one still open then, if any (the rewrite goes on, and keeps what it must).
 */
async function snapshotsEnded(db: PgDatabase, until: number, at = new Date()): Promise<Holder | undefined> {
  for (;;) {
    const holder = await olderSnapshot(db, at);
    if (holder === undefined || Date.now() >= until) return holder;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Rewrites `table` until its copy kept no dead row version, waiting between tries for the
 * transactions that began before the last one, until `until` (the rewrite's Waits.pgSnapshotMs): a short
 * transaction anywhere that held the horizon back ends by then. True once a copy kept none.
 */
async function rewriteWhole(db: PgDatabase, table: RewrittenTable, until: number): Promise<boolean> {
  for (;;) {
    const at = new Date();
    if ((await vacuumFull(db, table)) === 0) return true;
    if (Date.now() >= until) return false;
    await snapshotsEnded(db, until, at);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * `VACUUM (FULL, VERBOSE)` of one table, on a connection of its own; returns how many dead row
 * versions it had to keep for a transaction still open (its report's DETAIL, when the server speaks
 * English: 0 when it says nothing this can read).
 */
async function vacuumFull(db: PgDatabase, table: RewrittenTable): Promise<number> {
  const c = await db.pool.connect();
  let kept = 0;
  const heard = (n: { message?: string; detail?: string }) => {
    const m = /(\d+) dead row versions cannot be removed yet/.exec(`${n.message ?? ''} ${n.detail ?? ''}`);
    if (m) kept += Number(m[1]);
  };
  c.on('notice', heard);
  let broken = false;
  try {
    await c.query(`VACUUM (FULL, VERBOSE) ${table}`);
  } catch (err) {
    broken = true;
    throw err;
  } finally {
    c.off('notice', heard);
    c.release(broken);
  }
  return kept;
}

/**
 * At a pull's or watch's open: a rewrite an earlier erasure left (a crash, a refusal) is finished
 * under every stream's lease. A stream another worker holds puts it off to the next open, and a
 * refusal of the server is a warning: the erasure is committed, and syncing goes on.
 */
export async function finishRewrite(db: PgDatabase, leaseMs: number, warn?: (text: string) => void): Promise<void> {
  if ((await pendingRewrite(db)).length === 0) return;
  const leases = new PgLeases(db, leaseMs);
  try {
    const streams = (await db.query<{ stream: string }>('SELECT stream FROM sync_state')).rows.map((r) => r.stream);
    await holdAll(leases, streams, db.name);
    await rewriteErased(db);
  } catch (err) {
    if (!(err instanceof LockedError || err instanceof StorageError)) throw err;
    warn?.(
      err instanceof LockedError
        ? `the rewrite of tables an erasure changed is put off to the next pull or forget: ${err.message}`
        : err.message,
    );
  } finally {
    await leases.close();
  }
}
