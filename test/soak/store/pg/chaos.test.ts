/**
 * A fleet under chaos: three `watch` workers on one PostgreSQL mirror (a server of the test's own)
 * sync a backlog that keeps the service's enforced limit binding, while a seeded schedule kills a
 * worker (SIGKILL, a new one started in its place), freezes one past its lease (SIGSTOP, then
 * SIGCONT), and, half-way, restarts the server at once (`pg_ctl restart -m immediate`: a crash to the
 * server) with a worker killed just before and a new one started two seconds after. Then every
 * worker is stopped and one `pull` finishes: the mirror equals what the service serves, every record
 * once, every checkpoint at its stream's end, and the service answered no 429 in the whole run.
 *
 * CAMPAIGN_SYNC_CHAOS_SEEDS: the seeds (comma-separated; default 1), one run each;
 * CAMPAIGN_SYNC_CHAOS_MS: how long the chaos lasts (default a minute).
 */
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { prng } from '../../../../src/simulator/random.js';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { cli, type RunningCli, sim, startCli, tempDir } from '../../../helpers/index.js';
import { describePg } from '../../../helpers/pg.js';
import { startPgServer, type TestPgServer } from '../../../helpers/pg-server.js';

const SEEDS = (process.env.CAMPAIGN_SYNC_CHAOS_SEEDS ?? '1').split(',').map((s) => Number(s.trim()));
const CHAOS_MS = Number(process.env.CAMPAIGN_SYNC_CHAOS_MS ?? 60_000);
const CAMPAIGNS = 6;
/** A backlog of about 300 pages of 10: longer than the chaos at the limit below (5 requests a second). */
const RECORDS = 500;
const LIMIT = { count: 20, windowMs: 4000 };
const RATE = '20/4s';
const LEASE_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every record served is in the mirror once, in its campaign, and every checkpoint is at its stream's end. */
async function expectExact(url: string, schema: string, s: RunningSimulator): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SET search_path TO ${schema}`);
    const want = new Map<string, { campaign: string; order: string }>();
    for (const camp of s.data.campaigns) {
      for (let i = 0; i < RECORDS; i++) {
        const r = camp.type === 'SESSION_COMPLETION' ? s.data.sessionResult(camp, i) : s.data.roleResult(camp, i, 'DETAILED');
        want.set(String(r.id), { campaign: camp.id, order: String(r.order_index) });
      }
    }
    const rows = (
      await c.query(
        'SELECT id, campaign_id, order_index::text AS o FROM session_results UNION ALL SELECT id, campaign_id, order_index::text FROM role_results',
      )
    ).rows;
    expect(rows.length).toBe(want.size);
    for (const r of rows) expect({ campaign: r.campaign_id, order: r.o }).toEqual(want.get(r.id));
    const state = (await c.query('SELECT campaign_id, cursor::text AS cursor, records::int AS records FROM sync_state')).rows;
    expect(state).toHaveLength(CAMPAIGNS);
    for (const st of state) {
      const camp = s.data.byId.get(st.campaign_id);
      expect(st.cursor).toBe(String(s.data.orderIndex(camp as NonNullable<typeof camp>, RECORDS - 1)));
      expect(st.records).toBe(RECORDS);
    }
  } finally {
    await c.end();
  }
}

describePg('a fleet under chaos: kills, freezes past the lease and a crash of the server, against an enforced limit', () => {
  let server: TestPgServer | undefined;
  beforeAll(async () => {
    server = await startPgServer();
  });
  afterAll(() => server?.stop());

  it.each(SEEDS)(
    'seed %i: the mirror equals the service and the service answered no 429',
    async (seed) => {
      const db = server as TestPgServer;
      const random = prng(seed);
      const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
      const s = await sim({ seed, campaigns: CAMPAIGNS, records: RECORDS, rateLimit: LIMIT, faults: { slow: 1 }, slowMs: 20 });
      const schema = `chaos_${seed}_${Date.now().toString(36)}`;
      const env = () => {
        const home = tempDir();
        return { HOME: home, XDG_STATE_HOME: join(home, 'state'), CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: db.url };
      };
      const args = ['--pg-schema', schema, '--base-url', s.url, '--page-size', '10', '--concurrency', '2'];
      const more = ['--lease', `${LEASE_MS}ms`, '--rate-limit', RATE];
      const start = () => startCli(['watch', ...args, ...more, '--interval', '1s'], { env: env() });
      const workers: Array<RunningCli | undefined> = [start(), start(), start()];
      const stopped = new Set<RunningCli>();
      const log: string[] = [];
      const t0 = Date.now();
      const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
      const pick = () => between(0, workers.length);
      const kill = (i: number) => {
        const w = workers[i];
        if (w === undefined) return;
        w.child.kill('SIGCONT');
        w.child.kill('SIGKILL');
        stopped.delete(w);
        workers[i] = undefined;
      };
      let restarted = false;
      try {
        while (Date.now() - t0 < CHAOS_MS) {
          await sleep(between(1000, 4000));
          if (!restarted && Date.now() - t0 >= CHAOS_MS / 2) {
            // Half-way: a worker killed, the server crashed and back, a new worker two seconds on.
            restarted = true;
            const i = pick();
            kill(i);
            db.restart('immediate');
            log.push(`${at()} restart (worker ${i} killed)`);
            await sleep(2000);
            workers[i] = start();
            log.push(`${at()} worker ${i} started`);
            continue;
          }
          const i = pick();
          const w = workers[i];
          if (random() < 0.5) {
            kill(i);
            log.push(`${at()} kill ${i}`);
            await sleep(between(0, 2000));
            workers[i] = start();
          } else if (w !== undefined && !stopped.has(w)) {
            // Frozen past its lease: another worker takes its streams; woken, it commits nothing of them.
            w.child.kill('SIGSTOP');
            stopped.add(w);
            const ms = between(LEASE_MS + 500, LEASE_MS + 3000);
            log.push(`${at()} stop ${i} for ${ms} ms`);
            await sleep(ms);
            w.child.kill('SIGCONT');
            stopped.delete(w);
          }
        }
      } finally {
        for (const w of workers) w?.child.kill('SIGCONT');
        for (const w of workers) w?.child.kill('SIGTERM');
        await Promise.race([Promise.all(workers.map((w) => w?.exited)), sleep(30_000)]);
        for (const w of workers) w?.child.kill('SIGKILL');
      }
      const final = await cli(['pull', ...args, ...more], { env: env(), timeoutMs: 600_000 });
      const tooMany = s.stats.byStatus[429] ?? 0;
      const when = s.stats.recentAnswers.filter((a) => a.status === 429).map((a) => `${((a.at - t0) / 1000).toFixed(1)}s`);
      console.log(
        `chaos seed ${seed}: ${s.stats.requests} requests, ${tooMany} answered 429${when.length ? ` (at ${when.join(', ')})` : ''}, final pull exit ${final.code}, ${((Date.now() - t0) / 1000).toFixed(0)} s; ${log.join('; ')}`,
      );
      expect(final.code, final.stderr).toBe(0);
      expect(tooMany, log.join('\n')).toBe(0);
      await expectExact(db.url, schema, s);
    },
    900_000,
  );
});
