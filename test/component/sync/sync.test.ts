import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { resolvePassOptions } from '../../../src/app/sync-job.js';
import { exitCodeForPass } from '../../../src/errors.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { RunLock } from '../../../src/store/sqlite/run-lock.js';
import { SCHEMA_VERSION } from '../../../src/store/sqlite/schema.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { type PassOptions, runPass } from '../../../src/sync/pass.js';
import { clientConfig, sim, tempDir } from '../../helpers/index.js';
import { passDefaults } from '../../helpers/mock.js';

function clientFor(s: RunningSimulator) {
  return new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
}

function store(dbPath = join(tempDir(), 'm.db')) {
  const db = openDatabase(dbPath);
  const state = new SqliteCheckpoints(db);
  return { dbPath, db, state, sink: new SqliteSink(db, state) };
}

async function pullOnce(s: RunningSimulator, st: ReturnType<typeof store>, opts: Partial<PassOptions> = {}) {
  const client = clientFor(s);
  try {
    return await runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, ...opts });
  } finally {
    await client.close();
  }
}

const count = (st: ReturnType<typeof store>, sql: string): number => st.db.prepare(sql).pluck().get() as number;

// What a pull stores (every record, score detail and eval result once, its columns, int64 exact)
// is the contract's, on every kind of mirror: test/contract/pull.test.ts.
describe('sync against the simulator', () => {
  it('a no-op incremental pull makes exactly one request per stream (plus the campaign list)', async () => {
    const s = await sim({ campaigns: 4, records: 120 });
    const st = store();
    await pullOnce(s, st);
    const before = s.stats.requests;
    const again = await pullOnce(s, st);
    expect(s.stats.requests - before).toBe(1 + 4);
    expect(again.records).toBe(0);
    expect(again.streams.every((x) => x.requests === 1)).toBe(true);
  });

  it('picks up growth on the next pull, and only the new records', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 40, growth: { count: 7, windowMs: 60_000 }, now: () => now });
    const st = store();
    await pullOnce(s, st);
    now += 60_000;
    const next = await pullOnce(s, st);
    expect(next.streams.map((x) => x.inserted)).toEqual([7, 7]);
    expect(next.streams.map((x) => x.updated)).toEqual([0, 0]);
    expect(count(st, 'SELECT count(*) FROM session_results')).toBe(47);
  });

  it('a backfill window upserts what it reads and leaves checkpoints untouched', async () => {
    const s = await sim({ campaigns: 2, records: 300 });
    const st = store();
    const day = new Date(s.data.createdAt(150)).toISOString().slice(0, 10);
    const result = await pullOnce(s, st, { since: day, until: day });
    const inWindow = Array.from({ length: 300 }, (_, i) => new Date(s.data.createdAt(i)).toISOString().slice(0, 10)).filter(
      (d) => d === day,
    ).length;
    expect(inWindow).toBeGreaterThan(0);
    expect(result.streams.map((x) => x.records)).toEqual([inWindow, inWindow]);
    expect(st.state.all().every((r) => r.cursor === null)).toBe(true);
    // After a normal pull, a backfill leaves the checkpoints where they are and updates in place.
    await pullOnce(s, st);
    const cursors = st.state.all().map((r) => r.cursor);
    const again = await pullOnce(s, st, { since: day });
    // Read again unchanged: neither new nor updated.
    expect(again.streams.every((x) => x.records > 0 && x.inserted === 0 && x.updated === 0)).toBe(true);
    expect(st.state.all().map((r) => r.cursor)).toEqual(cursors);
  });

  it('--full re-reads everything, replaces children without duplicates, then sets the checkpoint', async () => {
    const s = await sim({ campaigns: 2, records: 60 });
    const st = store();
    await pullOnce(s, st);
    const evals = count(st, 'SELECT count(*) FROM eval_results');
    const details = count(st, 'SELECT count(*) FROM score_details');
    st.db.prepare('UPDATE sync_state SET cursor = 5').run();
    // Unchanged records are read again but not rewritten.
    const same = await pullOnce(s, st, { full: true });
    expect(same.streams.map((x) => [x.records, x.inserted, x.updated])).toEqual([
      [60, 0, 0],
      [60, 0, 0],
    ]);
    // Records whose stored copy differs are rewritten with their children, none duplicated.
    st.db.exec("UPDATE session_results SET raw = '{}'; UPDATE role_results SET raw = '{}' WHERE rowid % 2 = 0");
    const changed = count(st, "SELECT count(*) FROM role_results WHERE raw = '{}'");
    st.db.prepare('UPDATE sync_state SET cursor = 5').run();
    const full = await pullOnce(s, st, { full: true });
    expect(full.streams.map((x) => [x.inserted, x.updated])).toEqual([
      [0, 60],
      [0, changed],
    ]);
    expect(count(st, "SELECT count(*) FROM session_results WHERE raw = '{}'")).toBe(0);
    expect(count(st, 'SELECT count(*) FROM eval_results')).toBe(evals);
    expect(count(st, 'SELECT count(*) FROM score_details')).toBe(details);
    expect(st.state.all().every((r) => (r.cursor ?? 0n) > 5n)).toBe(true);
  });

  it('follows the sample-style quirks: string order_index, last_record_id, no cursor field', async () => {
    for (const quirks of [{ stringOrderIndex: true }, { lastRecordId: true }, { noCursorField: true }]) {
      const s = await sim({ campaigns: 2, records: 25, quirks });
      const st = store();
      const result = await pullOnce(s, st, { pageSize: 10 });
      expect(result.streams.map((x) => [x.status, x.records, x.pages])).toEqual([
        ['ok', 25, 3],
        ['ok', 25, 3],
      ]);
    }
  });

  it('skips campaigns of an unknown type with a warning, and selects by name, id and type', async () => {
    const s = await sim({ campaigns: 4, records: 5, unknownTypeCampaigns: 1 });
    const st = store();
    const warnings: string[] = [];
    const client = clientFor(s);
    const result = await runPass({ client, sink: st.sink, state: st.state, events: { warning: (w) => warnings.push(w) } }, passDefaults);
    expect(result.skipped.map((x) => x.type)).toEqual(['LIVE_INTERVIEW']);
    expect(warnings[0]).toMatch(/type LIVE_INTERVIEW.*skipped/);
    expect(exitCodeForPass(result)).toBe(0);
    const [first, second] = s.data.campaigns;
    const picked = await runPass(
      { client, sink: st.sink, state: st.state },
      { ...passDefaults, campaigns: [first?.name as string, second?.id as string] },
    );
    expect(picked.streams.map((x) => x.id.campaignId)).toEqual([first?.id, second?.id]);
    const roles = await runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, type: 'role' });
    expect(roles.streams.every((x) => x.id.endpoint === 'role')).toBe(true);
    await expect(runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, campaigns: ['nope'] })).rejects.toThrow(
      /no accessible campaign .*"nope"/,
    );
    await client.close();
  });

  it('OVERALL and DETAILED are separate streams; OVERALL leaves stored score details alone', async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const st = store();
    await pullOnce(s, st, { type: 'role' });
    const details = count(st, 'SELECT count(*) FROM score_details');
    const overall = await pullOnce(s, st, { type: 'role', reportType: 'OVERALL' });
    expect(overall.streams[0]?.id.key).toMatch(/\/role\/OVERALL$/);
    expect(overall.streams[0]?.updated).toBe(10);
    expect(count(st, 'SELECT count(*) FROM score_details')).toBe(details);
    expect(count(st, "SELECT count(*) FROM role_results WHERE report_type = 'OVERALL'")).toBe(10);
    expect(st.state.all().length).toBe(2);
  });

  it('shares one budget across concurrent streams', async () => {
    const s = await sim({ campaigns: 6, records: 50 });
    const st = store();
    const budget = new RequestBudget({ count: 10, windowMs: 500 });
    const client = new ApiClient(clientConfig(s, { rate: budget.rate, timeoutMs: 5000, maxRetries: 0 }), { budget });
    const t0 = Date.now();
    const result = await runPass({ client, sink: st.sink, state: st.state }, { ...passDefaults, pageSize: 10, concurrency: 6 });
    await client.close();
    // 1 + 6 × 5 = 31 requests at 10 per 500 ms: at least three full windows.
    expect(result.requests).toBe(31);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
  });
});

describe('pass options', () => {
  it('validates flags before anything happens', () => {
    expect(resolvePassOptions({})).toMatchObject({ pageSize: 100, concurrency: 4, reportType: 'DETAILED', full: false });
    expect(() => resolvePassOptions({ pageSize: '101' })).toThrow(/--page-size: "101" must be a whole number from 1 to 100/);
    expect(() => resolvePassOptions({ pageSize: '0' })).toThrow(/--page-size/);
    expect(() => resolvePassOptions({ since: '2026-13-01' })).toThrow(/--since/);
    expect(() => resolvePassOptions({ since: '2026-02-02', until: '2026-02-01' })).toThrow(/after --until/);
    expect(() => resolvePassOptions({ full: true, since: '2026-02-02' })).toThrow(/--full/);
    expect(() => resolvePassOptions({ reportType: 'FULL' })).toThrow(/--report-type/);
  });
});

describe('files', () => {
  let saved: number | undefined;
  afterEach(() => {
    if (saved !== undefined) process.umask(saved);
  });

  it('database, -wal, -shm and lock files are 0600 whatever the umask', async () => {
    for (const umask of [0o022, 0o000]) {
      saved = process.umask(umask);
      const dir = tempDir();
      const dbPath = join(dir, 'private.db');
      const lock = RunLock.acquire(dbPath);
      const st = store(dbPath);
      const s = await sim({ campaigns: 1, records: 5 });
      await pullOnce(s, st);
      for (const f of ['private.db', 'private.db-wal', 'private.db-shm', 'private.db.lock', 'private.db.lock.info']) {
        expect((statSync(join(dir, f)).mode & 0o777).toString(8), `${f} under umask ${umask.toString(8)}`).toBe('600');
      }
      st.db.close();
      lock.release();
    }
  });

  it('refuses a database that belongs to someone else', async () => {
    const dir = tempDir();
    const { Database } = await import('../../../src/store/sqlite/driver.js');
    const other = new Database(join(dir, 'other.db'));
    other.exec('CREATE TABLE invoices (id INTEGER)');
    other.close();
    expect(() => openDatabase(join(dir, 'other.db'))).toThrow(/not campaign-sync's/);
  });
});

/** Undo version 5 (views and indexes) and the versions after it (positions, id conflicts, change numbers) on a fresh database, to stand for one an older release wrote. */
function dropV5(db: ReturnType<typeof openDatabase>) {
  dropDrift(db);
  dropV8(db);
  const objs = db
    .prepare(
      "SELECT type, name FROM sqlite_master WHERE type = 'view' OR (type = 'index' AND sql IS NOT NULL AND name NOT IN ('session_results_campaign', 'role_results_campaign', 'score_details_role', 'eval_results_parent'))",
    )
    .all() as Array<{ type: string; name: string }>;
  for (const o of objs) db.exec(`DROP ${o.type.toUpperCase()} ${o.name}`);
  // Version 6's columns (its views went above).
  db.exec('ALTER TABLE score_details DROP COLUMN position; ALTER TABLE eval_results DROP COLUMN position');
  // Version 7's table.
  db.exec('DROP TABLE id_conflicts');
}

/** Undo the drift step (store/sqlite/drift-ledger.ts). */
function dropDrift(db: ReturnType<typeof openDatabase>) {
  db.exec('DROP TABLE drift_seen');
}

/** Undo version 9 (versions of results) and the quarantine, then version 8 (store/sqlite/changes.ts). */
function dropV8(db: ReturnType<typeof openDatabase>) {
  db.exec('DROP TABLE quarantine');
  db.exec(`DROP VIEW result_versions; DROP TRIGGER session_results_version; DROP TRIGGER session_results_pruned;
    DROP TRIGGER role_results_version; DROP TRIGGER role_results_pruned; DROP TABLE past_versions; DROP TABLE change_times;`);
  db.exec(`ALTER TABLE session_results DROP COLUMN change_seq; ALTER TABLE role_results DROP COLUMN change_seq;
    DROP TABLE change_counter; DROP TABLE tombstones; DROP TABLE export_consumers;`);
}

describe('schema migrations', () => {
  it('upgrades a version-1 database in place', async () => {
    const dbPath = join(tempDir(), 'old.db');
    const fresh = openDatabase(dbPath);
    expect(fresh.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    // Turn it back into what release 1 wrote.
    dropV5(fresh);
    fresh.exec('DROP TABLE meta');
    fresh.exec('DROP TABLE ndjson_campaigns');
    fresh.exec('DROP TABLE ndjson_records');
    fresh.exec('ALTER TABLE ndjson_files DROP COLUMN indexed');
    fresh.pragma('user_version = 1');
    fresh.prepare("INSERT INTO sync_state (stream, campaign_id, endpoint, cursor) VALUES ('c/session', 'c', 'session', 42)").run();
    fresh.close();
    const upgraded = openDatabase(dbPath);
    expect(upgraded.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(upgraded.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").pluck().get()).toBe(1);
    expect(upgraded.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'ndjson_campaigns'").pluck().get()).toBe(1);
    expect(upgraded.prepare('SELECT cursor FROM sync_state').pluck().get()).toBe(42);
    expect(upgraded.prepare("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name").pluck().all()).toEqual([
      'latest_results',
      'result_versions',
      'results',
      'role_results_full',
      'score_detail_feedback',
      'score_details_full',
      'skill_scores',
    ]);
    upgraded.close();
    const future = openDatabase(dbPath);
    future.pragma('user_version = 99');
    future.close();
    expect(() => openDatabase(dbPath)).toThrow(/newer campaign-sync \(schema 99/);
  });

  it('version 3 seeds what a v2 NDJSON database wrote to campaigns.ndjson from its campaigns table', () => {
    const dbPath = join(tempDir(), 'v2.db');
    const fresh = openDatabase(dbPath);
    dropV5(fresh);
    fresh.exec('DROP TABLE ndjson_campaigns');
    fresh.exec('DROP TABLE ndjson_records');
    fresh.exec('ALTER TABLE ndjson_files DROP COLUMN indexed');
    fresh.pragma('user_version = 2');
    fresh.prepare("INSERT INTO campaigns (id, name, raw) VALUES ('c1', 'one', '{\"id\":\"c1\"}'), ('c2', 'two', '{\"id\":\"c2\"}')").run();
    fresh
      .prepare("INSERT INTO ndjson_files (path, committed_bytes) VALUES ('/o/campaigns.ndjson', 24), ('/o/role_results.ndjson', 9)")
      .run();
    fresh.close();
    const upgraded = openDatabase(dbPath);
    expect(upgraded.prepare('SELECT path, campaign_id, raw FROM ndjson_campaigns ORDER BY campaign_id').all()).toEqual([
      { path: '/o/campaigns.ndjson', campaign_id: 'c1', raw: '{"id":"c1"}' },
      { path: '/o/campaigns.ndjson', campaign_id: 'c2', raw: '{"id":"c2"}' },
    ]);
    upgraded.close();
  });
});
