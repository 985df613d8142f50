/**
 * The request budget's slots in a PostgreSQL mirror: workers with one key share them whatever their
 * hosts (here: separate state folders, so that they share nothing but the mirror), on the server's
 * clock, one round trip a take.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { RequestBudget } from '../src/api/budget.js';
import { PgBudgetSlots } from '../src/store/pg/budget-slots.js';
import { PgDatabase } from '../src/store/pg/database.js';
import { fakeClock } from './helpers/clock.js';
import { sim, tempDir } from './helpers/index.js';
import { describePg, freshSchema, PG_URL } from './helpers/pg.js';
import { runCli } from './helpers/run-cli.js';

describePg('the request budget in PostgreSQL', () => {
  it('a take is one statement, one round trip: it lends a slot, or says how long until one is free, by the server clock', async () => {
    const db = await PgDatabase.open(PG_URL, freshSchema());
    const calls: string[] = [];
    const query = db.query.bind(db);
    db.query = ((text: string, ...rest: unknown[]) => {
      calls.push(text);
      return (query as (...a: unknown[]) => unknown)(text, ...rest);
    }) as typeof db.query;
    try {
      const a = new PgBudgetSlots(db, 'k', 30_000);
      const b = new PgBudgetSlots(db, 'k', 30_000);
      const first = await a.take(2, 1000);
      const second = await b.take(2, 1000);
      expect(calls).toHaveLength(2);
      expect(first).toMatchObject({ slot: 0 });
      expect(second).toMatchObject({ slot: 1 });
      // Both in flight: the wait is their hold (--timeout and a window), and they may end sooner.
      const full = await b.take(2, 1000);
      expect(full).toMatchObject({ inFlight: true });
      expect((full as { waitMs: number }).waitMs).toBeGreaterThan(29_000);
      if (!('slot' in first) || !('slot' in second)) throw new Error('no slot');
      a.end(first, true);
      b.end(second, false);
      await Promise.all([a.close(), b.close()]);
      // Answered: a window after its end; given up on: two windows after its send.
      const later = await a.take(2, 1000);
      expect(later).toMatchObject({ inFlight: false });
      expect((later as { waitMs: number }).waitMs).toBeGreaterThan(500);
      expect((later as { waitMs: number }).waitMs).toBeLessThanOrEqual(1000);
      expect(await a.take(2, 1000)).toMatchObject({ inFlight: false });
      // Another key is another budget; the rows are two, made as needed.
      expect(await a.take(2, 1000)).not.toHaveProperty('slot');
      expect(await new PgBudgetSlots(db, 'other', 0).take(2, 1000)).toMatchObject({ slot: 0 });
      const rows = await query('SELECT key, count(*)::int AS n FROM budget_slots GROUP BY key ORDER BY key');
      expect(rows.rows).toEqual([
        { key: 'k', n: 2 },
        { key: 'other', n: 1 },
      ]);
      // Measured here: a take's round trip on this server (loopback), for the report.
      const t0 = performance.now();
      for (let i = 0; i < 50; i++) await new PgBudgetSlots(db, `m${i}`, 0).take(1, 1000);
      console.log(`budget take: ${((performance.now() - t0) / 50).toFixed(2)} ms a take`);
    } finally {
      await db.close();
    }
  });

  it('a budget on PostgreSQL waits for the slot another worker holds, and nothing is sent when the server cannot be reached', async () => {
    const db = await PgDatabase.open(PG_URL, freshSchema());
    const clock = fakeClock(1_000);
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, new PgBudgetSlots(db, 'k', 0));
    const b = new RequestBudget(one, clock, new PgBudgetSlots(db, 'k', 0));
    expect(a.tryAcquire(), 'a server answers with a promise').toBeUndefined();
    await a.acquire();
    void b.acquire().catch(() => {});
    await new Promise((r) => setTimeout(r, 200));
    expect(clock.sleeps[0]).toBe(50);
    await db.close();
    await expect(new RequestBudget(one, clock, new PgBudgetSlots(db, 'x', 0)).acquire()).rejects.toThrow(
      /cannot take a slot of the request budget in/,
    );
  });

  /** `workers` pulls of one campaign each, started together, each with its own state folder, into one schema. */
  async function together(workers: number, rate: string, limit: { count: number; windowMs: number }, db: (i: number) => string) {
    const s = await sim({ campaigns: workers, records: 10, rateLimit: limit, faults: { slow: 1 }, slowMs: 200 });
    const schema = freshSchema();
    const runs = await Promise.all(
      s.data.campaigns.map((c, i) =>
        runCli(
          [
            'pull',
            '--db',
            db(i),
            '--pg-schema',
            schema,
            '--campaign',
            c.id,
            '--page-size',
            '10',
            '--rate-limit',
            rate,
            '--max-retries',
            '0',
            '--json',
          ],
          {
            env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: tempDir() },
            timeoutMs: 120_000,
          },
        ),
      ),
    );
    return { runs, tooMany: s.stats.byStatus[429] ?? 0, served: s.stats.requests };
  }

  it('two workers on two "hosts" (nothing shared but the mirror) stay within the server limit together: zero 429', async () => {
    const shared = await together(2, '3/3s', { count: 3, windowMs: 3000 }, () => PG_URL);
    for (const r of shared.runs) expect(r.code, r.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    // The control: each on a SQLite mirror of its own (and its own state folder) sends into the same window.
    const split = await together(2, '3/3s', { count: 3, windowMs: 3000 }, (i) => join(tempDir(), `m${i}.db`));
    expect(split.tooMany).toBeGreaterThan(0);
  });

  it('eight workers on eight "hosts" stay within the server limit together: zero 429', async () => {
    const shared = await together(8, '6/2s', { count: 6, windowMs: 2000 }, () => PG_URL);
    for (const r of shared.runs) expect(r.code, r.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
  });
});
