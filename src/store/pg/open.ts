/**
 * A PostgreSQL team mirror ready for a sync: the database (migrated), the stream locks, the
 * checkpoints and the sink, released together.
 */
import { PgDatabase } from './database.js';
import { PgLocks } from './lock.js';
import { PgSink } from './sink.js';
import { PgState } from './state.js';

export interface PgMirror {
  db: PgDatabase;
  state: PgState;
  sink: PgSink;
  release(): Promise<void>;
}

/**
 * Opens (creating or migrating) the mirror at `url`, schema `schema`, for `concurrency` streams at a
 * time; `warn` gets the sink's warnings; `where` names the URL's source (PgOpenOptions).
 */
export async function openPgMirror(
  url: string,
  schema: string,
  concurrency: number,
  warn?: (text: string) => void,
  where?: string,
): Promise<PgMirror> {
  // Two connections per concurrent stream (two of its pages may be written at once: sink.ts), one for
  // the locks, one for the rest.
  const db = await PgDatabase.open(url, schema, { connections: 2 * concurrency + 2, where });
  const state = new PgState(db);
  const locks = new PgLocks(db);
  return {
    db,
    state,
    sink: new PgSink(db, state, locks, warn),
    async release() {
      await locks.release();
      await db.close();
    },
  };
}
