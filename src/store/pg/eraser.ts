/** `forget` on a PostgreSQL team mirror: the rows of store/pg/erase.ts, under every stream's lock. */
import type { EraseMirror, MirrorTarget } from '../mirror-port.js';
import { PgDatabase } from './database.js';
import { allStreams, eraseFromPg } from './erase.js';
import { PgLocks } from './lock.js';

export async function openPgEraser(t: MirrorTarget): Promise<EraseMirror> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 2, mustExist: true, where: t.where });
  const locks = new PgLocks(db);
  return {
    name: db.name,
    searched: db.name,
    async erase(user) {
      // A pull running meanwhile could write the user's records back: hold every stream.
      for (const stream of await allStreams(db)) await locks.acquire(stream);
      const rows = await eraseFromPg(db, user);
      const found =
        rows.session_results +
          rows.role_results +
          rows.score_details +
          rows.records_changed +
          rows.result_versions +
          rows.error_texts +
          (rows.quarantined ?? 0) >
        0;
      return { rows, files: [], found };
    },
    async close() {
      try {
        await locks.release();
      } finally {
        await db.close();
      }
    },
  };
}
