/**
 * Record identity on every kind of mirror (./mirrors.ts says how to add a case): a result id served
 * by two campaigns through OVERALL pages stays with the campaign that stored it first, is reported
 * once and counted in `status` (DETAILED pages are ./mirror.test.ts's case); a campaign whose type
 * changes retires its old stream: shown as such in `status`, left out of `--check`, its records
 * removed once by `reconcile --prune`, the stream by `reset --campaign`.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { sim } from '../helpers/index.js';
import { alter, MIRRORS, ndjsonLines, ok, open, unsupported } from './mirrors.js';

type Campaign = RunningSimulator['data']['campaigns'][number];

describe.each(MIRRORS)('record identity (%s)', (kind) => {
  it('one result id served by two campaigns never flips (OVERALL)', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 4, records: 30 });
    const [a, roleA, b, roleB] = s.data.campaigns as [Campaign, Campaign, Campaign, Campaign];
    s.changes.share(a, 5, b, 10);
    s.changes.share(roleA, 7, roleB, 12);
    const sessionId = s.data.sessionResult(a, 5).id as string;
    const roleId = s.data.roleResult(roleA, 7, 'DETAILED').id as string;
    const m = open(kind);
    const pull = (...args: string[]) => m.run(s, 'pull', '--report-type', 'OVERALL', ...args);

    const first = await pull('--concurrency', '1');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr.match(/two campaigns/g)).toHaveLength(2);
    expect(first.stderr).toContain(
      `campaign ${b.id} (stream ${b.id}/session) was served result ${sessionId}, which campaign ${a.id} holds`,
    );
    expect(first.stderr).toContain(`was served result ${roleId}, which campaign ${roleA.id} holds`);
    // Each id's stored copies with their campaign, and the campaigns of the role result's score details (none in OVERALL).
    const owners = async () => [
      (await m.rows()).filter((r) => r.id === sessionId || r.id === roleId).map((r) => [r.id, r.campaign_id]),
      kind === 'ndjson'
        ? []
        : (await m.sql(`SELECT DISTINCT campaign_id FROM score_details WHERE role_result_id = '${roleId}'`)).map((r) => r.campaign_id),
    ];
    const kept = [
      [
        [sessionId, a.id],
        [roleId, roleA.id],
      ],
      [],
    ];
    expect(await owners()).toEqual(kept);

    for (const again of [await pull('--full'), await pull('--lookback', '365d')]) {
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).not.toContain('two campaigns');
    }
    expect(await owners()).toEqual(kept);

    const look = await ok(m, s, 'reconcile', '--report-type', 'OVERALL', '--json');
    const streams = JSON.parse(look.stdout).streams as Array<Record<string, unknown>>;
    expect(streams.map((x) => [x.campaign_id, x.served, x.stored, x.added, x.changed, x.gone])).toEqual([
      [a.id, 30, 30, 0, 0, 0],
      [roleA.id, 30, 30, 0, 0, 0],
      [b.id, 31, 30, 0, 0, 0],
      [roleB.id, 31, 30, 0, 0, 0],
    ]);
    expect(await owners()).toEqual(kept);

    const status = JSON.parse((await ok(m, s, 'status', '--json')).stdout);
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

  it('a campaign whose type changes retires its old stream: shown as such, left out of --check, pruned once by reconcile, removed by reset', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 20 });
    const [c, other] = s.data.campaigns as [Campaign, Campaign];
    const old = `${c.id}/session`;
    const m = open(kind);
    await ok(m, s, 'pull');
    s.changes.retype(c, 'ROLE_SUBMISSION');
    const second = await ok(m, s, 'pull', '--json');
    expect(second.stderr).toContain(`is of type ROLE_SUBMISSION now: its stream ${old} is retired`);
    const read = (JSON.parse(second.stdout).streams as Array<{ campaign_id: string; endpoint: string; report_type: string | null }>).map(
      (x) => [x.campaign_id, x.endpoint, x.report_type],
    );
    expect(read.sort()).toEqual(
      [
        [c.id, 'role', 'DETAILED'],
        [other.id, 'role', 'DETAILED'],
      ].sort(),
    );
    const streamOf = async (stream: string) =>
      (JSON.parse((await ok(m, s, 'status', '--json')).stdout).streams as Array<Record<string, unknown>>).find((x) => x.stream === stream);
    expect(await streamOf(old)).toMatchObject({ type_changed_to: 'ROLE_SUBMISSION', unlisted_since: null });
    // An hour later for the old stream: it is retired, not stale.
    await alter(m, `UPDATE sync_state SET last_success_at = '${new Date(Date.now() - 3_600_000).toISOString()}' WHERE stream = '${old}'`);

    const check = await ok(m, s, 'status', '--check');
    expect(check.stdout).toContain(`${c.name} (session): retired: the campaign's type is now ROLE_SUBMISSION, read from the role endpoint`);
    const doc = JSON.parse((await ok(m, s, 'status', '--check', '--json')).stdout);
    expect(doc).toMatchObject({ status: 'ok', unhealthy: [], retired: [{ stream: old, type_now: 'ROLE_SUBMISSION' }] });
    const status = JSON.parse((await ok(m, s, 'status', '--json')).stdout);
    expect(
      status.streams.map((x: { stream: string; type_changed_to: string | null; records: number }) => [
        x.stream,
        x.type_changed_to,
        x.records,
      ]),
    ).toEqual(
      expect.arrayContaining([
        [old, 'ROLE_SUBMISSION', 20],
        [`${c.id}/role/DETAILED`, null, 20],
      ]),
    );

    // reconcile names the retired stream with every record gone, and --prune removes them (no request for it).
    type Report = { streams: Array<{ campaign_id: string; endpoint: string }> };
    const retiredOf = (r: { stdout: string }) =>
      (JSON.parse(r.stdout) as Report).streams.find((x) => x.campaign_id === c.id && x.endpoint === 'session');
    expect(retiredOf(await ok(m, s, 'reconcile', '--json'))).toMatchObject({
      served: 0,
      stored: 20,
      gone: 20,
      pruned: 0,
      retired_as: 'ROLE_SUBMISSION',
      requests: 0,
    });
    expect(retiredOf(await ok(m, s, 'reconcile', '--prune', '--json'))).toMatchObject({
      served: 0,
      stored: 20,
      gone: 20,
      pruned: 20,
      retired_as: 'ROLE_SUBMISSION',
      requests: 0,
    });
    // What the mirror holds of the campaign now: its role results only (an NDJSON file: a tombstone per pruned line).
    const tombstones = () => ndjsonLines(m, 'session_results.ndjson').filter((r) => r._deleted_at !== undefined && r.campaign_id === c.id);
    const held = async () => [...(await m.records()).values()].filter((r) => r.campaign_id === c.id).map((r) => r.id);
    expect((await held()).sort()).toEqual(Array.from({ length: 20 }, (_, i) => s.data.roleResult(c, i, 'DETAILED').id as string).sort());
    if (kind === 'ndjson') expect(tombstones()).toHaveLength(20);
    else {
      expect(Number((await m.sql(`SELECT count(*) AS n FROM session_results WHERE campaign_id = '${c.id}'`))[0]?.n)).toBe(0);
      expect(Number((await m.sql(`SELECT count(*) AS n FROM role_results WHERE campaign_id = '${c.id}'`))[0]?.n)).toBe(20);
    }
    expect(Number((await m.state(`SELECT records FROM sync_state WHERE stream = '${old}'`))[0]?.records)).toBe(0);
    // Exactly once: a second prune finds nothing of it left.
    expect(retiredOf(await ok(m, s, 'reconcile', '--prune', '--json'))).toMatchObject({ stored: 0, pruned: 0 });
    if (kind === 'ndjson') expect(tombstones()).toHaveLength(20);

    const reset = await ok(m, s, 'reset', '--campaign', c.id, '--json');
    expect(JSON.parse(reset.stdout)).toMatchObject({ reset: 1, retired_streams_removed: [old] });
    expect(await m.state(`SELECT stream FROM sync_state WHERE campaign_id = '${c.id}'`)).toEqual([{ stream: `${c.id}/role/DETAILED` }]);
  });
});
