/**
 * The mirror contract: the same cases against a SQLite file, an NDJSON folder and a PostgreSQL
 * schema, each compared record by record with what the simulator serves (./mirrors.ts says how to
 * add a case, and how a case says a kind lacks what it needs).
 */
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { sim } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { expectMirrors, type Held, MIRRORS, type Mirror, open, served, unsupported } from './mirrors.js';
import { failingRelay } from './relay.js';

const RECORDS = 30;
const PAGE = ['--page-size', '10'];

interface StreamDoc {
  campaign_id: string;
  records: number;
  new: number;
  updated: number;
  cursor: string | null;
  status: string;
  lookback?: { records: number; new: number; updated: number };
}

interface PullDoc {
  streams: StreamDoc[];
  lookback?: Record<string, unknown>;
  /** stderr: warnings (a clean pass says nothing). */
  said: string;
}

async function pull(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<PullDoc> {
  const r = await m.run(s, 'pull', ...PAGE, '--json', ...args);
  expect(r.code, r.stderr).toBe(0);
  return { ...JSON.parse(r.stdout), said: r.stderr };
}

/** A pull that has nothing to say on stderr. */
async function quietPull(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<PullDoc> {
  const doc = await pull(m, s, ...args);
  expect(doc.said).toBe('');
  return doc;
}

async function status(m: Mirror, s: RunningSimulator): Promise<StreamDoc[]> {
  const r = await m.run(s, 'status', '--json');
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { streams: StreamDoc[] }).streams;
}

type Campaign = RunningSimulator['data']['campaigns'][number];

const cursorsOf = (streams: StreamDoc[]) => Object.fromEntries(streams.map((x) => [x.campaign_id, x.cursor]));

describe.each(MIRRORS)('the mirror contract (%s)', (kind) => {
  it('the first pull holds what the simulator serves, record by record', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    const doc = await quietPull(m, s);
    expect(doc.streams.map((x) => [x.status, x.records, x.new])).toEqual(s.data.campaigns.map(() => ['ok', RECORDS, RECORDS]));
    await expectMirrors(m, s);
  });

  it('a second pull is a no-op: nothing new, nothing updated, nothing stored again, checkpoints as they were', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const rows = await m.rows();
    const campaigns = await m.campaigns();
    const cursors = cursorsOf(await status(m, s));
    const again = await quietPull(m, s);
    expect(again.streams.map((x) => [x.new, x.updated])).toEqual(s.data.campaigns.map(() => [0, 0]));
    expect(await m.rows()).toEqual(rows);
    expect(await m.campaigns()).toEqual(campaigns);
    expect(cursorsOf(await status(m, s))).toEqual(cursors);
  });

  it('--lookback picks up a re-scored record as updated, and leaves checkpoints alone', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const cursors = cursorsOf(await status(m, s));
    const [session] = s.data.campaigns;
    s.changes.rescore(session as NonNullable<typeof session>, 12, Date.parse('2026-11-23T08:00:00Z'));
    // The simulator's history is in the past: a window of ten years reaches all of it.
    const doc = await quietPull(m, s, '--lookback', '3650d');
    expect(doc.lookback).toMatchObject({ records: 2 * RECORDS, new: 0, updated: 1 });
    expect(doc.streams.map((x) => [x.new, x.lookback?.new, x.lookback?.updated])).toEqual([
      [0, 0, 1],
      [0, 0, 0],
    ]);
    expect(cursorsOf(await status(m, s))).toEqual(cursors);
    await expectMirrors(m, s);
  });

  it('reconcile --prune removes a record the service deleted, once', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    s.changes.remove(session, 4);
    s.changes.remove(role, 17);
    const gone = [s.data.sessionResult(session, 4).id, s.data.roleResult(role, 17, 'DETAILED').id];
    const look = await m.run(s, 'reconcile', '--json');
    expect(look.code, look.stderr).toBe(0);
    const report = JSON.parse(look.stdout).streams as Array<{ gone: number; pruned: number; gone_ids: string[] }>;
    expect(report.map((x) => [x.gone, x.pruned, x.gone_ids])).toEqual([
      [1, 0, [gone[0]]],
      [1, 0, [gone[1]]],
    ]);
    expect((await m.records()).size).toBe(2 * RECORDS);
    const prune = await m.run(s, 'reconcile', '--prune', '--json');
    expect(prune.code, prune.stderr).toBe(0);
    expect((JSON.parse(prune.stdout).streams as Array<{ pruned: number }>).map((x) => x.pruned)).toEqual([1, 1]);
    await expectMirrors(m, s);
    const again = await m.run(s, 'reconcile', '--prune', '--json');
    expect((JSON.parse(again.stdout).streams as Array<{ gone: number; pruned: number }>).map((x) => [x.gone, x.pruned])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    await expectMirrors(m, s);
  });

  it('forget --user leaves no trace of the candidate; everyone else stays', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const all = await served(s);
    const victim = ((all[RECORDS + 5] as Held).record as { user: { id: string; email: string } }).user;
    expect(await m.holds(victim.email)).toBe(true);
    const r = await m.run(s, 'forget', '--user', victim.email.toUpperCase(), '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(await m.holds(victim.email)).toBe(false);
    expect(await m.holds(victim.id)).toBe(false);
    const others = all.filter((x) => (x.record as { user: { id: string } }).user.id !== victim.id);
    expect(others.length).toBeLessThan(all.length);
    const got = await m.records();
    expect([...got.keys()].sort()).toEqual(others.map((x) => x.id).sort());
    for (const o of others) expect(got.get(o.id)?.record, o.id).toEqual(o.record);
    expect(await m.strays()).toBe(0);
  });

  it('reset --campaign forgets that checkpoint only: the next pull re-reads the campaign and stores nothing twice', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const rows = await m.rows();
    const [first, second] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    const reset = await m.run(s, 'reset', '--campaign', first.id);
    expect(reset.code, reset.stderr).toBe(0);
    const cursors = cursorsOf(await status(m, s));
    expect(cursors[first.id]).toBeNull();
    expect(cursors[second.id]).toBe(String(s.data.orderIndex(second, RECORDS - 1)));
    const again = await quietPull(m, s);
    expect(again.streams.map((x) => [x.campaign_id, x.records, x.new])).toEqual([
      [first.id, RECORDS, 0],
      [second.id, 0, 0],
    ]);
    expect(cursorsOf(await status(m, s))[first.id]).toBe(String(s.data.orderIndex(first, RECORDS - 1)));
    expect((await m.rows()).length).toBe(rows.length);
    await expectMirrors(m, s);
  });

  it('status shows each stream: its campaign, cursor and records', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const streams = await status(m, s);
    expect(streams.map((x) => [x.campaign_id, x.cursor, x.records]).sort()).toEqual(
      s.data.campaigns.map((c) => [c.id, String(s.data.orderIndex(c, RECORDS - 1)), RECORDS]).sort(),
    );
    const table = await m.run(s, 'status');
    expect(table.code, table.stderr).toBe(0);
    for (const c of s.data.campaigns) expect(table.stdout).toContain(c.name);
  });

  it("each stream's checkpoint is the order_index of the last record it stored", async (ctx) => {
    if (unsupported(kind, 'sql', ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const tops = await m.sql(
      'SELECT campaign_id, CAST(max(order_index) AS TEXT) AS top FROM (SELECT campaign_id, order_index FROM session_results UNION ALL SELECT campaign_id, order_index FROM role_results) x GROUP BY campaign_id',
    );
    expect(Object.fromEntries(tops.map((r) => [r.campaign_id, r.top]))).toEqual(cursorsOf(await status(m, s)));
  });

  it('export holds what the mirror holds, record by record', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sharedSim({ records: RECORDS });
    const m = open(kind);
    await quietPull(m, s);
    const exported = new Map<string, unknown>();
    for (const table of ['session-results', 'role-results']) {
      const r = await m.run(s, 'export', '--table', table, '--format', 'ndjson');
      expect(r.code, r.stderr).toBe(0);
      for (const line of r.stdout.trim().split('\n')) {
        const row = parseJson(line) as { id: string; raw: unknown };
        exported.set(row.id, row.raw);
      }
    }
    const held = await m.records();
    expect([...exported.keys()].sort()).toEqual([...held.keys()].sort());
    for (const [id, h] of held) expect(exported.get(id), id).toEqual(h.record);
  });

  it('one id served by two campaigns stays with the campaign that stored it first, is reported once, counted in status, and never flips', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 4, records: RECORDS });
    const [a, roleA, b, roleB] = s.data.campaigns as [Campaign, Campaign, Campaign, Campaign];
    // b also serves a's record 5, roleB roleA's record 7 (a DETAILED record, with its score details).
    s.changes.share(a, 5, b, 10);
    s.changes.share(roleA, 7, roleB, 12);
    const sessionId = s.data.sessionResult(a, 5).id as string;
    const roleId = s.data.roleResult(roleA, 7, 'DETAILED').id as string;
    const m = open(kind);
    // One stream at a time: which campaign stores a shared id first is known.
    const first = await pull(m, s, '--concurrency', '1');
    // Served, so each stream's cursor went past it: the page was sound.
    expect(first.streams.map((x) => [x.campaign_id, x.records, x.new, x.cursor])).toEqual(
      [a, roleA, b, roleB].map((c, i) => [c.id, i < 2 ? RECORDS : RECORDS + 1, RECORDS, String(s.data.orderIndex(c, RECORDS - 1))]),
    );
    expect(first.said.match(/two campaigns/g)).toHaveLength(2);
    expect(first.said).toContain(`campaign ${b.id} (stream ${b.id}/session) was served result ${sessionId}, which campaign ${a.id} holds`);
    expect(first.said).toContain(`was served result ${roleId}, which campaign ${roleA.id} holds`);
    const owners = async () => (await m.rows()).filter((r) => r.id === sessionId || r.id === roleId).map((r) => [r.id, r.campaign_id]);
    const kept = [
      [sessionId, a.id],
      [roleId, roleA.id],
    ];
    expect(await owners()).toEqual(kept);
    await expectMirrors(m, s);
    const rows = await m.rows();

    // Read again whole, then with a lookback over the whole history: nothing changes, nothing is said again.
    const full = await pull(m, s, '--concurrency', '1', '--full');
    expect(full.said).toBe('');
    expect(full.streams.map((x) => [x.records, x.new, x.updated])).toEqual([
      [RECORDS, 0, 0],
      [RECORDS, 0, 0],
      [RECORDS + 1, 0, 0],
      [RECORDS + 1, 0, 0],
    ]);
    const lookback = await pull(m, s, '--concurrency', '1', '--lookback', '3650d');
    expect(lookback.said).toBe('');
    expect(lookback.lookback).toMatchObject({ records: 4 * RECORDS + 2, new: 0, updated: 0 });
    expect(await m.rows()).toEqual(rows);

    // reconcile: b's copy is served, not stored, neither changed nor gone; a's record is a's.
    const look = await m.run(s, 'reconcile', '--prune', '--json');
    expect(look.code, look.stderr).toBe(0);
    const report = JSON.parse(look.stdout).streams as Array<Record<string, unknown>>;
    expect(report.map((x) => [x.campaign_id, x.served, x.stored, x.added, x.changed, x.gone, x.pruned])).toEqual([
      [a.id, RECORDS, RECORDS, 0, 0, 0, 0],
      [roleA.id, RECORDS, RECORDS, 0, 0, 0, 0],
      [b.id, RECORDS + 1, RECORDS, 0, 0, 0, 0],
      [roleB.id, RECORDS + 1, RECORDS, 0, 0, 0, 0],
    ]);
    expect(await m.rows()).toEqual(rows);
    expect(await owners()).toEqual(kept);

    const streams = (JSON.parse((await m.run(s, 'status', '--json')).stdout) as { streams: Array<StreamDoc & { id_conflicts: number }> })
      .streams;
    expect(streams.map((x) => [x.campaign_id, x.records, x.id_conflicts]).sort()).toEqual(
      [
        [a.id, RECORDS, 0],
        [roleA.id, RECORDS, 0],
        [b.id, RECORDS, 1],
        [roleB.id, RECORDS, 1],
      ].sort(),
    );
    await expectMirrors(m, s);
  });

  it('a page that fails mid-stream leaves the checkpoint at the last committed page; the re-run stores every record once', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const role = s.data.campaigns[1] as (typeof s.data.campaigns)[0];
    const committed = String(s.data.orderIndex(role, 19));
    // The role stream's third page fails, every time it is asked for.
    const relay = await failingRelay(
      s,
      (url) => url.searchParams.get('campaign_id') === role.id && url.searchParams.get('starting_after') === committed,
    );
    const m = open(kind);
    const failed = await m.run(s, 'pull', ...PAGE, '--json', '--base-url', relay.url, '--max-retries', '0');
    expect(failed.code, failed.stderr).toBe(4);
    expect(relay.failed).toHaveLength(1);
    const streams = await status(m, s);
    expect(streams.find((x) => x.campaign_id === role.id)).toMatchObject({ cursor: committed, records: 20 });
    expect((await m.rows()).filter((r) => r.campaign_id === role.id)).toHaveLength(20);
    // The same service without the relay: another base URL to the mirror, recorded over the relay's.
    await quietPull(m, s, '--switch-service');
    const rows = await m.rows();
    expect(rows).toHaveLength(2 * RECORDS);
    await expectMirrors(m, s);
  });
});
