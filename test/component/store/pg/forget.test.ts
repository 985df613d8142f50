import { expect, it } from 'vitest';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describePg('forget on a PostgreSQL mirror', () => {
  it('forget erases one candidate from PostgreSQL with their child rows; an unknown one is exit 2', async () => {
    const s = await sharedSim({ campaigns: 2, records: 15 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const [who] = await pgRows(schema, 'SELECT user_email FROM role_results WHERE user_email IS NOT NULL LIMIT 1');
    const email = String(who?.user_email);
    const before = await pgRows(schema, 'SELECT count(*)::int AS n FROM role_results WHERE lower(user_email) = lower($1)', [email]);
    expect(before[0]?.n).toBeGreaterThan(0);
    // A service's error message that quoted the candidate, stored as a stream's last error: scrubbed too.
    await pgRows(schema, 'UPDATE sync_state SET last_error = $1 WHERE stream = (SELECT min(stream) FROM sync_state)', [
      `500 cannot score ${email} (request_id rq-1)`,
    ]);
    const r = await runCli(['forget', ...db, '--user', email.toUpperCase(), '--json']);
    expect(r.code, r.stderr).toBe(0);
    const removed = (JSON.parse(r.stdout) as { removed: { role_results: number; error_texts: number } }).removed;
    expect(removed.role_results).toBe(before[0]?.n);
    expect(removed.error_texts).toBe(1);
    expect(await pgRows(schema, 'SELECT last_error FROM sync_state WHERE last_error IS NOT NULL')).toEqual([
      { last_error: '500 cannot score [erased] (request_id rq-1)' },
    ]);
    for (const t of ['session_results', 'role_results', 'score_details'])
      expect((await pgRows(schema, `SELECT count(*)::int AS n FROM ${t} WHERE lower(user_email) = lower($1)`, [email]))[0]?.n).toBe(0);
    const orphans = await pgRows(
      schema,
      "SELECT count(*)::int AS n FROM eval_results e WHERE e.parent_type = 'score_detail' AND NOT EXISTS (SELECT 1 FROM score_details d WHERE d.id = e.parent_id)",
    );
    expect(orphans[0]?.n).toBe(0);
    expect((await runCli(['forget', ...db, '--user', 'nobody@example.invalid'])).code).toBe(2);
  });
  it("forget finds a candidate in a score detail kept in another result's raw (no id), by e-mail or numeric id; the result stays", async () => {
    const s = await sharedSim({ campaigns: 2, records: 15 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const [row] = await pgRows(schema, "SELECT id, raw::text AS raw FROM role_results WHERE report_type = 'DETAILED' ORDER BY id LIMIT 1");
    const id = String(row?.id);
    const before = JSON.parse(String(row?.raw)) as { score_details: unknown[] };
    const nested = [
      { user: { id: 'c0ffee00-0000-4000-8000-00000000000c', email: 'Nested.Only@Example.com' }, score: 1 },
      { user: { id: 4242, email: 'numeric.id@example.com' }, score: 2 },
    ];
    await pgRows(schema, 'UPDATE role_results SET raw = $1::jsonb WHERE id = $2', [
      JSON.stringify({ ...before, score_details: [...before.score_details, ...nested] }),
      id,
    ]);
    const r = await runCli(['forget', ...db, '--user', 'nested.only@example.com', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).removed).toMatchObject({ role_results: 0, records_changed: 1 });
    const numeric = await runCli(['forget', ...db, '--user', '4242']);
    expect(numeric.code, numeric.stderr).toBe(0);
    const [after] = await pgRows(schema, 'SELECT raw::text AS raw FROM role_results WHERE id = $1', [id]);
    expect(JSON.parse(String(after?.raw))).toEqual(before);
    const left = await pgRows(
      schema,
      "SELECT count(*)::int AS n FROM role_results WHERE raw::text ILIKE '%nested.only%' OR raw::text LIKE '%numeric.id%'",
    );
    expect(left[0]?.n).toBe(0);
    expect((await runCli(['forget', ...db, '--user', '4242'])).code).toBe(2);
  });
  it('forget matches the e-mail ignoring case for all of Unicode, composed or not, as in SQLite (not by the server locale)', async () => {
    const s = await sharedSim({ campaigns: 2, records: 15 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    // One candidate's rows get their address in other cases and decomposed (NFD); forget is asked lower case, composed.
    const [who] = await pgRows(
      schema,
      'SELECT user_id FROM (SELECT user_id FROM session_results UNION ALL SELECT user_id FROM role_results) u GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1',
    );
    const victim = String(who?.user_id);
    const spellings = ['Zoë.Ünal@Example.com', 'ZOË.ÜNAL@EXAMPLE.COM', 'zoe\u0308.U\u0308nal@example.COM'];
    let n = 0;
    for (const t of ['session_results', 'role_results', 'score_details']) {
      for (const row of await pgRows(schema, `SELECT id FROM ${t} WHERE user_id = $1 ORDER BY id`, [victim]))
        await pgRows(schema, `UPDATE ${t} SET user_email = $1 WHERE id = $2`, [spellings[n++ % spellings.length], row.id]);
    }
    expect(n).toBeGreaterThanOrEqual(spellings.length);
    const r = await runCli(['forget', ...db, '--user', 'zoë.ünal@example.com', '--json']);
    expect(r.code, r.stderr).toBe(0);
    for (const t of ['session_results', 'role_results', 'score_details'])
      expect((await pgRows(schema, `SELECT count(*)::int AS n FROM ${t} WHERE user_id = $1`, [victim]))[0]?.n, t).toBe(0);
  });
});
