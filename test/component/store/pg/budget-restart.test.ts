/**
 * The request budget's slots across a crash of the PostgreSQL server (`pg_ctl restart -m immediate`,
 * on a server of the test's own): a slot whose take was answered is still busy after the restart.
 * The mirror's writes commit without waiting for their WAL flush (store/pg/database.ts), and a take
 * did too: up to the last fraction of a second of takes came back free after a crash while the
 * service still counted their requests, and the next worker's requests (one started just after the
 * restart, with nothing of its own in flight) were one too many: a 429.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PgBudgetSlots } from '../../../../src/store/pg/budget-slots.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { describePg } from '../../../helpers/pg.js';
import { startPgServer, type TestPgServer } from '../../../helpers/pg-server.js';

async function busySlots(url: string, schema: string, key: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {});
  await c.connect();
  try {
    const r = await c.query(`SELECT count(*)::int AS n FROM "${schema}".budget_slots WHERE key = $1 AND busy_until > clock_timestamp()`, [
      key,
    ]);
    return r.rows[0].n as number;
  } finally {
    await c.end();
  }
}

describePg('the request budget across a crash of the PostgreSQL server', () => {
  let server: TestPgServer | undefined;
  beforeAll(async () => {
    server = await startPgServer();
  });
  afterAll(() => server?.stop());

  it('every slot taken just before an immediate restart is still busy after it; the next take goes on, on a fresh connection', async () => {
    const s = server as TestPgServer;
    const schema = 'budget_restart';
    const db = await PgDatabase.open(s.url, schema);
    try {
      // The schema itself on disk first (a migration commits as the mirror's writes do).
      await db.query('CHECKPOINT');
      // Rounds of takes each ended by a crash: without a flush before each answer, about one round in
      // two lost its last takes (the WAL writer flushes every 200 ms).
      for (let round = 0; round < 5; round++) {
        const key = `k${round}`;
        const slots = new PgBudgetSlots(db, key, 30_000);
        for (let i = 0; i < 10; i++) expect(await slots.take({ count: 10, windowMs: 60_000 })).toHaveProperty('slot', i);
        s.restart('immediate');
        expect(await busySlots(s.url, schema, key), `round ${round}`).toBe(10);
        // The pool's connections died with the server: the next take is asked again on a fresh one.
        expect(await slots.take({ count: 10, windowMs: 60_000 })).toMatchObject({ limit: { count: 10, windowMs: 60_000 } });
        await slots.close();
      }
    } finally {
      await db.close();
    }
  }, 120_000);
});
