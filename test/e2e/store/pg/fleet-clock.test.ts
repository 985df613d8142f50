/**
 * Every time a fleet shares is the database server's: one worker of a PostgreSQL mirror spawned on a
 * clock of its own (libfaketime: 400 days ahead, 20 minutes behind, 2 hours ahead) erases, stamps and
 * judges exactly as a worker on the right clock would. Its retention cuts at the server's now less
 * the retention, so it erases none of the young results and stores the new ones it reads (the
 * checkpoint moves past nothing it did not store); it records its retention run, a stream's success
 * and its metrics at the server's time; `status --check`, its Nagios line and a watch's /healthz
 * measure ages on the server's clock, whoever stamped them and whatever clock they run on.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { cli, sim, startCli, tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';
import { fakeTimeEnv, needs } from '../../../helpers/tools.js';

const DAY = 86_400_000;
/** How far a time read back may lie from the test's own clock (the server's, on this host) under a loaded machine. */
const NEAR_MS = 120_000;

/** A worker on a "host" of its own (home and state folder), on a clock `offset` off when given. */
function host(s: RunningSimulator, offset?: string): { env: Record<string, string> } {
  const home = tempDir();
  return {
    env: {
      HOME: home,
      XDG_STATE_HOME: join(home, 'state'),
      CAMPAIGN_SYNC_API_KEY: s.apiKey,
      CAMPAIGN_SYNC_DB: PG_URL,
      ...(offset === undefined ? {} : fakeTimeEnv(offset)),
    },
  };
}

const results = (schema: string) =>
  pgRows(schema, 'SELECT id FROM session_results UNION ALL SELECT id FROM role_results').then((r) => r.map((x) => String(x.id)));

/** Each stream's checkpoint is its campaign's newest served record, and every served record is stored. */
async function expectAllStored(s: RunningSimulator, schema: string, perCampaign: number): Promise<void> {
  const stored = new Set(await results(schema));
  const state = await pgRows(schema, 'SELECT campaign_id, cursor::text AS cursor FROM sync_state');
  expect(state).toHaveLength(s.data.campaigns.length);
  for (const c of s.data.campaigns) {
    for (let i = 0; i < perCampaign; i++) {
      const r = c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED');
      expect(stored.has(String(r.id)), `${c.name} record ${i}`).toBe(true);
    }
    expect(state.find((x) => x.campaign_id === c.id)?.cursor).toBe(String(s.data.orderIndex(c, perCampaign - 1)));
  }
  expect(stored.size).toBe(s.data.campaigns.length * perCampaign);
}

/** Every stream's last success, in ms. */
async function successes(schema: string): Promise<number[]> {
  const rows = await pgRows(schema, 'SELECT last_success_at FROM sync_state');
  return rows.map((r) => (r.last_success_at as Date).getTime());
}

/** Waits until the server's clock is past `at` (no fixed sleep: the server says when). */
async function serverPast(at: number): Promise<void> {
  for (;;) {
    const [row] = await pgRows('public', 'SELECT clock_timestamp() AS now');
    if (row !== undefined && (row.now as Date).getTime() > at) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describePg("a fleet's times are the database server's, whatever a worker's clock says", () => {
  it('a worker 400 days ahead with --retention 365d erases none of the young results, stores the new ones, and records its run at the server time', async (ctx) => {
    needs(ctx, 'faketime');
    // The simulator's clock moves only when the test says: its growth brings new results then.
    const start = Date.now();
    let shift = 0;
    const s = await sim({ campaigns: 2, records: 25, growth: { count: 1, windowMs: 1000 }, now: () => start + shift });
    const schema = freshSchema();
    // Every result is younger than the retention on the right clock (a year, or more once the
    // simulator's history, which ends on a fixed day, ages past it); the worker is 35 days past it.
    const oldest = s.data.createdAt(0);
    const retentionDays = Math.max(365, Math.ceil((Date.now() - oldest) / DAY) + 2);
    const ahead = `+${retentionDays + 35}d`;
    const pull = ['pull', '--pg-schema', schema, '--base-url', s.url, '--retention', `${retentionDays}d`, '--json'];
    const first = await cli(pull, host(s, ahead));
    expect(first.code, first.stderr).toBe(0);
    const doc = JSON.parse(first.stdout) as { retention?: { before: string; removed: Record<string, number> } };
    // It ran (it never had), cut a retention before the server's now, and erased nothing.
    expect(Math.abs(Date.parse(doc.retention?.before ?? '') - (Date.now() - retentionDays * DAY))).toBeLessThan(NEAR_MS);
    expect(Object.values(doc.retention?.removed ?? { missing: -1 }).every((n) => n === 0)).toBe(true);
    await expectAllStored(s, schema, 25);
    const [ran] = await pgRows(schema, "SELECT value FROM meta WHERE key = 'retention_ran_at'");
    expect(Math.abs(Date.parse(ran?.value as string) - Date.now()), `ran at ${ran?.value}`).toBeLessThan(NEAR_MS);
    // Ten new results arrive; the same worker reads them and stores every one.
    shift += 5_000;
    const second = await cli(pull, host(s, ahead));
    expect(second.code, second.stderr).toBe(0);
    await expectAllStored(s, schema, 30);
    for (const at of await successes(schema)) expect(Math.abs(at - Date.now())).toBeLessThan(NEAR_MS);
  });

  it('forget --older-than from a host 400 days ahead cuts at the server time: the young results stay', async (ctx) => {
    needs(ctx, 'faketime');
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    expect((await cli(['pull', '--pg-schema', schema, '--base-url', s.url], host(s))).code).toBe(0);
    const held = (await results(schema)).sort();
    // Older than every result on the right clock (a year, or more once the simulator's history ages past it).
    const days = Math.max(365, Math.ceil((Date.now() - s.data.createdAt(0)) / DAY) + 2);
    const forget = await cli(['forget', '--pg-schema', schema, '--older-than', `${days}d`, '--yes', '--json'], host(s, `+${days + 35}d`));
    expect(forget.code, forget.stderr).toBe(0);
    const doc = JSON.parse(forget.stdout) as { before: string; removed: Record<string, number> };
    expect(Math.abs(Date.parse(doc.before) - (Date.now() - days * DAY))).toBeLessThan(NEAR_MS);
    expect(Object.values(doc.removed).every((n) => n === 0)).toBe(true);
    expect((await results(schema)).sort()).toEqual(held);
  });

  it('a worker 20 minutes behind: a check right after its sync is OK, on any clock', async (ctx) => {
    needs(ctx, 'faketime');
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const pulled = await cli(['pull', '--pg-schema', schema, '--base-url', s.url], host(s, '-20m'));
    expect(pulled.code, pulled.stderr).toBe(0);
    for (const at of await successes(schema)) expect(Math.abs(at - Date.now())).toBeLessThan(NEAR_MS);
    const check = ['status', '--check', '--pg-schema', schema];
    const right = await cli(check, host(s));
    expect(right.code, right.stdout).toBe(0);
    expect(right.stdout).toMatch(/^OK: 2 of 2 streams healthy/m);
    const nagios = await cli([...check, '--nagios'], host(s));
    expect(nagios.code, nagios.stdout).toBe(0);
    expect(nagios.stdout).toMatch(/^CAMPAIGN-SYNC OK - 2 of 2 streams healthy/);
    // The check itself on a host two hours ahead: ages are the server's all the same.
    const aheadCheck = await cli(check, host(s, '+2h'));
    expect(aheadCheck.code, aheadCheck.stdout).toBe(0);
  });

  it('a worker 2 hours ahead stamps its success and its metrics at the server time: a stream it stopped syncing goes stale on time', async (ctx) => {
    needs(ctx, 'faketime');
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const metrics = join(tempDir(), 'campaign-sync.prom');
    const pulled = await cli(['pull', '--pg-schema', schema, '--base-url', s.url, '--metrics-file', metrics], host(s, '+2h'));
    expect(pulled.code, pulled.stderr).toBe(0);
    const stamped = await successes(schema);
    for (const at of stamped) expect(Math.abs(at - Date.now())).toBeLessThan(NEAR_MS);
    const samples = [...readFileSync(metrics, 'utf8').matchAll(/^campaign_sync_last_success_timestamp_seconds\{[^}]*\} (\S+)$/gm)];
    expect(samples).toHaveLength(2);
    for (const [, v] of samples) expect(Math.abs(Number(v) * 1000 - Date.now())).toBeLessThan(NEAR_MS);
    // Nothing syncs it since: once the server's clock is past --max-age, every stream is stale.
    await serverPast(Math.max(...stamped) + 3_000);
    const check = await cli(['status', '--check', '--max-age', '2s', '--pg-schema', schema], host(s));
    expect(check.code, check.stdout).toBe(5);
    expect(check.stdout).toMatch(/stale: last success/);
    const nagios = await cli(['status', '--check', '--nagios', '--max-age', '2s', '--pg-schema', schema], host(s));
    expect(nagios.code, nagios.stdout).toBe(2);
    expect(nagios.stdout).toMatch(/^CAMPAIGN-SYNC CRITICAL - 0 of 2 streams healthy \(2 stale\)/);
  });

  it("a worker 2 hours ahead with --notify tells no other worker's stream stale, and records no such state", async (ctx) => {
    needs(ctx, 'faketime');
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const posts: string[] = [];
    const hook = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        posts.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    try {
      const pulled = await cli(['pull', '--pg-schema', schema, '--base-url', s.url], host(s));
      expect(pulled.code, pulled.stderr).toBe(0);
      // It syncs one campaign; the other's stream is the pull's, synced a moment ago.
      const [mine] = s.data.campaigns;
      const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
      const ahead = await cli(
        ['pull', '--pg-schema', schema, '--base-url', s.url, '--campaign', String(mine?.id), '--notify', url],
        host(s, '+2h'),
      );
      expect(ahead.code, ahead.stderr).toBe(0);
      expect(posts).toEqual([]);
      expect(await pgRows(schema, "SELECT key, value FROM meta WHERE key LIKE 'notified:%'")).toEqual([]);
    } finally {
      hook.close();
    }
  });

  it("a watch 2 hours ahead judges on /healthz the streams other workers synced by the server's clock", async (ctx) => {
    needs(ctx, 'faketime');
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const pulled = await cli(['pull', '--pg-schema', schema, '--base-url', s.url], host(s));
    expect(pulled.code, pulled.stderr).toBe(0);
    // It syncs one campaign; the other's stream is the pull's, synced a moment ago.
    const [mine] = s.data.campaigns;
    const args = ['watch', '--pg-schema', schema, '--base-url', s.url, '--campaign', String(mine?.id)];
    const watch = startCli([...args, '--metrics-listen', '127.0.0.1:0', '--max-age', '1h', '--interval', '30m'], host(s, '+2h'));
    try {
      await watch.waitFor(/pass 1:/, 60_000);
      const url = /health on (http:\/\/\S+\/healthz)/.exec(watch.stderr())?.[1];
      expect(url, watch.stderr()).toBeDefined();
      const res = await fetch(url as string);
      const body = (await res.json()) as { status: string; healthy: number; unhealthy: unknown[] };
      expect(body, JSON.stringify(body)).toMatchObject({ status: 'ok', healthy: 2, unhealthy: [] });
    } finally {
      watch.child.kill('SIGTERM');
      await watch.exited;
    }
  });
});
