/**
 * identity.test.ts's cases on a PostgreSQL mirror, through the built CLI: a result id served by two
 * campaigns stays with the campaign that stored it first (DETAILED pages, written in a transaction,
 * and OVERALL pages, one statement each), is reported once and counted in `status`; a campaign whose
 * type changes retires its old stream.
 */
import { expect, it } from 'vitest';
import { sim } from '../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../helpers/pg.js';
import { runCli } from '../helpers/run-cli.js';

describePg('record identity on a PostgreSQL mirror', () => {
  // DETAILED is the mirror contract's case (test/contract/), for every kind of mirror.
  it.each(['OVERALL'])('one result id served by two campaigns never flips (%s)', async (report) => {
    const s = await sim({ campaigns: 4, records: 30 });
    const [a, roleA, b, roleB] = s.data.campaigns as [
      (typeof s.data.campaigns)[0],
      (typeof s.data.campaigns)[0],
      (typeof s.data.campaigns)[0],
      (typeof s.data.campaigns)[0],
    ];
    s.changes.share(a, 5, b, 10);
    s.changes.share(roleA, 7, roleB, 12);
    const sessionId = s.data.sessionResult(a, 5).id as string;
    const roleId = s.data.roleResult(roleA, 7, 'DETAILED').id as string;
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const pull = (...args: string[]) => runCli(['pull', ...db, '--base-url', s.url, '--report-type', report, ...args], env);

    const first = await pull('--concurrency', '1');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr.match(/two campaigns/g)).toHaveLength(2);
    expect(first.stderr).toContain(
      `campaign ${b.id} (stream ${b.id}/session) was served result ${sessionId}, which campaign ${a.id} holds`,
    );
    expect(first.stderr).toContain(`was served result ${roleId}, which campaign ${roleA.id} holds`);
    const owners = async () => [
      (await pgRows(schema, `SELECT campaign_id FROM session_results WHERE id = '${sessionId}'`))[0]?.campaign_id,
      (await pgRows(schema, `SELECT campaign_id FROM role_results WHERE id = '${roleId}'`))[0]?.campaign_id,
      (await pgRows(schema, `SELECT DISTINCT campaign_id FROM score_details WHERE role_result_id = '${roleId}'`)).map((r) => r.campaign_id),
    ];
    const kept = [a.id, roleA.id, report === 'DETAILED' ? [roleA.id] : []];
    expect(await owners()).toEqual(kept);

    for (const again of [await pull('--full'), await pull('--lookback', '365d')]) {
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).not.toContain('two campaigns');
    }
    expect(await owners()).toEqual(kept);

    const look = await runCli(['reconcile', ...db, '--base-url', s.url, '--report-type', report, '--json'], env);
    expect(look.code, look.stderr).toBe(0);
    const streams = JSON.parse(look.stdout).streams as Array<Record<string, unknown>>;
    expect(streams.map((x) => [x.campaign_id, x.served, x.stored, x.added, x.changed, x.gone])).toEqual([
      [a.id, 30, 30, 0, 0, 0],
      [roleA.id, 30, 30, 0, 0, 0],
      [b.id, 31, 30, 0, 0, 0],
      [roleB.id, 31, 30, 0, 0, 0],
    ]);
    expect(await owners()).toEqual(kept);

    const status = JSON.parse((await runCli(['status', ...db, '--json'])).stdout);
    expect(
      status.streams
        .map((x: { campaign_id: string; records: number; id_conflicts: number }) => [x.campaign_id, x.records, x.id_conflicts])
        .sort(),
    ).toEqual(
      [
        [a.id, 30, 0],
        [roleA.id, 30, 0],
        [b.id, 30, 1],
        [roleB.id, 30, 1],
      ].sort(),
    );
  });

  it('a campaign whose type changes retires its old stream: not stale, pruned by reconcile, removed by reset', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[0];
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    expect((await runCli(['pull', ...db, '--base-url', s.url], env)).code).toBe(0);
    s.changes.retype(c, 'ROLE_SUBMISSION');
    const second = await runCli(['pull', ...db, '--base-url', s.url], env);
    expect(second.code, second.stderr).toBe(0);
    await pgRows(schema, `UPDATE sync_state SET last_success_at = now() - interval '1 hour' WHERE stream = '${c.id}/session'`);

    const check = await runCli(['status', ...db, '--check', '--json']);
    expect(check.code, check.stdout).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ status: 'ok', retired: [{ stream: `${c.id}/session`, type_now: 'ROLE_SUBMISSION' }] });

    const prune = await runCli(['reconcile', ...db, '--base-url', s.url, '--prune', '--json'], env);
    expect(prune.code, prune.stderr).toBe(0);
    const retired = JSON.parse(prune.stdout).streams.find(
      (x: { campaign_id: string; endpoint: string }) => x.campaign_id === c.id && x.endpoint === 'session',
    );
    expect(retired).toMatchObject({ served: 0, stored: 20, gone: 20, pruned: 20, retired_as: 'ROLE_SUBMISSION' });
    expect(await pgRows(schema, `SELECT count(*)::int AS n FROM session_results WHERE campaign_id = '${c.id}'`)).toEqual([{ n: 0 }]);
    expect(await pgRows(schema, `SELECT count(*)::int AS n FROM role_results WHERE campaign_id = '${c.id}'`)).toEqual([{ n: 20 }]);

    const reset = await runCli(['reset', ...db, '--campaign', c.id, '--json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ reset: 1, retired_streams_removed: [`${c.id}/session`] });
    expect(await pgRows(schema, `SELECT stream FROM sync_state WHERE campaign_id = '${c.id}'`)).toEqual([
      { stream: `${c.id}/role/DETAILED` },
    ]);
  });
});
