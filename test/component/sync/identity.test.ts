/**
 * A record's campaign is part of its identity: the same result id served by two campaigns (a fault of
 * the service) stays with the campaign whose stream stored it first, the other copy is reported once
 * and counted in `status`, and nothing flips on a re-read (full, lookback, reconcile): the mirror
 * contract's case for every kind (test/contract/), with its counts per stream here. A campaign
 * whose type changes retires its old stream: shown as such in `status`, left out of `--check`, its
 * records removed by `reconcile --prune`, the stream by `reset --campaign`. SQLite and NDJSON; the
 * PostgreSQL mirror in pg-identity.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import type { PageSink } from '../../../src/store/port.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { type Db, openDatabase } from '../../../src/store/sqlite/db.js';
import { NdjsonSink } from '../../../src/store/sqlite/ndjson/sink.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { type PassOptions, runPass } from '../../../src/sync/pass.js';
import { reconcile } from '../../../src/sync/reconcile.js';
import { clientConfig, sim, tempDir } from '../../helpers/index.js';
import { passDefaults } from '../../helpers/mock.js';
import { runCli } from '../../helpers/run-cli.js';

type Kind = 'sqlite' | 'ndjson';

const open: Array<{ sink: PageSink; db: Db }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.sink.close();
    o.db.close();
  }
});

function store(kind: Kind) {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'm.db'));
  const state = new SqliteCheckpoints(db);
  const out = join(dir, 'out');
  const sink = kind === 'sqlite' ? new SqliteSink(db, state) : new NdjsonSink(db, state, out);
  open.push({ sink, db });
  return { dir, db, state, sink, out };
}

type Store = ReturnType<typeof store>;

function client(s: RunningSimulator) {
  const rate = { count: 100_000, windowMs: 1000 };
  return new ApiClient(clientConfig(s, { rate }), { budget: new RequestBudget(rate) });
}

/** One pass, one stream at a time (so which campaign stores a shared id first is known); returns its warnings too. */
async function pullOnce(s: RunningSimulator, st: Store, opts: Partial<PassOptions> = {}) {
  const c = client(s);
  const warnings: string[] = [];
  try {
    const result = await runPass(
      { client: c, sink: st.sink, state: st.state, events: { warning: (w) => warnings.push(w) } },
      { ...passDefaults, pageSize: 20, concurrency: 1, ...opts },
    );
    await st.sink.flush();
    return { result, warnings };
  } finally {
    await c.close();
  }
}

async function reconcileOnce(s: RunningSimulator, st: Store, prune = false) {
  const c = client(s);
  try {
    const held = st.state.all().map((r) => ({ campaignId: r.campaign_id, endpoint: r.endpoint, reportType: r.report_type }));
    return await reconcile(
      { client: c, sink: st.sink, state: st.state },
      { campaigns: [], reportType: 'DETAILED', pageSize: 20, prune, held },
    );
  } finally {
    await c.close();
  }
}

describe('status of a stream served ids another campaign holds', () => {
  it('counts them per stream, in the table and in --json', async () => {
    const s = await sim({ campaigns: 3, records: 20 });
    const [a, , b] = s.data.campaigns as [(typeof s.data.campaigns)[0], unknown, (typeof s.data.campaigns)[0]];
    s.changes.share(a, 2, b, 4);
    s.changes.share(a, 3, b, 8);
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const pull = await runCli(['pull', '--base-url', s.url, '--db', db, '--concurrency', '1'], { env });
    expect(pull.code, pull.stderr).toBe(0);
    expect(pull.stderr.match(/two campaigns/g)).toHaveLength(1);
    expect(pull.stderr).toContain(`campaign ${b.id} (stream ${b.id}/session) was served 2 results`);
    const again = await runCli(['pull', '--base-url', s.url, '--db', db, '--full'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('two campaigns');

    const json = await runCli(['status', '--db', db, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const streams = JSON.parse(json.stdout).streams as Array<{ campaign_id: string; id_conflicts: number; records: number }>;
    expect(streams.map((x) => [x.campaign_id, x.records, x.id_conflicts]).sort()).toEqual(
      [
        [a.id, 20, 0],
        [b.id, 20, 2],
        [s.data.campaigns[1]?.id, 20, 0],
      ].sort(),
    );
    const table = await runCli(['status', '--db', db]);
    const lines = table.stdout.trim().split('\n');
    const header = (lines[0] as string).split('\t');
    const column = header.indexOf('id conflicts');
    expect(column).toBeGreaterThan(0);
    const bLine = lines.find((l) => l.startsWith(`${b.name}\t`)) as string;
    expect(bLine.split('\t')[column]).toBe('2');
  });
});

describe('a campaign whose type changes', () => {
  it('retires its old stream: shown as such, left out of --check, pruned by reconcile, removed by reset (SQLite)', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[0];
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const run = (args: string[]) => runCli(args, { env });
    expect((await run(['pull', '--base-url', s.url, '--db', db])).code).toBe(0);
    s.changes.retype(c, 'ROLE_SUBMISSION');
    const second = await run(['pull', '--base-url', s.url, '--db', db]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`is of type ROLE_SUBMISSION now: its stream ${c.id}/session is retired`);
    // An hour later for the old stream: it is retired, not stale.
    const m = openDatabase(db);
    m.prepare('UPDATE sync_state SET last_success_at = ? WHERE stream = ?').run(
      new Date(Date.now() - 3_600_000).toISOString(),
      `${c.id}/session`,
    );
    m.close();

    const check = await run(['status', '--db', db, '--check']);
    expect(check.code, check.stdout).toBe(0);
    expect(check.stdout).toContain(`${c.name} (session): retired: the campaign's type is now ROLE_SUBMISSION, read from the role endpoint`);
    const doc = JSON.parse((await run(['status', '--db', db, '--check', '--json'])).stdout);
    expect(doc).toMatchObject({ status: 'ok', unhealthy: [], retired: [{ stream: `${c.id}/session`, type_now: 'ROLE_SUBMISSION' }] });
    const status = JSON.parse((await run(['status', '--db', db, '--json'])).stdout);
    expect(
      status.streams.map((x: { stream: string; type_changed_to: string | null; records: number }) => [
        x.stream,
        x.type_changed_to,
        x.records,
      ]),
    ).toEqual(
      expect.arrayContaining([
        [`${c.id}/session`, 'ROLE_SUBMISSION', 20],
        [`${c.id}/role/DETAILED`, null, 20],
      ]),
    );

    // reconcile names the retired stream with every record gone, and --prune removes them (no request for it).
    const look = JSON.parse((await run(['reconcile', '--base-url', s.url, '--db', db, '--json'])).stdout);
    const retired = look.streams.find((x: { campaign_id: string; endpoint: string }) => x.campaign_id === c.id && x.endpoint === 'session');
    expect(retired).toMatchObject({ served: 0, stored: 20, gone: 20, pruned: 0, retired_as: 'ROLE_SUBMISSION', requests: 0 });
    const pruned = await run(['reconcile', '--base-url', s.url, '--db', db, '--json', '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    const after = JSON.parse(pruned.stdout).streams.find(
      (x: { campaign_id: string; endpoint: string }) => x.campaign_id === c.id && x.endpoint === 'session',
    );
    expect(after).toMatchObject({ gone: 20, pruned: 20 });
    const m2 = openDatabase(db);
    expect(m2.prepare('SELECT count(*) FROM session_results WHERE campaign_id = ?').pluck().get(c.id)).toBe(0);
    expect(m2.prepare('SELECT count(*) FROM role_results WHERE campaign_id = ?').pluck().get(c.id)).toBe(20);
    expect(m2.prepare('SELECT records FROM sync_state WHERE stream = ?').pluck().get(`${c.id}/session`)).toBe(0);
    m2.close();

    const reset = await run(['reset', '--db', db, '--campaign', c.id, '--json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ reset: 1, retired_streams_removed: [`${c.id}/session`] });
    const m3 = openDatabase(db);
    expect(m3.prepare('SELECT stream FROM sync_state WHERE campaign_id = ?').pluck().all(c.id)).toEqual([`${c.id}/role/DETAILED`]);
    m3.close();
  });

  it('retires its old stream in an NDJSON folder too: reconcile --prune tombstones its records once', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[0];
    const st = store('ndjson');
    await pullOnce(s, st);
    s.changes.retype(c, 'ROLE_SUBMISSION');
    const second = await pullOnce(s, st);
    expect(second.result.streams.map((x) => x.id.key).sort()).toEqual(
      [`${c.id}/role/DETAILED`, `${s.data.campaigns[1]?.id}/role/DETAILED`].sort(),
    );
    const old = st.state.all().find((r) => r.stream === `${c.id}/session`);
    expect(old).toMatchObject({ type_changed_to: 'ROLE_SUBMISSION', unlisted_since: null });

    const report = await reconcileOnce(s, st, true);
    const retired = report.streams.find((x) => x.id.key === `${c.id}/session`);
    expect(retired).toMatchObject({ served: 0, stored: 20, pruned: 20, retired: 'ROLE_SUBMISSION', requests: 0 });
    const sessionFile = join(st.out, 'session_results.ndjson');
    const tombstones = () =>
      readFileSync(sessionFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((r) => r._deleted_at !== undefined && r.campaign_id === c.id);
    expect(tombstones()).toHaveLength(20);
    // Exactly once: a second prune finds nothing of it left.
    const again = await reconcileOnce(s, st, true);
    expect(again.streams.find((x) => x.id.key === `${c.id}/session`)).toMatchObject({ stored: 0, pruned: 0 });
    expect(tombstones()).toHaveLength(20);
  });
});

describe('status of a mirror written before conflicts were recorded (schema 6)', () => {
  it('reads it as it is, with no conflicts', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const db = join(tempDir(), 'v6.db');
    const pull = await runCli(['pull', '--base-url', s.url, '--db', db], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(pull.code, pull.stderr).toBe(0);
    const m = openDatabase(db);
    m.exec('DROP TABLE id_conflicts; PRAGMA user_version = 6;');
    m.close();
    const status = await runCli(['status', '--db', db, '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).streams.map((x: { id_conflicts: number }) => x.id_conflicts)).toEqual([0]);
  });
});
