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
    expect(await m.orphans()).toBe(0);
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

  it('one id served by two campaigns is kept once, with the campaign that stored it first', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 4, records: RECORDS });
    const [a, , b] = s.data.campaigns as Array<(typeof s.data.campaigns)[0]>;
    s.changes.share(a as NonNullable<typeof a>, 5, b as NonNullable<typeof b>, 10);
    const id = s.data.sessionResult(a as NonNullable<typeof a>, 5).id as string;
    const m = open(kind);
    // One stream at a time: the first campaign stores it first; the second one's copy is a warning.
    const first = await pull(m, s, '--concurrency', '1');
    expect(first.said).toContain(`result ${id}, which campaign ${a?.id} holds`);
    const rows = await m.rows();
    expect(rows.filter((r) => r.id === id).map((r) => r.campaign_id)).toEqual([a?.id]);
    await expectMirrors(m, s);
    await pull(m, s, '--concurrency', '1');
    expect(await m.rows()).toEqual(rows);
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
    await quietPull(m, s);
    const rows = await m.rows();
    expect(rows).toHaveLength(2 * RECORDS);
    await expectMirrors(m, s);
  });
});
