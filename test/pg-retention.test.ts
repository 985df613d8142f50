/**
 * Retention on the PostgreSQL mirror beyond its contract case (test/contract/audit.test.ts: `forget
 * --older-than` on every kind): `pull --retention` erases what is older once a day, and records when.
 */
import { expect, it } from 'vitest';
import type { RunningSimulator } from '../src/simulator/server.js';
import { sim } from './helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient } from './helpers/pg.js';
import { runCli } from './helpers/run-cli.js';

const RECORDS = 20;

async function query(schema: string, sql: string, values: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const c = await pgClient();
  try {
    await c.query(`SET search_path TO ${schema}`);
    return (await c.query(sql, values)).rows;
  } finally {
    await c.end();
  }
}

/** Every result the simulator serves: its id and date. */
function served(s: RunningSimulator): Array<{ id: string; created: number }> {
  const out: Array<{ id: string; created: number }> = [];
  for (const c of s.data.campaigns) {
    for (let i = 0; i < RECORDS; i++) {
      const r = (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED')) as {
        id: string;
        created_at: string;
      };
      out.push({ id: r.id, created: Date.parse(r.created_at) });
    }
  }
  return out;
}

/** A cut in the widest gap of the history's middle, as an --older-than duration. */
function cutOf(records: Array<{ id: string; created: number }>) {
  const times = [...new Set(records.map((r) => r.created))].sort((a, b) => a - b);
  let best = { gap: 0, at: 0 };
  for (let k = Math.floor(times.length / 3); k < Math.floor((2 * times.length) / 3); k++) {
    const gap = (times[k + 1] as number) - (times[k] as number);
    if (gap > best.gap) best = { gap, at: ((times[k] as number) + (times[k + 1] as number)) / 2 };
  }
  expect(best.gap).toBeGreaterThan(3_600_000);
  return {
    old: records.filter((r) => r.created < best.at).map((r) => r.id),
    young: records.filter((r) => r.created >= best.at).map((r) => r.id),
    duration: () => `${Math.round((Date.now() - best.at) / 1000)}s`,
  };
}

describePg('retention on a PostgreSQL mirror', () => {
  it('pull --retention erases what is older once a day, and records when', async () => {
    const s = await sim({ campaigns: 2, records: RECORDS });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url } };
    expect((await runCli(['pull', ...db], env)).code).toBe(0);
    const cut = cutOf(served(s));
    const first = await runCli(['pull', ...db, '--retention', cut.duration(), '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const doc = JSON.parse(first.stdout) as { retention?: { removed: { session_results: number; role_results: number } } };
    expect((doc.retention?.removed.session_results ?? 0) + (doc.retention?.removed.role_results ?? 0)).toBe(cut.old.length);
    const ids = async () =>
      (await query(schema, 'SELECT id FROM session_results UNION ALL SELECT id FROM role_results')).map((x) => String(x.id));
    expect((await ids()).filter((id) => cut.old.includes(id))).toEqual([]);
    expect(await query(schema, "SELECT count(*)::int AS n FROM meta WHERE key = 'retention_ran_at'")).toEqual([{ n: 1 }]);
    // Within the day: not again (the old ones a --full without the retention brought back stay).
    expect((await runCli(['pull', ...db, '--full'], env)).code).toBe(0);
    const second = await runCli(['pull', ...db, '--retention', cut.duration(), '--json'], env);
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as { retention?: unknown }).retention).toBeUndefined();
    expect((await ids()).filter((id) => cut.old.includes(id)).length).toBe(cut.old.length);
  });
});
