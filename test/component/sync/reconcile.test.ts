/**
 * `reconcile`: a full re-walk reports served, stored, added, changed and gone; `--prune`
 * deletes the gone records with their children (SQLite) or tombstones them exactly once (NDJSON),
 * also across kill -9.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { ApiError, exitCodeForPass } from '../../../src/errors.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { reconcile } from '../../../src/sync/reconcile.js';
import { clientConfig, sim, startCli, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const count = (db: ReturnType<typeof openDatabase>, sql: string, ...args: unknown[]) =>
  db
    .prepare(sql)
    .pluck()
    .get(...args) as number;

function lines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function pullCli(s: RunningSimulator, args: string[]) {
  const r = await runCli(['pull', '--base-url', s.url, ...args], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code, r.stderr).toBe(0);
  return r;
}

async function reconcileCli(s: RunningSimulator, args: string[]) {
  return runCli(['reconcile', '--base-url', s.url, '--json', ...args], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
}

describe('reconcile into SQLite', () => {
  it('reports added, changed and gone; touches nothing gone without --prune; --prune deletes them with their children', async () => {
    const s = await sim({ campaigns: 2, records: 60 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    await pullCli(s, ['--db', db]);
    const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    s.changes.remove(session, 5);
    s.changes.remove(session, 6);
    s.changes.remove(role, 59);
    s.changes.rescore(role, 10, Date.parse('2026-11-23T00:00:00Z'));
    s.changes.arriveLate(session, 30, Date.parse('2026-11-23T00:00:00Z'));
    const goneSession = [s.data.sessionResult(session, 5).id, s.data.sessionResult(session, 6).id].sort();
    const goneRole = s.data.roleResult(role, 59, 'DETAILED').id as string;

    const look = await reconcileCli(s, ['--db', db]);
    expect(look.code, look.stderr).toBe(0);
    const report = JSON.parse(look.stdout);
    expect(report.streams.map((x: Record<string, unknown>) => [x.served, x.stored, x.added, x.changed, x.gone, x.pruned])).toEqual([
      [59, 60, 1, 0, 2, 0],
      [59, 60, 0, 1, 1, 0],
    ]);
    expect(report.streams[0].gone_ids.sort()).toEqual(goneSession);
    expect(report.streams[1].gone_ids).toEqual([goneRole]);
    // Nothing gone is touched without --prune; the late one was added, the re-scored one changed.
    const m = openDatabase(db);
    try {
      expect(count(m, 'SELECT count(*) FROM session_results')).toBe(61);
      expect(count(m, 'SELECT count(*) FROM role_results WHERE id = ?', goneRole)).toBe(1);
      expect(count(m, 'SELECT count(*) FROM score_details WHERE role_result_id = ?', goneRole)).toBeGreaterThan(0);
    } finally {
      m.close();
    }

    const prune = await reconcileCli(s, ['--db', db, '--prune']);
    expect(prune.code, prune.stderr).toBe(0);
    expect(JSON.parse(prune.stdout).streams.map((x: Record<string, unknown>) => [x.gone, x.pruned])).toEqual([
      [2, 2],
      [1, 1],
    ]);
    const after = openDatabase(db);
    try {
      expect(count(after, 'SELECT count(*) FROM session_results')).toBe(59);
      expect(count(after, 'SELECT count(*) FROM role_results')).toBe(59);
      for (const id of goneSession) {
        expect(count(after, 'SELECT count(*) FROM session_results WHERE id = ?', id)).toBe(0);
        expect(count(after, "SELECT count(*) FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ?", id)).toBe(0);
      }
      expect(count(after, 'SELECT count(*) FROM score_details WHERE role_result_id = ?', goneRole)).toBe(0);
      // No orphans anywhere: every child row has its parent.
      expect(
        count(
          after,
          "SELECT count(*) FROM eval_results e WHERE (e.parent_type = 'session_result' AND e.parent_id NOT IN (SELECT id FROM session_results)) OR (e.parent_type = 'score_detail' AND e.parent_id NOT IN (SELECT id FROM score_details))",
        ),
      ).toBe(0);
      expect(count(after, 'SELECT count(*) FROM score_details WHERE role_result_id NOT IN (SELECT id FROM role_results)')).toBe(0);
    } finally {
      after.close();
    }
    const again = JSON.parse((await reconcileCli(s, ['--db', db, '--prune'])).stdout);
    expect(again.streams.map((x: Record<string, unknown>) => [x.added, x.changed, x.gone])).toEqual([
      [0, 0, 0],
      [0, 0, 0],
    ]);
  });

  it('a stream that fails is reported (exit 4) and nothing of it is pruned', async () => {
    const s = await sim({ campaigns: 2, records: 30 });
    const dir = tempDir();
    const db = openDatabase(join(dir, 'm.db'));
    const state = new SqliteCheckpoints(db);
    const sink = new SqliteSink(db, state);
    const rate = { count: 100_000, windowMs: 1000 };
    const client = new ApiClient(clientConfig(s, { rate }), { budget: new RequestBudget(rate) });
    try {
      const opts = { campaigns: [], reportType: 'DETAILED' as const, pageSize: 10, prune: true, held: [] };
      await reconcile({ client, sink, state }, opts);
      const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
      s.changes.remove(session, 1);
      s.changes.remove(role, 1);
      // The role stream fails on its second page: what it did not read cannot be called gone.
      const real = client.resultsPage.bind(client);
      client.resultsPage = async (q, counter) => {
        if (q.endpoint === 'role' && q.startingAfter !== undefined)
          throw new ApiError({ method: 'GET', path: '/v1/campaigns/role/results', campaignId: q.campaignId }, '500 Internal server error', {
            status: 500,
          });
        return real(q, counter);
      };
      const result = await reconcile({ client, sink, state }, opts);
      expect(result.streams.map((x) => [x.status, x.gone.length, x.pruned])).toEqual([
        ['ok', 1, 1],
        ['failed', 0, 0],
      ]);
      expect(exitCodeForPass(result)).toBe(4);
      expect(count(db, 'SELECT count(*) FROM role_results')).toBe(30);
      expect(count(db, 'SELECT count(*) FROM session_results')).toBe(29);
    } finally {
      await sink.close();
      await client.close();
      db.close();
    }
  });
});

describe('reconcile into NDJSON', () => {
  it('tombstones each gone record once, in the documented shape; a crash tail is cut, not doubled', async () => {
    const s = await sim({ campaigns: 2, records: 40 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const out = join(dir, 'out');
    await pullCli(s, ['--db', db, '--format', 'ndjson', '--out', out]);
    const file = join(out, 'session_results.ndjson');
    const before = readFileSync(file, 'utf8');
    const session = s.data.campaigns[0]!;
    s.changes.remove(session, 3);
    s.changes.remove(session, 17);
    const gone = [s.data.sessionResult(session, 3).id, s.data.sessionResult(session, 17).id].sort();

    // A crash after a tombstone's append but before its commit leaves a tail the next run cuts.
    appendFileSync(file, `${JSON.stringify({ id: gone[0], campaign_id: session.id, _deleted_at: '2026-01-01T00:00:00.000Z' })}\n`);
    // reconcile uses the destination the database feeds: no --format/--out needed.
    const r = await reconcileCli(s, ['--db', db, '--prune']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).streams[0]).toMatchObject({ served: 38, stored: 40, gone: 2, pruned: 2 });
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith(before)).toBe(true);
    const tombstones = lines(file).slice(40);
    expect(tombstones.map((t) => t.id).sort()).toEqual(gone);
    for (const t of tombstones) {
      expect(Object.keys(t)).toEqual(['id', 'campaign_id', '_deleted_at']);
      expect(t.campaign_id).toBe(session.id);
      expect(Number.isNaN(Date.parse(t._deleted_at as string))).toBe(false);
    }
    // Exactly once: a second prune finds nothing gone and appends nothing.
    const again = await reconcileCli(s, ['--db', db, '--prune']);
    expect(JSON.parse(again.stdout).streams[0]).toMatchObject({ stored: 38, gone: 0, pruned: 0 });
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('kill -9 at random instants of reconcile --prune, then a full run: one tombstone per gone record', async () => {
    const s = await sim({ campaigns: 2, records: 150 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const out = join(dir, 'out');
    await pullCli(s, ['--db', db, '--format', 'ndjson', '--out', out]);
    const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    const goneIds = new Set<string>();
    for (const i of [2, 50, 149]) {
      s.changes.remove(session, i);
      s.changes.remove(role, i);
      goneIds.add(s.data.sessionResult(session, i).id as string);
      goneIds.add(s.data.roleResult(role, i, 'DETAILED').id as string);
    }
    const args = ['reconcile', '--base-url', s.url, '--db', db, '--prune', '--page-size', '5', '--quiet'];
    let seed = 7;
    for (let round = 0; round < 8; round++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const run = startCli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
      await new Promise((r) => setTimeout(r, 150 + (seed % 900)));
      run.child.kill('SIGKILL');
      await run.exited;
    }
    const final = await runCli([...args.slice(0, -1), '--json'], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(final.code, final.stderr).toBe(0);
    const all = [...lines(join(out, 'session_results.ndjson')), ...lines(join(out, 'role_results.ndjson'))];
    const tombstones = all.filter((l) => typeof l._deleted_at === 'string');
    expect(tombstones.map((t) => t.id).sort()).toEqual([...goneIds].sort());
    // Records: each served once (the pull), none appended again by the re-walks.
    expect(all.length - tombstones.length).toBe(300);
  });
});

describe('simulate --churn', () => {
  it('changes served results over time, which reconcile and the next pass see', async () => {
    const s = await sim({ campaigns: 2, records: 100, churn: { count: 20, windowMs: 100 } });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    await pullCli(s, ['--db', db]);
    for (const t0 = Date.now(); !s.changes.any && Date.now() - t0 < 10_000; ) await new Promise((r) => setTimeout(r, 50));
    expect(s.changes.any).toBe(true);
    const r = await reconcileCli(s, ['--db', db]);
    expect(r.code, r.stderr).toBe(0);
    const streams = JSON.parse(r.stdout).streams as Array<Record<string, number>>;
    expect(streams.reduce((n, x) => n + (x.added ?? 0) + (x.changed ?? 0) + (x.gone ?? 0), 0)).toBeGreaterThan(0);
  });
});

/** What a reconcile must not change when it refuses: every role row as stored, and the stream rows. */
function roleSnapshot(path: string) {
  const m = openDatabase(path);
  try {
    return {
      roles: m.prepare('SELECT id, report_type, raw FROM role_results ORDER BY id').all(),
      details: count(m, 'SELECT count(*) FROM score_details'),
      streams: m.prepare('SELECT stream, cursor, records FROM sync_state ORDER BY stream').safeIntegers(true).all(),
    };
  } finally {
    m.close();
  }
}

// A DETAILED mirror asked for OVERALL, on every kind: test/contract/reconcile.test.ts.
describe('reconcile compares the report type the mirror holds', () => {
  it('SQLite: an OVERALL mirror refuses the default DETAILED and compares --report-type OVERALL', async () => {
    const s = await sim({ campaigns: 2, records: 15 });
    const db = join(tempDir(), 'm.db');
    await pullCli(s, ['--db', db, '--report-type', 'OVERALL']);
    const before = roleSnapshot(db);
    const r = await reconcileCli(s, ['--db', db]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim()).toMatch(/^campaign-sync: --report-type DETAILED: .*OVERALL/);
    expect(roleSnapshot(db)).toEqual(before);
    const ok = await reconcileCli(s, ['--db', db, '--report-type', 'OVERALL']);
    expect(ok.code, ok.stderr).toBe(0);
    const role = JSON.parse(ok.stdout).streams.find((x: Record<string, unknown>) => x.endpoint === 'role');
    expect(role).toMatchObject({ report_type: 'OVERALL', served: 15, stored: 15, added: 0, changed: 0 });
    expect(roleSnapshot(db).streams).toEqual(before.streams);
  });
});

describe('an interrupted reconcile', () => {
  /** A reconcile slow enough to stop in its first stream: 2 requests a second, 5 records a page. */
  async function startSlow(signal: NodeJS.Signals, json: boolean) {
    const s = await sim({ campaigns: 4, records: 40 });
    const db = join(tempDir(), 'm.db');
    await pullCli(s, ['--db', db]);
    // Gone everywhere: a stream not read to its end must not prune any of them.
    for (const c of s.data.campaigns) s.changes.remove(c, 3);
    const args = ['reconcile', '--base-url', s.url, '--db', db, '--prune', '--page-size', '5', '--rate-limit', '2/1s', '--verbose'];
    const run = startCli(json ? [...args, '--json'] : args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    await run.waitFor(/starting_after/);
    run.child.kill(signal);
    const { code } = await run.exited;
    const m = openDatabase(db);
    try {
      const rows = count(m, 'SELECT count(*) FROM session_results') + count(m, 'SELECT count(*) FROM role_results');
      return { code, stdout: run.stdout(), stderr: run.stderr(), rows };
    } finally {
      m.close();
    }
  }

  it('--json, SIGTERM: exit 130, and the document says so (exit_code 130, interrupted); nothing pruned', async () => {
    const r = await startSlow('SIGTERM', true);
    expect(r.code, r.stderr).toBe(130);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ interrupted: true, exit_code: 130 });
    expect(doc.streams.length).toBeLessThan(4);
    expect(doc.streams.reduce((n: number, x: { pruned: number }) => n + x.pruned, 0)).toBe(0);
    expect(r.stderr).toMatch(/^campaign-sync: reconcile interrupted: /m);
    expect(r.rows).toBe(160);
  });

  it('text, SIGINT: exit 130 with one line saying the report is incomplete; nothing pruned', async () => {
    const r = await startSlow('SIGINT', false);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stdout).toContain('interrupted');
    expect(r.stderr).toMatch(/^campaign-sync: reconcile interrupted: \d of 4 streams reconciled/m);
    expect(r.rows).toBe(160);
  });
});
