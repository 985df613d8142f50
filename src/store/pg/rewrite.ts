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
 * VACUUM FULL holds an ACCESS EXCLUSIVE lock on the table while it copies: it runs while the caller
 * holds every stream's lease, so no worker has a page to write, and a worker's read of the table
 * (its checkpoints, status, export) waits for the lock rather than failing. It cannot run inside a
 * transaction block: each table is one statement on its own.
 */
import type pg from 'pg';
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
  const left = [...tables];
  for (const table of tables) {
    const present = await db.query<{ t: boolean }>('SELECT to_regclass($1) IS NOT NULL AS t', [table]);
    try {
      if (present.rows[0]?.t === true) await db.pool.query(`VACUUM (FULL) ${table}`);
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
    await db.session((c) => write(c, left), 'cannot write to');
  }
  return tables;
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
