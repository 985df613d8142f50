/**
 * The request budget's slots in a PostgreSQL mirror: workers with one key share them whatever their
 * hosts (here: separate state folders, so that they share nothing but the mirror), on the server's
 * clock, one short transaction a take.
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import { RequestBudget } from '../../../../src/api/budget.js';
import { type Clock, realClock } from '../../../../src/core/clock.js';
import { holdMs, paddedWindow } from '../../../../src/core/rate.js';
import { PgBudgetSlots } from '../../../../src/store/pg/budget-slots.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { fakeClock } from '../../../helpers/clock.js';
import { sim, tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { runCli } from '../../../helpers/run-cli.js';

describePg('the request budget in PostgreSQL', () => {
  it('a take lends a slot, or says how long until one is free, by the server clock; an end frees it a window after the answer', async () => {
    const db = await PgDatabase.open(PG_URL, freshSchema());
    // Windows of a minute: the waits asserted hold however slow the machine is, short of a 10 s stall.
    const W = 60_000;
    const two = { count: 2, windowMs: W };
    const padded = paddedWindow(W);
    try {
      const a = new PgBudgetSlots(db, 'k', 30_000);
      const b = new PgBudgetSlots(db, 'k', 30_000);
      const first = await a.take(two);
      const second = await b.take(two);
      expect(first).toMatchObject({ slot: 0, windowMs: padded, limit: two });
      expect(second).toMatchObject({ slot: 1 });
      // Both in flight: the soonest either can be free is a window after an answer now.
      const full = await b.take(two);
      expect(full).toMatchObject({ limit: two });
      expect((full as { waitMs: number }).waitMs).toBeGreaterThan(W - 10_000);
      expect((full as { waitMs: number }).waitMs).toBeLessThanOrEqual(padded);
      if (!('slot' in first) || !('slot' in second)) throw new Error('no slot');
      a.end(first, true);
      b.end(second, false);
      await Promise.all([a.close(), b.close()]);
      // Answered: a window after its end; given up on: busy as taken (its send, its --timeout and a window after the take).
      const later = await a.take(two);
      expect((later as { waitMs: number }).waitMs).toBeGreaterThan(W - 10_000);
      expect((later as { waitMs: number }).waitMs).toBeLessThanOrEqual(padded);
      const held = await db.query<{ ms: number }>(
        "SELECT extract(epoch FROM busy_until - clock_timestamp()) * 1000 AS ms FROM budget_slots WHERE key = 'k' AND slot = 1",
      );
      expect(Number(held.rows[0]?.ms)).toBeGreaterThan(holdMs(30_000, padded) - 10_000);
      // Another key is another budget; the rows are two, made as needed.
      expect(await new PgBudgetSlots(db, 'other', 0).take(two)).toMatchObject({ slot: 0 });
      const rows = await db.query('SELECT key, count(*)::int AS n FROM budget_slots GROUP BY key ORDER BY key');
      expect(rows.rows).toEqual([
        { key: 'k', n: 2 },
        { key: 'other', n: 1 },
      ]);
    } finally {
      await db.close();
    }
  });

  it('takers at once on a fresh key each get a slot while the key has room: none waits a window for a race to make one row', async () => {
    const db = await PgDatabase.open(PG_URL, freshSchema(), { connections: 8 });
    try {
      const takers = Array.from({ length: 8 }, () => new PgBudgetSlots(db, 'fresh', 30_000));
      // Several rounds: each round's takers race to make the next rows of the key.
      for (let round = 0; round < 4; round++) {
        const took = await Promise.all(takers.map((t) => t.take({ count: 100, windowMs: 60_000 })));
        expect(took.filter((t) => !('slot' in t))).toEqual([]);
      }
      const slots = await db.query('SELECT count(DISTINCT slot)::int AS n FROM budget_slots WHERE key = $1', ['fresh']);
      expect(slots.rows[0]).toEqual({ n: 32 });
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
    // Until b's take has been answered and b sleeps, however long the server takes to answer: until a
    // window after an answer to a's request now, the soonest its slot can be free.
    while (clock.sleeps.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(clock.sleeps[0]).toBe(paddedWindow(1000));
    await db.close();
    await expect(new RequestBudget(one, clock, new PgBudgetSlots(db, 'x', 0)).acquire()).rejects.toThrow(
      /cannot take a slot of the request budget in/,
    );
  });

  it('a take is one transaction of four exchanges (the lock, the limit, the slot, the commit), whether it lends a slot, makes a row or says to wait', async () => {
    const db = await PgDatabase.open(PG_URL, freshSchema());
    // Every exchange with the server goes through a pg.Client's query: counted there, below the pool.
    let statements = 0;
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      statements++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      const slots = new PgBudgetSlots(db, 'k', 30_000);
      const outcomes: string[] = [];
      const t0 = performance.now();
      for (let i = 0; i < 40; i++) {
        const taken = await slots.take({ count: 20, windowMs: 60_000 });
        outcomes.push('slot' in taken ? 'slot' : 'wait');
      }
      const ms = (performance.now() - t0) / 40;
      // 20 rows made as needed, then 20 waits: four exchanges each.
      expect(outcomes.filter((o) => o === 'slot')).toHaveLength(20);
      expect(statements).toBe(4 * 40);
      console.log(`budget take: ${statements / 40} exchanges a take, ${ms.toFixed(2)} ms a take on loopback`);
    } finally {
      pg.Client.prototype.query = query;
      await db.close();
    }
  });

  it('a worker that can no longer reach the server sends nothing: the take fails, it is not worked around', async () => {
    // The server behind a TCP relay on loopback, cut in the middle of the run.
    const server = new URL(PG_URL);
    const sockets = new Set<Socket>();
    const relay = createServer((client) => {
      const upstream = tcpConnect(Number(server.port), server.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const url = new URL(PG_URL);
    url.port = String((relay.address() as { port: number }).port);
    const db = await PgDatabase.open(url.href, freshSchema());
    try {
      const budget = new RequestBudget({ count: 5, windowMs: 60_000 }, realClock, new PgBudgetSlots(db, 'k', 30_000));
      (await budget.acquire())();
      relay.close();
      for (const s of sockets) s.destroy();
      await expect(budget.acquire()).rejects.toThrow(/cannot take a slot of the request budget in/);
    } finally {
      relay.close();
      await db.close().catch(() => {});
    }
  });

  /** `workers` pulls of one campaign each, started together, each with its own state folder, into one schema. */
  async function together(
    workers: number,
    rate: string,
    limit: { count: number; windowMs: number },
    db: (i: number) => string,
    clock: (i: number) => Clock | undefined = () => undefined,
  ) {
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
            // Another "host": a state folder (so a budget file) and a home of its own.
            env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: tempDir(), HOME: tempDir() },
            timeoutMs: 120_000,
            clock: clock(i),
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
    // The control: each on a SQLite mirror of its own (and its own state folder) sends into one window,
    // a minute's: one however slowly a loaded machine starts them.
    const split = await together(2, '3/1m', { count: 3, windowMs: 60_000 }, (i) => join(tempDir(), `m${i}.db`));
    expect(split.tooMany).toBeGreaterThan(0);
  });

  it('eight workers on eight "hosts" stay within the server limit together: zero 429', async () => {
    const shared = await together(8, '6/2s', { count: 6, windowMs: 2000 }, () => PG_URL);
    for (const r of shared.runs) expect(r.code, r.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
  });

  it('a worker whose clock is 10 minutes behind the others shares the budget all the same: zero 429', async () => {
    // Every time in the budget is the server's: a worker's own clock only measures its waits.
    const behind: Clock = { ...realClock, now: () => Date.now() - 600_000 };
    const ahead: Clock = { ...realClock, now: () => Date.now() + 600_000 };
    const clocks = [behind, undefined, ahead];
    const shared = await together(
      3,
      '3/3s',
      { count: 3, windowMs: 3000 },
      () => PG_URL,
      (i) => clocks[i],
    );
    for (const r of shared.runs) expect(r.code, r.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    expect(shared.served).toBeGreaterThan(3);
  });
});
