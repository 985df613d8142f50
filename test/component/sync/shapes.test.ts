/**
 * The shapes the service's documentation shows beyond the interface text, each served by
 * the simulator over real HTTP and pulled into SQLite: bare-array pages, flat session records, the
 * other feedback shape, order_index not following created_at, and a paged or bare campaign list.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { lookbackWindow } from '../../../src/app/sync-job.js';
import { toJson } from '../../../src/core/json.js';
import { exitCodeForPass, UsageError } from '../../../src/errors.js';
import { DOCS_QUIRKS, parseQuirks } from '../../../src/simulator/quirks.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { type PassOptions, runPass } from '../../../src/sync/pass.js';
import { reconcile } from '../../../src/sync/reconcile.js';
import { clientConfig, get, servedObjects, sim, tempDir } from '../../helpers/index.js';
import { passDefaults } from '../../helpers/mock.js';

type Row = Record<string, unknown>;

function store() {
  const db = openDatabase(join(tempDir(), 'm.db'));
  const state = new SqliteCheckpoints(db);
  return { db, state, sink: new SqliteSink(db, state) };
}
type Store = ReturnType<typeof store>;

async function pull(s: RunningSimulator, st: Store = store(), opts: Partial<PassOptions> = {}) {
  const client = new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
  try {
    const result = await runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, ...opts });
    return { st, result };
  } finally {
    await client.close();
  }
}

const rows = (st: Store, table: string): Row[] =>
  st.db.prepare(`SELECT * FROM ${table} ORDER BY order_index, id`).safeIntegers(true).all() as Row[];
const count = (st: Store, table: string) => st.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;

describe('bare-array results pages', () => {
  it('pages while full: an exactly full last page costs one empty request, then a clean end (session and role)', async () => {
    const s = await sim({ campaigns: 2, records: 30, quirkNames: 'bare-array' });
    const { st, result } = await pull(s, store(), { pageSize: 10 });
    expect(exitCodeForPass(result)).toBe(0);
    expect(result.streams.map((x) => [x.id.endpoint, x.status, x.records, x.pages, x.requests])).toEqual([
      ['session', 'ok', 30, 4, 4],
      ['role', 'ok', 30, 4, 4],
    ]);
    expect(s.stats.requests).toBe(1 + 8);
    expect(count(st, 'session_results')).toBe(30);
    expect(count(st, 'role_results')).toBe(30);
    for (const row of st.state.all()) {
      const c = s.data.byId.get(row.campaign_id) as NonNullable<ReturnType<typeof s.data.byId.get>>;
      expect(row.cursor).toBe(s.data.orderIndex(c, 29));
    }
    // The next pull from that checkpoint: one empty page per stream, nothing new, no error.
    const again = await pull(s, st, { pageSize: 10 });
    expect(again.result.streams.map((x) => [x.status, x.records, x.requests])).toEqual([
      ['ok', 0, 1],
      ['ok', 0, 1],
    ]);
  });

  it('a short last page ends the stream with no extra request', async () => {
    const s = await sim({ campaigns: 2, records: 25, quirkNames: 'bare-array' });
    const { result } = await pull(s, store(), { pageSize: 10 });
    expect(result.streams.map((x) => [x.status, x.records, x.pages, x.requests])).toEqual([
      ['ok', 25, 3, 3],
      ['ok', 25, 3, 3],
    ]);
  });

  it('keeps a cursor past 2^53 exact: sent, stored and checkpointed', async () => {
    const s = await sim({ campaigns: 2, records: 21, orderIndexStart: 2n ** 62n + 1n, quirkNames: 'bare-array' });
    const { st, result } = await pull(s, store(), { pageSize: 7 });
    expect(exitCodeForPass(result)).toBe(0);
    for (const c of s.data.campaigns) {
      const table = c.type === 'SESSION_COMPLETION' ? 'session_results' : 'role_results';
      const stored = st.db
        .prepare(`SELECT order_index FROM ${table} WHERE campaign_id = ? ORDER BY order_index`)
        .pluck()
        .safeIntegers(true)
        .all(c.id);
      expect(stored).toEqual(Array.from({ length: 21 }, (_, i) => s.data.orderIndex(c, i)));
    }
    expect(result.streams.map((x) => [x.requests, x.cursor])).toEqual(s.data.campaigns.map((c) => [4, s.data.orderIndex(c, 20)]));
    expect((result.streams[0]?.cursor ?? 0n) > 2n ** 53n).toBe(true);
  });
});

describe('flat session records and the other feedback shape', () => {
  it('flat records fill the same columns as nested ones; raw keeps what was sent', async () => {
    const s = await sim({ campaigns: 2, records: 40, quirkNames: 'flat-session' });
    const { st, result } = await pull(s, store(), { pageSize: 15 });
    expect(exitCodeForPass(result)).toBe(0);
    const served = servedObjects(s, 40);
    const stored = rows(st, 'session_results');
    expect(stored.length).toBe(40);
    for (const row of stored) {
      const r = served.get(row.id as string) as Row;
      expect(r).not.toHaveProperty('campaign');
      expect({
        campaign_id: row.campaign_id,
        user_id: row.user_id,
        user_email: row.user_email,
        session_id: row.session_id,
        scenario_name: row.scenario_name,
        scenario_type: row.scenario_type,
        score: row.score,
        raw: row.raw,
      }).toEqual({
        campaign_id: r.campaign_id,
        user_id: r.user_id,
        user_email: r.email,
        session_id: r.session_id,
        scenario_name: r.scenario_name,
        scenario_type: (r.scenario_type as { key: string }).key,
        score: r.scenario_score,
        raw: toJson(r),
      });
      expect(row.scenario_id).toBeNull();
    }
    const evals = [...served.values()].filter((r) => 'campaign_id' in r).reduce((n, r) => n + (r.eval_results as unknown[]).length, 0);
    expect(st.db.prepare("SELECT count(*) FROM eval_results WHERE parent_type = 'session_result'").pluck().get()).toBe(evals);
  });

  it('feedback as key_strengths/areas_for_growths is stored as sent, in session results and score details', async () => {
    const s = await sim({ campaigns: 2, records: 60, quirkNames: 'docs-feedback' });
    const { st } = await pull(s, store());
    const served = servedObjects(s, 60);
    const sessions = rows(st, 'session_results');
    let shaped = 0;
    for (const row of sessions) {
      const feedback = served.get(row.id as string)?.feedback;
      expect(row.feedback).toBe(feedback === null ? null : toJson(feedback));
      if (row.feedback !== null) {
        expect(Object.keys(JSON.parse(row.feedback as string))).toEqual(['key_strengths', 'areas_for_growths']);
        shaped++;
      }
    }
    expect(shaped).toBeGreaterThan(10);
    const detailFeedback = st.db.prepare('SELECT feedback FROM score_details WHERE feedback IS NOT NULL').pluck().all() as string[];
    expect(detailFeedback.length).toBeGreaterThan(0);
    for (const f of detailFeedback)
      expect(JSON.parse(f)).toMatchObject({ key_strengths: expect.any(Array), areas_for_growths: expect.any(Array) });
    const one = JSON.parse(detailFeedback[0] as string);
    expect(one.key_strengths[0]).toEqual({ title: expect.any(String), strength: expect.any(String) });
    expect(one.areas_for_growths[0]).toEqual({ title: expect.any(String), improvement_area: expect.any(String) });
  });
});

describe('order_index does not follow created_at', () => {
  it('the data shows it, and the sync stores every record with the right checkpoint', async () => {
    const s = await sim({ campaigns: 2, records: 120, quirkNames: 'unordered-times' });
    const c = s.data.campaigns[0] as NonNullable<(typeof s.data.campaigns)[0]>;
    const served = Array.from({ length: 120 }, (_, i) => s.data.sessionResult(c, i));
    const inversions = served.filter((r, i) => i > 0 && (r.created_at as string) < (served[i - 1]?.created_at as string)).length;
    expect(inversions).toBeGreaterThan(5);
    expect(served.filter((r) => (r.updated_at as string) < (r.created_at as string)).length).toBeGreaterThan(5);
    const { st, result } = await pull(s, store(), { pageSize: 25 });
    expect(exitCodeForPass(result)).toBe(0);
    expect(result.streams.map((x) => x.records)).toEqual([120, 120]);
    for (const row of st.state.all()) {
      const x = s.data.byId.get(row.campaign_id) as NonNullable<ReturnType<typeof s.data.byId.get>>;
      expect(row.cursor).toBe(s.data.orderIndex(x, 119));
    }
    const stored = st.db.prepare('SELECT created_at, updated_at FROM session_results WHERE campaign_id = ? ORDER BY order_index').all(c.id);
    expect(stored).toEqual(served.map((r) => ({ created_at: r.created_at, updated_at: r.updated_at })));
  });

  it('a backfill window gets exactly the records created in it, wherever their order_index lies', async () => {
    const s = await sim({ campaigns: 2, records: 200, quirkNames: 'unordered-times' });
    const day = new Date(s.data.createdAt(100)).toISOString().slice(0, 10);
    const { st, result } = await pull(s, store(), { since: day, until: day, pageSize: 3 });
    const expected = Array.from({ length: 200 }, (_, i) => i).filter((i) => new Date(s.data.createdAt(i)).toISOString().startsWith(day));
    expect(expected.length).toBeGreaterThan(2);
    expect(result.streams.map((x) => [x.status, x.records])).toEqual([
      ['ok', expected.length],
      ['ok', expected.length],
    ]);
    const c = s.data.campaigns[0] as NonNullable<(typeof s.data.campaigns)[0]>;
    expect(
      st.db
        .prepare('SELECT order_index FROM session_results WHERE campaign_id = ? ORDER BY order_index')
        .pluck()
        .safeIntegers(true)
        .all(c.id),
    ).toEqual(expected.map((i) => s.data.orderIndex(c, i)));
  });
});

describe('the campaign list', () => {
  it('a paged list with more campaigns than one page is followed: every campaign synced', async () => {
    const s = await sim({ campaigns: 10, records: 5, quirkNames: 'campaigns-paged', campaignPageSize: 4 });
    const { st, result } = await pull(s);
    expect(exitCodeForPass(result)).toBe(0);
    expect(result.streams.map((x) => x.id.campaignId)).toEqual(s.data.campaigns.map((c) => c.id));
    expect(count(st, 'campaigns')).toBe(10);
    const streamRequests = result.streams.reduce((n, x) => n + x.requests, 0);
    expect(s.stats.requests - streamRequests).toBe(3);
  });

  it('a bare-array list is accepted', async () => {
    const s = await sim({ campaigns: 5, records: 5, quirkNames: 'campaigns-bare-array' });
    const { st, result } = await pull(s);
    expect(result.streams.map((x) => [x.status, x.records])).toEqual(Array.from({ length: 5 }, () => ['ok', 5]));
    expect(count(st, 'campaigns')).toBe(5);
  });
});

describe('--quirks docs: the same pull as the interface-text simulator', () => {
  /** Each table's rows, projected on the columns both modes fill alike. */
  function snapshot(st: Store, drop: string[]) {
    const out: Record<string, Row[]> = {};
    for (const [table, order] of [
      ['campaigns', 'id'],
      ['session_results', 'id'],
      ['role_results', 'id'],
      ['score_details', 'id'],
      ['eval_results', 'parent_id, evaluation_id'],
      ['sync_state', 'stream'],
    ] as const) {
      out[table] = (st.db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).safeIntegers(true).all() as Row[]).map((r) =>
        Object.fromEntries(Object.entries(r).filter(([k]) => !drop.includes(k) && !drop.includes(`${table}.${k}`))),
      );
    }
    return out;
  }
  // Changed by design: the shape as sent (raw), the feedback shape, the scenario id the flat shape
  // lacks, and when a row was written.
  const shapeColumns = ['raw', 'feedback', 'session_results.scenario_id', 'seen_at', 'last_success_at', 'campaigns.raw'];
  const timeColumns = ['created_at', 'updated_at', 'evaluated_at'];

  it('column for column on the shared columns', async () => {
    const opts = { seed: 7, campaigns: 6, records: 35 };
    const plain = await pull(await sim(opts), store(), { pageSize: 10 });
    const docs = await pull(await sim({ ...opts, quirkNames: 'docs' }), store(), { pageSize: 10 });
    const times = await pull(await sim({ ...opts, quirkNames: 'unordered-times' }), store(), { pageSize: 10 });
    for (const r of [plain, docs, times]) expect(exitCodeForPass(r.result)).toBe(0);
    expect(count(docs.st, 'session_results')).toBe(105);
    expect(snapshot(docs.st, shapeColumns)).toEqual(snapshot(times.st, shapeColumns));
    expect(snapshot(docs.st, [...shapeColumns, ...timeColumns])).toEqual(snapshot(plain.st, [...shapeColumns, ...timeColumns]));
    // The shapes did differ on the wire.
    const raw = docs.st.db.prepare('SELECT raw FROM session_results LIMIT 1').pluck().get() as string;
    expect(JSON.parse(raw)).toHaveProperty('scenario_score');
  });
});

describe('the simulator under --quirks', () => {
  it('docs turns on every documented shape; names are checked', () => {
    expect(parseQuirks('docs').quirks).toEqual({
      bareArray: true,
      flatSession: true,
      docsFeedback: true,
      campaignsPaged: true,
      unorderedTimes: true,
    });
    expect(DOCS_QUIRKS.length).toBe(5);
    expect(parseQuirks(' last-record-id , unknown-type')).toEqual({ quirks: { lastRecordId: true }, unknownTypeCampaigns: 1 });
    expect(() => parseQuirks('docs,flat')).toThrow(UsageError);
    expect(() => parseQuirks('docs,flat')).toThrow('--quirks: unknown quirk "flat"');
  });

  it('serves the shapes over HTTP: a bare array of flat records, a paged list that refuses an unknown cursor', async () => {
    const s = await sim({ campaigns: 6, records: 12, quirkNames: 'docs' });
    const list = await get(s, '/v1/campaigns');
    expect(list.json).toMatchObject({ has_more: true, last_record_id: s.data.campaigns[3]?.id });
    expect(list.json.data.length).toBe(4);
    const rest = await get(s, `/v1/campaigns?starting_after=${s.data.campaigns[3]?.id}`);
    expect(rest.json).toEqual({ data: expect.any(Array), has_more: false, last_record_id: s.data.campaigns[5]?.id });
    expect(rest.json.data.map((c: Row) => c.id)).toEqual(s.data.campaigns.slice(4).map((c) => c.id));
    expect((await get(s, '/v1/campaigns?starting_after=nope')).status).toBe(400);
    const page = await get(s, `/v1/campaigns/session/results?campaign_id=${s.data.campaigns[0]?.id}&sort=asc&limit=5`);
    expect(Array.isArray(page.json)).toBe(true);
    expect(page.json.length).toBe(5);
    expect(Object.keys(page.json[0])).toEqual(expect.arrayContaining(['campaign_id', 'user_id', 'email', 'session_id', 'scenario_score']));
  });
});

describe('the documented shapes with lookback and reconcile', () => {
  it('under --quirks docs, a lookback counts a re-scored flat record as updated and nothing else; reconcile finds a deleted one', async () => {
    const s = await sim({ campaigns: 2, records: 200, quirkNames: 'docs' });
    const st = store();
    await pull(s, st, { pageSize: 20 });
    const today = s.data.createdAt(190);
    const window = lookbackWindow(3 * 86_400_000, today);
    const day = (i: number) => new Date(s.data.createdAt(i)).toISOString().slice(0, 10);
    const inWindow = Array.from({ length: 200 }, (_, i) => i).filter(
      (i) => day(i) >= (window.since ?? '') && day(i) <= (window.until ?? ''),
    );
    expect(inWindow.length).toBeGreaterThan(3);
    const session = s.data.campaigns[0] as NonNullable<(typeof s.data.campaigns)[0]>;
    const changed = inWindow[1] as number;
    s.changes.rescore(session, changed, Date.parse('2026-11-23T08:00:00Z'));
    const { result } = await pull(s, st, { pageSize: 20, lookback: window });
    expect(result.lookback).toMatchObject({ records: 2 * inWindow.length, inserted: 0, updated: 1 });
    const id = s.data.sessionResult(session, changed).id;
    const row = st.db.prepare('SELECT score, updated_at, raw FROM session_results WHERE id = ?').get(id) as Row;
    expect(row.updated_at).toBe('2026-11-23T08:00:00.000Z');
    expect(row.score).toBe(JSON.parse(row.raw as string).scenario_score);
    expect(row.score).not.toBe(s.data.sessionResult(session, changed).score);

    s.changes.remove(session, 7);
    const client = new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
    try {
      const rec = await reconcile(
        { client, sink: st.sink, state: st.state },
        { campaigns: [], reportType: 'DETAILED', pageSize: 20, prune: false, held: [] },
      );
      expect(rec.streams.map((x) => [x.status, x.served, x.gone.length, x.changed])).toEqual([
        ['ok', 199, 1, 0],
        ['ok', 200, 0, 0],
      ]);
    } finally {
      await client.close();
    }
  });
});
