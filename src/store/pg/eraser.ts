/** `forget` on a PostgreSQL team mirror: the rows of store/pg/erase.ts, holding every stream's lease. */
import type { EraseMirror, MirrorTarget } from '../mirror-port.js';
import { PgDatabase } from './database.js';
import { allStreams, eraseFromPg } from './erase.js';
import { holdAll } from './lease-hold.js';
import { PgLeases } from './leases.js';
import { DEFAULT_LEASE_MS } from './open.js';

export async function openPgEraser(t: MirrorTarget): Promise<EraseMirror> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 2, mustExist: true, upgrade: true, where: t.where });
  const leases = new PgLeases(db, DEFAULT_LEASE_MS);
  return {
    name: db.name,
    searched: db.name,
    async erase(user) {
      // A pull running meanwhile could write the user's records back: hold every stream.
      await holdAll(leases, await allStreams(db), db.name);
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
        await leases.close();
      } finally {
        await db.close();
      }
    },
  };
}
