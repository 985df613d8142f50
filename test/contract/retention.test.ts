/**
 * Retention on the PostgreSQL mirror beyond its contract case (test/contract/audit.test.ts: `forget
 * --older-than` on every kind): `pull --retention` erases what is older once a day, and records when.
 */
import { expect, it } from 'vitest';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim } from '../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient } from '../helpers/pg.js';
import { runCli } from '../helpers/run-cli.js';

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

describePg('retention on a PostgreSQL mirror', () => {
  it('pull --retention erases what is older once a day, and records when', async () => {
    const s = await sim({ campaigns: 2, records: RECORDS });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url } };
    expect((await runCli(['pull', ...db], env)).code).toBe(0);
    const cut = cutOf(servedResults(s, RECORDS));
    const oldIds = new Set(cut.old.map((r) => r.id));
    const first = await runCli(['pull', ...db, '--retention', cut.duration(), '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const doc = JSON.parse(first.stdout) as { retention?: { removed: { session_results: number; role_results: number } } };
    expect((doc.retention?.removed.session_results ?? 0) + (doc.retention?.removed.role_results ?? 0)).toBe(cut.old.length);
    const ids = async () =>
      (await query(schema, 'SELECT id FROM session_results UNION ALL SELECT id FROM role_results')).map((x) => String(x.id));
    expect((await ids()).filter((id) => oldIds.has(id))).toEqual([]);
    expect(await query(schema, "SELECT count(*)::int AS n FROM meta WHERE key = 'retention_ran_at'")).toEqual([{ n: 1 }]);
    // Within the day: not again (the old ones a --full without the retention brought back stay).
    expect((await runCli(['pull', ...db, '--full'], env)).code).toBe(0);
    const second = await runCli(['pull', ...db, '--retention', cut.duration(), '--json'], env);
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as { retention?: unknown }).retention).toBeUndefined();
    expect((await ids()).filter((id) => oldIds.has(id)).length).toBe(cut.old.length);
  });
});
