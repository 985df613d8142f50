/**
 * A retention setting applied to the PostgreSQL mirror (store/model/retention.ts says when): the
 * results dated before now minus the retention erased as `forget --older-than` erases them
 * (store/pg/erase-rows.ts), holding every stream's lease (as forget does), taken and given back before the
 * sink claims its own, and the tables it changed rewritten under them (rewrite.ts). A stream another
 * worker holds puts it off: the next open tries again, a watch within the hour.
 *
 * Now is the server's clock (store/pg/server-clock.ts), and so is when it ran: a worker whose clock is
 * a year ahead cuts where every other worker would, each result's own date against the server's now,
 * and records no run in the future that would shift when the others run it.
 */
import { LockedError, StorageError } from '../../errors.js';
import { foundAny } from '../model/erasure-plan.js';
import { RETENTION_EVERY_MS, RETENTION_RAN_KEY, retentionDue } from '../model/retention.js';
import type { Retained } from '../port.js';
import type { PgDatabase } from './database.js';
import { allStreams, eraseFromPg } from './erase-rows.js';
import { holdAll } from './lease-hold.js';
import { PgLeases } from './leases.js';
import { DEFAULT_LEASE_MS } from './open.js';
import { rewriteErased } from './rewrite.js';
import { serverNow } from './server-clock.js';

const RETRY_MS = 3_600_000;

/** Applies the retention if due; returns what it erased and when it last ran (as a watch should count it). */
export async function applyPgRetention(
  db: PgDatabase,
  retentionMs: number,
  warn?: (text: string) => void,
  leaseMs = DEFAULT_LEASE_MS,
): Promise<{ retained?: Retained; ranAt: string | undefined }> {
  const stored = await db.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [RETENTION_RAN_KEY]);
  const ranAt = stored.rows[0]?.value;
  let now = await serverNow(db);
  if (!retentionDue(ranAt, now)) return { ranAt };
  const leases = new PgLeases(db, leaseMs);
  try {
    try {
      await holdAll(leases, await allStreams(db), db.name);
    } catch (err) {
      if (!(err instanceof LockedError)) throw err;
      warn?.(`the retention is put off: ${err.message}`);
      return { ranAt: new Date(now - RETENTION_EVERY_MS + RETRY_MS).toISOString() };
    }
    // The cut as the leases are held (the wait for them may have been long).
    now = await serverNow(db);
    const before = now - retentionMs;
    const { rows, copies } = await eraseFromPg(db, { before });
    const at = new Date(now).toISOString();
    await db.query(
      'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [RETENTION_RAN_KEY, at],
      'cannot write to',
    );
    // The tables it changed rewritten under the same leases; a refusal leaves the mark for the next
    // pull or forget, and this pull goes on: the erasure is committed.
    try {
      await rewriteErased(db);
    } catch (err) {
      if (!(err instanceof StorageError)) throw err;
      warn?.(err.message);
    }
    const done = { rows, copies, files: [], found: foundAny(rows, copies) };
    return { retained: { before: new Date(before).toISOString(), done }, ranAt: at };
  } finally {
    await leases.close();
  }
}
