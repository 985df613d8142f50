/**
 * --lookback: after the incremental read, the recent window is read again with the
 * checkpoint untouched; a re-scored record counts as updated, a late arrival below the checkpoint as
 * new, and nothing else counts at all. Against the simulator's changes (simulator/changes.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { lookbackWindow } from '../../../src/app/sync-job.js';
import { parseJson } from '../../../src/core/json.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import type { PageSink } from '../../../src/store/port.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { type Db, openDatabase } from '../../../src/store/sqlite/db.js';
import { NdjsonSink } from '../../../src/store/sqlite/ndjson/sink.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { type PassOptions, runPass } from '../../../src/sync/pass.js';
import type { DateWindow } from '../../../src/sync/stream.js';
import { fakeClock } from '../../helpers/clock.js';
import { clientConfig, sim, tempDir } from '../../helpers/index.js';
import { passDefaults } from '../../helpers/mock.js';
import { runCli } from '../../helpers/run-cli.js';

const DAY = 86_400_000;
const open: Array<{ sink: PageSink; db: Db }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.sink.close();
    o.db.close();
  }
});

function store(kind: 'sqlite' | 'ndjson' = 'sqlite') {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'm.db'));
  const state = new SqliteCheckpoints(db);
  const sink = kind === 'sqlite' ? new SqliteSink(db, state) : new NdjsonSink(db, state, join(dir, 'out'));
  open.push({ sink, db });
  return { dir, db, state, sink };
}

async function pullOnce(s: RunningSimulator, st: ReturnType<typeof store>, opts: Partial<PassOptions> = {}) {
  const rate = { count: 100_000, windowMs: 1000 };
  const client = new ApiClient(clientConfig(s, { rate }), { budget: new RequestBudget(rate) });
  try {
    const result = await runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, pageSize: 20, ...opts });
    await st.sink.flush();
    return result;
  } finally {
    await client.close();
  }
}

/** The simulator's history ends in the past: "today" is the day of record `i`, and the window the 3 days before it. */
function windowAround(s: RunningSimulator, i: number): { window: DateWindow; today: number } {
  const today = s.data.createdAt(i);
  return { window: lookbackWindow(3 * DAY, today), today };
}

function recordsIn(s: RunningSimulator, window: DateWindow, count: number): number[] {
  const day = (i: number) => new Date(s.data.createdAt(i)).toISOString().slice(0, 10);
  return Array.from({ length: count }, (_, i) => i).filter((i) => day(i) >= (window.since ?? '') && day(i) <= (window.until ?? ''));
}

describe('--lookback', () => {
  it('the window is from the UTC day of now minus the lookback through today', () => {
    expect(lookbackWindow(7 * DAY, Date.parse('2026-11-23T01:00:00Z'))).toEqual({ since: '2026-11-16', until: '2026-11-23' });
    expect(lookbackWindow(36 * 3_600_000, Date.parse('2026-11-23T10:00:00Z'))).toEqual({ since: '2026-11-21', until: '2026-11-23' });
  });

  it('counts a re-scored record as updated and nothing else, and leaves checkpoints alone', async () => {
    const s = await sim({ campaigns: 2, records: 200 });
    const st = store();
    await pullOnce(s, st);
    const cursors = st.state.all().map((r) => r.cursor);
    const { window } = windowAround(s, 190);
    const inWindow = recordsIn(s, window, 200);
    expect(inWindow.length).toBeGreaterThan(3);
    const session = s.data.campaigns[0]!;
    const changed = inWindow[1]!;
    s.changes.rescore(session, changed, Date.parse('2026-11-23T08:00:00Z'));
    // Outside the window: not seen by this lookback (the service filters on created_at).
    s.changes.rescore(session, 3, Date.parse('2026-11-23T08:00:00Z'));

    const result = await pullOnce(s, st, { lookback: window });
    expect(result.records).toBe(0);
    expect(result.streams.map((x) => x.lookback && [x.lookback.records, x.lookback.inserted, x.lookback.updated])).toEqual([
      [inWindow.length, 0, 1],
      [inWindow.length, 0, 0],
    ]);
    expect(result.lookback).toMatchObject({ window, records: 2 * inWindow.length, inserted: 0, updated: 1 });
    expect(result.lookback?.requests).toBe(2 * Math.ceil((inWindow.length + 1) / 20));
    expect(st.state.all().map((r) => r.cursor)).toEqual(cursors);
    const id = s.data.sessionResult(session, changed).id;
    const row = st.db.prepare('SELECT score, updated_at FROM session_results WHERE id = ?').get(id) as {
      score: number;
      updated_at: string;
    };
    expect(row.updated_at).toBe('2026-11-23T08:00:00.000Z');
    expect(row.score).not.toBe(s.data.sessionResult(session, changed).score);

    // Read once more: nothing changed since, nothing counted.
    const again = await pullOnce(s, st, { lookback: window });
    expect(again.lookback).toMatchObject({ records: 2 * inWindow.length, inserted: 0, updated: 0 });
  });

  it('picks up a late arrival below the checkpoint as new', async () => {
    const s = await sim({ campaigns: 2, records: 200 });
    const st = store();
    await pullOnce(s, st);
    const { window, today } = windowAround(s, 190);
    const role = s.data.campaigns[1]!;
    const orderIndex = s.changes.arriveLate(role, 40, today);
    const cursor = st.state.all().find((r) => r.campaign_id === role.id)?.cursor;
    expect(orderIndex < (cursor ?? 0n)).toBe(true);

    // The incremental read alone never sees it.
    expect((await pullOnce(s, st)).records).toBe(0);
    const result = await pullOnce(s, st, { lookback: window });
    const stream = result.streams.find((x) => x.id.campaignId === role.id);
    expect(stream?.lookback).toMatchObject({ inserted: 1, updated: 0 });
    expect(stream?.cursor).toBe(cursor);
    expect(st.db.prepare('SELECT count(*) FROM role_results WHERE order_index = ?').pluck().get(orderIndex)).toBe(1);
    expect(st.db.prepare('SELECT count(*) FROM role_results WHERE campaign_id = ?').pluck().get(role.id)).toBe(201);
    // Its score details came with it.
    expect(
      st.db
        .prepare('SELECT count(*) FROM score_details d JOIN role_results r ON r.id = d.role_result_id WHERE r.order_index = ?')
        .pluck()
        .get(orderIndex),
    ).toBeGreaterThan(0);
  });

  it('NDJSON: appends only the changed and the new record, once', async () => {
    const s = await sim({ campaigns: 2, records: 200 });
    const st = store('ndjson');
    await pullOnce(s, st);
    const file = join(st.dir, 'out', 'session_results.ndjson');
    const before = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(before).toHaveLength(200);
    const { window, today } = windowAround(s, 190);
    const session = s.data.campaigns[0]!;
    const changed = recordsIn(s, window, 200)[0]!;
    s.changes.rescore(session, changed, today);
    const late = s.changes.arriveLate(session, 12, today);

    const result = await pullOnce(s, st, { lookback: window });
    expect(result.streams[0]?.lookback).toMatchObject({ inserted: 1, updated: 1 });
    const after = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(after.slice(0, 200)).toEqual(before);
    expect(after).toHaveLength(202);
    const appended = after.slice(200).map((l) => parseJson(l) as Record<string, unknown>);
    expect(appended.map((r) => r.id)).toContain(s.data.sessionResult(session, changed).id);
    expect(appended.map((r) => BigInt(String(r.order_index)))).toContain(late);
    // A second lookback appends nothing: the index knows both lines.
    const again = await pullOnce(s, st, { lookback: window });
    expect(again.lookback).toMatchObject({ inserted: 0, updated: 0 });
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(202);
  });
});

describe('--lookback from the command line', () => {
  it('pull reports the lookback in --json; watch runs it at most every --lookback-every; bad combinations are refused', async () => {
    // Growth records are created now: inside a 1-day window. The service's clock is one of the
    // test's own: 300 ms of growth (10 a second, 3 results created today) before the pull, set
    // forward instead of waited for.
    const service = fakeClock(Date.now());
    const s = await sim({ campaigns: 2, records: 10, growth: { count: 600, windowMs: 60_000 }, now: () => service.now() });
    service.t += 300;
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const base = ['--base-url', s.url, '--db', join(dir, 'm.db'), '--json'];
    const first = await runCli(['pull', ...base, '--lookback', '1d'], { env });
    expect(first.code).toBe(0);
    const doc = JSON.parse(first.stdout);
    // Results keep arriving: those created after the incremental read are new to the lookback.
    expect(doc.lookback).toMatchObject({ until: new Date().toISOString().slice(0, 10), updated: 0 });
    expect(doc.lookback.records).toBeGreaterThan(0);
    expect(doc.lookback.requests).toBeGreaterThan(0);
    expect(doc.streams[0].lookback).toMatchObject({ updated: 0 });

    // Passes an hour apart on the run's clock, which waits for nothing: the lookback at the first,
    // not at the second (an hour is within --lookback-every), again at the third (two hours are not).
    const watched = await runCli(
      ['watch', ...base, '--lookback', '1d', '--lookback-every', '90m', '--interval', '1h', '--max-cycles', '3'],
      { env, clock: fakeClock(Date.now()) },
    );
    expect(watched.code).toBe(0);
    const passes = watched.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(passes.map((p) => p.lookback !== null)).toEqual([true, false, true]);

    for (const [args, message] of [
      [['pull', '--lookback', '1d', '--full'], /--lookback .* does not go with --full/],
      [['pull', '--lookback', '7x'], /--lookback: "7x" is not a duration/],
      [['pull', '--lookback', '100000d'], /--lookback: "100000d" reaches back more than 3650d/],
      [['watch', '--full'], /watch --full .* pull --full/],
      [['watch', '--since', '2026-01-01'], /watch --since\/--until .* pull --since/],
    ] as const) {
      const r = await runCli([...args, '--base-url', s.url, '--db', join(dir, 'm.db')], { env });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});
