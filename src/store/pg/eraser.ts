/** `forget` on a PostgreSQL team mirror: the rows of store/pg/erase-rows.ts, holding every stream's lease. */
import { foundAny } from '../model/erasure-plan.js';
import type { EraseMirror, ErasureDone, MirrorTarget } from '../port.js';
import { PgDatabase } from './database.js';
import { allStreams, eraseFromPg, type PgErased } from './erase-rows.js';
import { holdAll } from './lease-hold.js';
import { PgLeases } from './leases.js';
import { DEFAULT_LEASE_MS } from './open.js';
import { rewriteErased } from './rewrite.js';
import { serverNow } from './server-clock.js';

function done({ rows, copies }: PgErased): ErasureDone {
  return { rows, copies, files: [], found: foundAny(rows, copies) };
}

export async function openPgEraser(t: MirrorTarget): Promise<EraseMirror> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 2, mustExist: true, upgrade: true, where: t.where });
  const leases = new PgLeases(db, DEFAULT_LEASE_MS);
  return {
    name: db.name,
    searched: db.name,
    async erase(user) {
      // A pull running meanwhile could write the user's records back: hold every stream.
      await holdAll(leases, await allStreams(db), db.name);
      const erased = await eraseFromPg(db, { user });
      // Under the same leases: no worker has a page to write while a table is locked for its copy.
      await rewriteErased(db);
      return done(erased);
    },
    async eraseOlderThan(before) {
      await holdAll(leases, await allStreams(db), db.name);
      const erased = await eraseFromPg(db, { before });
      await rewriteErased(db);
      return done(erased);
    },
    async countOlderThan(before) {
      // Held as the erasure holds them, until close: an erasure after this count erases what it counted.
      await holdAll(leases, await allStreams(db), db.name);
      const { rows, copies } = await eraseFromPg(db, { before }, true);
      return { rows, copies, files: [] };
    },
    // The server's clock, as a fleet's retention cuts: a host whose clock is off erases what the others would.
    now: () => serverNow(db),
    async close() {
      try {
        await leases.close();
      } finally {
        await db.close();
      }
    },
  };
}
