/**
 * The database server's clock: the one clock of a fleet (store/port.ts JobStore.now). A time one
 * worker writes and another reads (a stream's last success or failure, a retention's run and cut, a
 * campaign list's, a tombstone's, drift's) is read here or written as `clock_timestamp()`, never
 * taken from a worker's own clock, which may be off by minutes or days.
 */
import type pg from 'pg';
import type { PgDatabase } from './database.js';

const NOW = 'SELECT clock_timestamp() AS now';

/** The server's now, in ms since the epoch. */
export async function serverNow(db: PgDatabase): Promise<number> {
  const r = await db.query<{ now: Date }>(NOW);
  return (r.rows[0] as { now: Date }).now.getTime();
}

/** The server's now as ISO 8601, on a connection (inside its transaction, when it is in one). */
export async function serverIso(client: pg.ClientBase): Promise<string> {
  const r = await client.query<{ now: Date }>(NOW);
  return (r.rows[0] as { now: Date }).now.toISOString();
}
