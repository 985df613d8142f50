/**
 * One request budget per API key whatever each worker was told: workers given other --rate-limit
 * values (a looser count, a shorter window, both) join a fleet that keeps to the service's limit, and
 * every one of them keeps to the stricter of the limits, says so once, and the service answers no
 * 429. On a PostgreSQL mirror (the slots and limits in the server, for every host) and on SQLite
 * mirrors of one host (the user's ledger in the state folder, for cron runs side by side).
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { type RunningCli, sim, startCli, tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';

const RECORDS = 60;
const LIMIT = { count: 10, windowMs: 3000 };
/** The service's limit, then ever looser ones: a shorter window, a larger count, both. */
const FLAGS = ['10/3s', '10/1s', '30/3s', '40/1s'];

async function until(test: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const started = Date.now();
  while (!(await test())) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts the worker given the service's limit, then, once it has taken a slot, the others. */
async function fleet(s: RunningSimulator, start: (rate: string, i: number) => RunningCli): Promise<RunningCli[]> {
  const first = start(FLAGS[0] as string, 0);
  await until(() => s.stats.requests > 0, 'the first worker to send');
  return [first, ...FLAGS.slice(1).map((rate, i) => start(rate, i + 1))];
}

async function expectNo429(s: RunningSimulator, workers: RunningCli[]): Promise<void> {
  const ends = await Promise.all(workers.map((w) => w.exited));
  for (const [i, e] of ends.entries()) expect(e.code, workers[i]?.stderr()).toBe(0);
  expect(s.stats.byStatus[429] ?? 0, 'answers of 429').toBe(0);
  // Those given a looser limit said once that they keep to the agreed one; the first said nothing.
  expect(workers[0]?.stderr()).not.toMatch(/request budget keeps to/);
  for (const w of workers.slice(1))
    expect(w.stderr().match(/the request budget keeps to 10\/3s, not \S+ \(--rate-limit\)/g)).toHaveLength(1);
}

describePg('workers given different --rate-limit values share one budget per key', () => {
  it('on a PostgreSQL mirror: four workers, four limits, zero 429 from the service', async () => {
    const s = await sim({ campaigns: 6, records: RECORDS, rateLimit: LIMIT });
    const schema = freshSchema();
    const workers = await fleet(s, (rate) => {
      const home = tempDir();
      const env = { HOME: home, XDG_STATE_HOME: join(home, 'state'), CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL };
      const args = ['pull', '--pg-schema', schema, '--base-url', s.url, '--page-size', '10', '--concurrency', '2', '--lease', '2s'];
      return startCli([...args, '--rate-limit', rate], { env });
    });
    await expectNo429(s, workers);
    const stored = await pgRows(
      schema,
      'SELECT count(*)::int AS n FROM (SELECT id FROM session_results UNION ALL SELECT id FROM role_results) x',
    );
    expect(stored[0]?.n).toBe(6 * RECORDS);
  });

  it("on SQLite mirrors of one host: four pulls, four limits, one user's ledger, zero 429", async () => {
    const s = await sim({ campaigns: 4, records: RECORDS, rateLimit: LIMIT });
    const state = tempDir();
    const workers = await fleet(s, (rate, i) => {
      const env = { XDG_STATE_HOME: state, CAMPAIGN_SYNC_API_KEY: s.apiKey };
      const args = ['pull', '--db', join(tempDir(), `m${i}.db`), '--base-url', s.url, '--page-size', '10', '--concurrency', '2'];
      return startCli([...args, '--rate-limit', rate], { env });
    });
    await expectNo429(s, workers);
  });
});
