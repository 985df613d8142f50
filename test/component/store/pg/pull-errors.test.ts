/**
 * The team mirror in PostgreSQL: pull and watch into a real server, with the checks of the
 * SQLite acceptance tests: counts, exact int64 cursors and order_index, the views, the password
 * never printed. What every mirror does (a second pull adds nothing, …) is test/contract/'s.
 */
import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { fakeClock } from '../../../helpers/clock.js';
import { sim } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient, pgRows } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';

async function scalar(schema: string, sql: string): Promise<string> {
  const c = await pgClient();
  try {
    const r = await c.query(`SET search_path TO ${schema}; ${sql}`);
    const rows = (Array.isArray(r) ? r.at(-1) : r).rows as Array<Record<string, unknown>>;
    return String(Object.values(rows[0] ?? {})[0]);
  } finally {
    await c.end();
  }
}

describePg('pull into PostgreSQL', () => {
  it('mirrors every record exactly once with exact int64 cursors, child rows and views', async () => {
    const start = 9_007_199_254_740_000n; // past 2^53 within a few records: a double cannot hold these
    const s = await sim({ campaigns: 3, records: 120, orderIndexStart: start });
    const schema = freshSchema();
    // The URL holds the password: through the environment, not the command line (which is warned about).
    const args = ['pull', '--pg-schema', schema, '--base-url', s.url, '--page-size', '25', '--json'];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL } };
    const first = await runCli(args, env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const roles = s.data.campaigns.filter((c) => c.type === 'ROLE_SUBMISSION');
    const sessions = s.data.campaigns.length - roles.length;
    expect(await scalar(schema, 'SELECT count(*) FROM session_results')).toBe(String(sessions * 120));
    expect(await scalar(schema, 'SELECT count(*) FROM role_results')).toBe(String(roles.length * 120));
    expect(await scalar(schema, 'SELECT count(*) FROM campaigns')).toBe('3');
    let details = 0;
    let evals = 0;
    for (const c of s.data.campaigns) {
      for (let i = 0; i < 120; i++) {
        if (c.type === 'ROLE_SUBMISSION') {
          const r = s.data.roleResult(c, i, 'DETAILED') as { score_details: Array<{ eval_results: unknown[] }> };
          details += r.score_details.length;
          evals += r.score_details.reduce((n, d) => n + d.eval_results.length, 0);
        } else evals += (s.data.sessionResult(c, i).eval_results as unknown[]).length;
      }
    }
    expect(await scalar(schema, 'SELECT count(*) FROM score_details')).toBe(String(details));
    expect(await scalar(schema, 'SELECT count(*) FROM eval_results')).toBe(String(evals));
    // Cursors and order_index exact: compared as text, never through a JS number.
    const state = await pgRows(schema, 'SELECT campaign_id, cursor::text AS cursor, records::text AS records FROM sync_state');
    expect(state.length).toBe(3);
    for (const row of state) {
      const c = s.data.byId.get(row.campaign_id as string);
      expect(row.cursor).toBe(String(s.data.orderIndex(c as NonNullable<typeof c>, 119)));
      expect(row.records).toBe('120');
    }
    const top = await pgRows(
      schema,
      'SELECT max(order_index)::text AS m FROM (SELECT order_index FROM session_results UNION ALL SELECT order_index FROM role_results) x',
    );
    expect(BigInt(top[0]?.m as string) > 2n ** 53n).toBe(true);
    expect(await scalar(schema, "SELECT count(*) FROM session_results WHERE (raw->>'order_index')::numeric <> order_index")).toBe('0');
    // The views answer in PostgreSQL too.
    expect(await scalar(schema, 'SELECT count(*) FROM results')).toBe(String(360));
    expect(Number(await scalar(schema, 'SELECT count(*) FROM latest_results'))).toBeGreaterThan(0);
    expect(Number(await scalar(schema, 'SELECT count(*) FROM skill_scores'))).toBe(evals);
    expect(await scalar(schema, 'SELECT count(*) FROM score_details_full')).toBe(String(details));
    expect(await scalar(schema, 'SELECT count(*) FROM eval_results WHERE position IS NULL')).toBe('0');
    expect(first.stdout + first.stderr).not.toContain(TEST_PG_PASSWORD);
  });

  it('an unreachable server or a refused login is exit 74, one line naming the database, never the password', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const u = new URL(PG_URL);
    const closed = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const port = (srv.address() as { port: number }).port;
        srv.close(() => resolve(port));
      });
    });
    const wrong = new URL(PG_URL);
    wrong.password = 'not-the-password-4d2';
    const down = new URL(PG_URL);
    down.port = String(closed);
    // Through the environment: on the command line, a URL with a password is warned about first (pg-url.test.ts).
    for (const url of [down.toString(), wrong.toString()]) {
      const r = await runCli(['pull', '--base-url', s.url], { env: { ...env.env, CAMPAIGN_SYNC_DB: url } });
      expect(r.code).toBe(74);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`postgres://${u.username}@127.0.0.1:`);
      expect(r.stdout + r.stderr).not.toContain(TEST_PG_PASSWORD);
      expect(r.stdout + r.stderr).not.toContain('not-the-password-4d2');
    }
  });

  it('--format ndjson with a postgres:// --db, or a bad --pg-schema, is a usage error (exit 2)', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const a = await runCli(['pull', '--db', PG_URL, '--pg-schema', freshSchema(), '--format', 'ndjson', '--base-url', s.url], env);
    expect(a.code).toBe(2);
    const b = await runCli(['pull', '--db', PG_URL, '--pg-schema', 'Bad-Name', '--base-url', s.url], env);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('--pg-schema');
  });

  it('watch passes into PostgreSQL, picking up growth between passes', async () => {
    // The service grows on the run's clock, which jumps the hour between the passes at once.
    const clock = fakeClock(Date.now());
    const s = await sim({ campaigns: 2, records: 40, growth: { count: 5, windowMs: 3_600_000 }, now: () => clock.now() });
    const schema = freshSchema();
    const r = await runCli(
      ['watch', '--db', PG_URL, '--pg-schema', schema, '--base-url', s.url, '--max-cycles', '2', '--interval', '1h', '--json'],
      { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey }, clock },
    );
    expect(r.code).toBe(0);
    const passes = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { streams: Array<{ new: number }> });
    expect(passes).toHaveLength(2);
    const fresh = passes.map((p) => p.streams.reduce((n, x) => n + x.new, 0));
    expect(fresh[0]).toBeGreaterThanOrEqual(80);
    expect(fresh[1]).toBeGreaterThan(0);
    // An hour of growth at 5 an hour on each of the two campaigns, at least.
    expect(fresh[1]).toBeGreaterThanOrEqual(10);
    const total = Number(await scalar(schema, 'SELECT (SELECT count(*) FROM session_results) + (SELECT count(*) FROM role_results)'));
    expect(total).toBe((fresh[0] as number) + (fresh[1] as number));
  });
});
