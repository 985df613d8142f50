/**
 * A PostgreSQL team mirror ready for a sync: the database (migrated), the stream leases, the
 * checkpoints and the sink, released together.
 */

import { PgCheckpoints } from './checkpoints.js';
import { PgDatabase } from './database.js';
import { PgLeases } from './leases.js';
import { PgSink } from './sink.js';

export interface PgMirror {
  db: PgDatabase;
  state: PgCheckpoints;
  sink: PgSink;
  leases: PgLeases;
  release(): Promise<void>;
}

/** The lease of a stream when none is given (--lease): see leases.ts and the README's fleet section. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * Opens (creating or migrating) the mirror at `url`, schema `schema`, for `concurrency` streams at a
 * time; `where` names the URL's source (PgOpenOptions); `leaseMs` is --lease.
 */
export async function openPgMirror(
  url: string,
  schema: string,
  concurrency: number,
  where?: string,
  leaseMs = DEFAULT_LEASE_MS,
): Promise<PgMirror> {
  // Two connections per concurrent stream (two of its pages may be written at once: sink.ts), one for
  // the leases' heartbeat, one for the rest.
  const db = await PgDatabase.open(url, schema, { connections: 2 * concurrency + 2, where, idleInTransactionMs: leaseMs });
  const state = new PgCheckpoints(db);
  const leases = new PgLeases(db, leaseMs);
  return {
    db,
    state,
    leases,
    sink: new PgSink(db, state, leases),
    async release() {
      try {
        await leases.close();
      } finally {
        await db.close();
      }
    },
  };
}
