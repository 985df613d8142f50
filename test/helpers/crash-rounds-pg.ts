/**
 * Crash safety of the PostgreSQL mirror, as test/e2e/store/sqlite/crash-rounds.test.ts checks SQLite's:
 * pulls killed with SIGKILL at seeded random instants, then a pull left alone; every record present
 * exactly once, child rows never doubled, cursors exact. CRASH_KILLS sets the number of kills (default 20).
 */
import { expect, it } from 'vitest';
import { prng } from '../../src/simulator/random.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { cli, servedRecords, sim, startCli } from './index.js';
import { describePg, freshSchema, PG_URL, pgClient } from './pg.js';

/** Registers the crash rounds with `KILLS` kills per sink (e2e: one; soak: twenty). */
export function registerCrashRounds(KILLS: number): void {
  const CAMPAIGNS = 4;
  const RECORDS = 600;

  async function verify(s: RunningSimulator, schema: string, expected: Map<string, string>, evals: number): Promise<void> {
    const c = await pgClient();
    try {
      await c.query(`SET search_path TO ${schema}`);
      const state = (await c.query('SELECT campaign_id, cursor::text AS cursor, records::text AS records FROM sync_state')).rows;
      expect(state.length).toBe(CAMPAIGNS);
      for (const r of state) {
        const camp = s.data.byId.get(r.campaign_id);
        expect(r.cursor).toBe(String(s.data.orderIndex(camp as NonNullable<typeof camp>, RECORDS - 1)));
        expect(r.records).toBe(String(RECORDS));
      }
      const ids = (await c.query('SELECT id FROM session_results UNION ALL SELECT id FROM role_results')).rows.map((r) => r.id as string);
      expect(ids.length).toBe(CAMPAIGNS * RECORDS);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of ids) expect(expected.has(id)).toBe(true);
      // Re-reads replace child rows; they never double them.
      expect(Number((await c.query('SELECT count(*) AS n FROM eval_results')).rows[0]?.n)).toBe(evals);
    } finally {
      await c.end();
    }
  }

  describePg('crash safety of the PostgreSQL mirror: kill -9 at random instants', () => {
    // DETAILED pages are transactions of several statements; OVERALL pages one statement with the checkpoint inside.
    it.each([
      ['DETAILED', KILLS],
      ['OVERALL', Math.ceil(KILLS / 2)],
    ] as const)(
      '%s: %i kills, then every record exactly once',
      async (reportType, killsWanted) => {
        // Slow replies stretch the pull so kills land mid-request as well as mid-commit.
        const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
        const expected = servedRecords(s, RECORDS);
        let evals = 0;
        for (const text of expected.values()) {
          const r = JSON.parse(text);
          // An OVERALL read stores no score details, so none of their eval results.
          if (r.score_details && reportType === 'OVERALL') continue;
          evals += r.score_details
            ? r.score_details.reduce((n: number, d: { eval_results: unknown[] }) => n + d.eval_results.length, 0)
            : r.eval_results.length;
        }
        const random = prng(reportType === 'OVERALL' ? 8765 : 4321);
        const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
        let schema = freshSchema();
        let kills = 0;
        // A short lease: the pull after a kill -9 takes the killed one's streams once its lease has run out.
        const pull = ['pull', '--report-type', reportType, '--db', PG_URL, '--lease', '2s'];
        while (kills < killsWanted) {
          const run = startCli([...pull, '--page-size', '20', '--pg-schema', schema], { env });
          const delay = 100 + Math.floor(random() * 900);
          const outcome = await Promise.race([
            run.exited.then(() => 'done' as const),
            new Promise((r) => setTimeout(() => r('kill'), delay)),
          ]);
          if (outcome === 'kill') run.child.kill('SIGKILL');
          const { code, signal } = await run.exited;
          if (signal === 'SIGKILL') kills++;
          else {
            expect(code, run.stderr()).toBe(0);
            await verify(s, schema, expected, evals);
            schema = freshSchema();
          }
        }
        const final = await cli([...pull, '--pg-schema', schema], { env });
        expect(final.code, final.stderr).toBe(0);
        await verify(s, schema, expected, evals);
        expect(kills).toBe(killsWanted);
      },
      600_000,
    );
  });
}
