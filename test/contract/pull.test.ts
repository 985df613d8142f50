/**
 * What a pull stores, beyond the record-by-record comparison of ./mirror.test.ts, on every kind of
 * mirror (./mirrors.ts says how to add a case): every record, score detail and eval result exactly
 * once with its columns filled and the views answering, int64 order_index and cursors exact past
 * 2^53, and watch picking up growth between passes.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { fakeClock } from '../helpers/clock.js';
import { sim } from '../helpers/index.js';
import { TEST_PG_PASSWORD } from '../helpers/pg-server.js';
import { MIRRORS, open, runOnClock, unsupported } from './mirrors.js';

type Campaign = RunningSimulator['data']['campaigns'][number];

/** The score details and eval results the simulator serves for `records` records of each campaign. */
function children(s: RunningSimulator, records: number): { details: number; evals: number } {
  let details = 0;
  let evals = 0;
  for (const c of s.data.campaigns) {
    for (let i = 0; i < records; i++) {
      if (c.type === 'ROLE_SUBMISSION') {
        const r = s.data.roleResult(c, i, 'DETAILED') as { score_details: Array<{ eval_results: unknown[] }> };
        details += r.score_details.length;
        evals += r.score_details.reduce((n, d) => n + d.eval_results.length, 0);
      } else evals += (s.data.sessionResult(c, i).eval_results as unknown[]).length;
    }
  }
  return { details, evals };
}

describe.each(MIRRORS)('what a pull stores (%s)', (kind) => {
  it('every record, score detail and eval result exactly once, with exact int64 cursors, its columns filled, and the views', async (ctx) => {
    if (unsupported(kind, 'sql', ctx)) return;
    const RECORDS = 120;
    const start = 9_007_199_254_740_000n; // past 2^53 within a few records: a double cannot hold these
    const s = await sim({ campaigns: 4, records: RECORDS, orderIndexStart: start });
    const m = open(kind);
    const first = await m.run(s, 'pull', '--page-size', '25', '--json');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout + first.stderr).not.toContain(TEST_PG_PASSWORD);
    expect((JSON.parse(first.stdout).streams as Array<{ status: string }>).map((x) => x.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    const count = async (sql: string) => Number((await m.sql(sql))[0]?.n);
    const roles = s.data.campaigns.filter((c) => c.type === 'ROLE_SUBMISSION').length;
    const sessions = s.data.campaigns.length - roles;
    expect(await count('SELECT count(*) AS n FROM session_results')).toBe(sessions * RECORDS);
    expect(await count('SELECT count(*) AS n FROM role_results')).toBe(roles * RECORDS);
    expect(await count('SELECT count(*) AS n FROM campaigns')).toBe(4);
    // Child rows match what the simulator serves.
    const { details, evals } = children(s, RECORDS);
    expect(await count('SELECT count(*) AS n FROM score_details')).toBe(details);
    expect(await count('SELECT count(*) AS n FROM eval_results')).toBe(evals);

    // Cursors and order_index exact: compared as text, never through a JS number.
    const state = await m.state('SELECT campaign_id, CAST(cursor AS TEXT) AS cursor, CAST(records AS TEXT) AS records FROM sync_state');
    expect(state.length).toBe(4);
    for (const row of state) {
      const c = s.data.byId.get(row.campaign_id as string);
      expect(row.cursor).toBe(String(s.data.orderIndex(c as Campaign, RECORDS - 1)));
      expect(row.records).toBe(String(RECORDS));
    }
    const top = await m.sql(
      'SELECT CAST(max(order_index) AS TEXT) AS m FROM (SELECT order_index FROM session_results UNION ALL SELECT order_index FROM role_results) x',
    );
    expect(BigInt(top[0]?.m as string) > 2n ** 53n).toBe(true);
    // Each row's order_index column is its record's.
    const held = await m.records();
    const columns = await m.sql(
      'SELECT id, CAST(order_index AS TEXT) AS o FROM session_results UNION ALL SELECT id, CAST(order_index AS TEXT) AS o FROM role_results',
    );
    expect(columns.length).toBe(4 * RECORDS);
    for (const { id, o } of columns)
      expect(String((held.get(String(id))?.record as { order_index?: unknown } | undefined)?.order_index), String(id)).toBe(o);

    // Columns are filled as §5 says.
    const sr = (await m.sql('SELECT * FROM session_results LIMIT 1'))[0] as Record<string, unknown>;
    for (const col of [
      'campaign_id',
      'user_id',
      'user_email',
      'session_id',
      'scenario_id',
      'scenario_name',
      'scenario_type',
      'score',
      'created_at',
      'updated_at',
      'order_index',
      'raw',
    ]) {
      expect(sr[col], col).not.toBeNull();
    }
    const cefr = (await m.sql('SELECT id, cefr FROM session_results WHERE cefr IS NOT NULL LIMIT 1'))[0] as { id: string; cefr: string };
    const scores = (held.get(cefr.id)?.record as { additional_scores?: { cefr?: { score?: string } } } | undefined)?.additional_scores;
    expect(cefr.cefr).toBe(scores?.cefr?.score);
    const ev = (await m.sql('SELECT score, score_text FROM eval_results LIMIT 1'))[0] as { score: number; score_text: string };
    expect(ev.score).toBe(Number(ev.score_text));
    const full = (await m.sql('SELECT raw FROM role_results_full LIMIT 1'))[0]?.raw;
    const raw = (typeof full === 'string' ? JSON.parse(full) : full) as Record<string, unknown>;
    expect(raw.score_details).not.toEqual([]);

    // The views answer.
    expect(await count('SELECT count(*) AS n FROM results')).toBe(4 * RECORDS);
    expect(await count('SELECT count(*) AS n FROM latest_results')).toBeGreaterThan(0);
    expect(await count('SELECT count(*) AS n FROM skill_scores')).toBe(evals);
    expect(await count('SELECT count(*) AS n FROM score_details_full')).toBe(details);
    expect(await count('SELECT count(*) AS n FROM eval_results WHERE position IS NULL')).toBe(0);
  });

  it('keeps order_index past 2^53 exact end to end', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 30, orderIndexStart: 2n ** 62n });
    const m = open(kind);
    const r = await m.run(s, 'pull', '--page-size', '7', '--json');
    expect(r.code, r.stderr).toBe(0);
    const c = s.data.campaigns[0] as Campaign;
    const served = Array.from({ length: 30 }, (_, i) => String(s.data.orderIndex(c, i)));
    // As each stored record holds it, and (a kind with tables) as its column does.
    const held = [...(await m.records()).values()]
      .filter((x) => x.campaign_id === c.id)
      .map((x) => BigInt(String((x.record as { order_index: unknown }).order_index)))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map(String);
    expect(held).toEqual(served);
    if (kind !== 'ndjson') {
      const rows = await m.sql(
        `SELECT CAST(order_index AS TEXT) AS o FROM session_results WHERE campaign_id = '${c.id}' ORDER BY order_index`,
      );
      expect(rows.map((x) => x.o)).toEqual(served);
    }
    const streams = JSON.parse(r.stdout).streams as Array<{ campaign_id: string; cursor: string }>;
    expect(streams.find((x) => x.campaign_id === c.id)?.cursor).toBe(String(s.data.orderIndex(c, 29)));
  });

  it('watch passes into the mirror, picking up growth between passes', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    // The service grows on the run's clock, which jumps the hour between the passes at once.
    const clock = fakeClock(Date.now());
    const s = await sim({ campaigns: 2, records: 40, growth: { count: 5, windowMs: 3_600_000 }, now: () => clock.now() });
    const m = open(kind);
    const r = await runOnClock(m, s, clock, 'watch', '--max-cycles', '2', '--interval', '1h', '--json');
    expect(r.code, r.stderr).toBe(0);
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
    expect((await m.records()).size).toBe((fresh[0] as number) + (fresh[1] as number));
  });
});
