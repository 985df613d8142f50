/** `forget --user` on a PostgreSQL team mirror: the rows of store/pg/erase.ts, under every stream's lock. */
import { resolvePgSchema } from '../config/config.js';
import { UsageError } from '../errors.js';
import { PgDatabase } from '../store/pg/database.js';
import { allStreams, eraseFromPg } from '../store/pg/erase.js';
import { PgLocks } from '../store/pg/lock.js';
import { showText } from '../ui/escape.js';
import { erasedLine } from '../ui/forget.js';
import type { Output } from '../ui/output.js';

/** `target`: the URL and where it came from (--db, CAMPAIGN_SYNC_DB, a profile's key). */
export async function forgetInPg(
  target: { url: string; where: string },
  pgSchema: string | undefined,
  user: string,
  out: Output,
): Promise<number> {
  const db = await PgDatabase.open(target.url, resolvePgSchema(pgSchema), { connections: 2, mustExist: true, where: target.where });
  const locks = new PgLocks(db);
  try {
    // A pull running meanwhile could write the user's records back: hold every stream.
    for (const stream of await allStreams(db)) await locks.acquire(stream);
    const rows = await eraseFromPg(db, user);
    if (rows.session_results + rows.role_results + rows.score_details + rows.records_changed + rows.error_texts === 0) {
      throw new UsageError(
        `forget: no record of the candidate "${showText(user)}" in ${db.name} (match: user id, or e-mail ignoring case, at the top of a record or nested in it)`,
      );
    }
    out.document({ user, removed: rows, files: [] });
    out.print(erasedLine(user, rows, db.name));
    return 0;
  } finally {
    await locks.release();
    await db.close();
  }
}
