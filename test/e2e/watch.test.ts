import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signalHandler } from '../../src/main.js';
import { startSimulator } from '../../src/simulator/server.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { cli, sim, startCli, tempDir } from '../helpers/index.js';

function envFor(url: string, key = 'demo-key') {
  return { CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: key };
}

/** Per stream: stored rows equal exactly the records up to the checkpoint. */
function assertConsistent(dbPath: string) {
  const db = new Database(dbPath, { readonly: true });
  db.defaultSafeIntegers(true);
  const streams = db.prepare('SELECT campaign_id, endpoint, cursor, records FROM sync_state').all() as Array<{
    campaign_id: string;
    endpoint: string;
    cursor: bigint | null;
    records: bigint;
  }>;
  let total = 0n;
  for (const s of streams) {
    const table = s.endpoint === 'session' ? 'session_results' : 'role_results';
    const stored = db.prepare(`SELECT count(*), max(order_index) FROM ${table} WHERE campaign_id = ?`).raw().get(s.campaign_id) as [
      bigint,
      bigint | null,
    ];
    expect(stored[0]).toBe(s.records);
    expect(stored[1]).toBe(s.cursor);
    total += stored[0];
  }
  expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
  db.close();
  return total;
}

/** Waits until a page of some stream has committed (a loaded machine may take a while to get there). */
async function waitCommitted(dbPath: string): Promise<void> {
  const committed = () => {
    try {
      const m = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        return (m.prepare('SELECT count(*) FROM sync_state WHERE cursor IS NOT NULL').pluck().get() as number) > 0;
      } finally {
        m.close();
      }
    } catch {
      return false;
    }
  };
  for (const t0 = Date.now(); !committed() && Date.now() - t0 < 30_000; ) await new Promise((r) => setTimeout(r, 50));
}

describe('run lock', () => {
  it('every name of a database takes the same lock: through a linked folder, or its path spelled another way', async () => {
    const s = await sim({ campaigns: 1, records: 10 });
    const dir = tempDir();
    const db = join(dir, 'real', 'm.db');
    mkdirSync(join(dir, 'real'));
    mkdirSync(join(dir, 'links'));
    // A link at the database's own name is refused (test/component/core/fs/symlinks.test.ts); a folder on the way may be one.
    symlinkSync(join(dir, 'real'), join(dir, 'links', 'to-real'));
    const link = join(dir, 'links', 'to-real', 'm.db');
    // The lock sits beside the real file, not `<the name given>.lock`: else a watch through the linked folder and a pull on the file would run at once.
    const holder = startCli(['watch', '--db', link, '--interval', '1h'], { env: envFor(s.url) });
    await holder.waitFor(/pass 1:/);
    const direct = await cli(['pull', '--db', db], { env: envFor(s.url) });
    expect(direct.code).toBe(75);
    expect(direct.stderr).toMatch(new RegExp(`another campaign-sync is syncing .*real/m\\.db \\(pid ${holder.child.pid} on `));
    const spelled = await cli(['pull', '--db', join(dir, 'links', '..', 'real', '.', 'm.db')], { env: envFor(s.url) });
    expect(spelled.code).toBe(75);
    const reset = await cli(['reset', '--all', '--db', db]);
    expect(reset.code).toBe(75);
    // status, given the file, sees the sync that runs under the link's name.
    const status = await cli(['status', '--db', db, '--json']);
    expect(status.stdout).toMatch(new RegExp(`"pid":\\s*${holder.child.pid}`));
    holder.child.kill('SIGKILL');
    await holder.exited;
    expect((await cli(['pull', '--db', db], { env: envFor(s.url) })).code).toBe(0);
  });

  it('a second pull on the same database exits 75 at once, naming the holder; kill -9 frees it', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const db = join(tempDir(), 'm.db');
    const holder = startCli(['watch', '--db', db, '--interval', '1h'], { env: envFor(s.url) });
    await holder.waitFor(/pass 1:/);
    const t0 = Date.now();
    const second = await cli(['pull', '--db', db], { env: envFor(s.url) });
    expect(second.code).toBe(75);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(second.stderr).toMatch(
      new RegExp(`another campaign-sync is syncing .*m\\.db \\(pid ${holder.child.pid} on .*, since 20\\d\\d-`),
    );
    const watch2 = await cli(['watch', '--db', db, '--max-cycles', '1'], { env: envFor(s.url) });
    expect(watch2.code).toBe(75);
    const reset = await cli(['reset', '--all', '--db', db]);
    expect(reset.code).toBe(75);

    holder.child.kill('SIGKILL');
    await holder.exited;
    const after = await cli(['pull', '--db', db], { env: envFor(s.url) });
    expect(after.code).toBe(0);
  });
});

describe('signals', () => {
  it('SIGTERM mid-pull commits or rolls back the page in flight and exits 0; rows and cursors agree', async () => {
    // Slow replies keep a page in flight when the signal lands.
    const s = await startSimulator({ campaigns: 4, records: 400, faults: { slow: 1 }, slowMs: 150 });
    try {
      const db = join(tempDir(), 'm.db');
      const run = startCli(['pull', '--db', db, '--page-size', '20'], { env: envFor(s.url) });
      // Signal once some pages are committed (a loaded machine may take longer than usual to get there).
      await waitCommitted(db);
      await new Promise((r) => setTimeout(r, 300));
      run.child.kill('SIGTERM');
      const { code } = await run.exited;
      expect(code).toBe(0);
      const stored = assertConsistent(db);
      expect(stored).toBeGreaterThan(0n);
      expect(stored).toBeLessThan(1600n);
      // The next run resumes after the last committed page and completes the mirror.
      const rest = await cli(['pull', '--db', db], { env: envFor(s.url) });
      expect(rest.code).toBe(0);
      expect(assertConsistent(db)).toBe(1600n);
    } finally {
      await s.close();
    }
  });

  it('SIGHUP (the ssh session or tmux window closed) stops watch as SIGTERM does: the open group commits, exit 0', async () => {
    // Slow replies keep a page in flight, and a group open, when the hangup lands.
    const s = await startSimulator({ campaigns: 4, records: 400, faults: { slow: 1 }, slowMs: 150 });
    try {
      const db = join(tempDir(), 'm.db');
      const run = startCli(['watch', '--db', db, '--page-size', '20', '--interval', '1m'], { env: envFor(s.url) });
      await waitCommitted(db);
      run.child.kill('SIGHUP');
      const { code, signal } = await run.exited;
      // Before: killed by Node's default action (exit 129), nothing said, the open group lost.
      expect({ code, signal }, run.stderr()).toEqual({ code: 0, signal: null });
      expect(run.stdout()).toMatch(/pass 1: .*interrupted/);
      const stored = assertConsistent(db);
      expect(stored).toBeGreaterThan(0n);
    } finally {
      await s.close();
    }
  });

  it('SIGHUP stops simulate as SIGINT does: exit 0', async () => {
    const run = startCli(['simulate', '--port', '0', '--records', '4', '--campaigns', '2', '--json']);
    await run.waitFor(/"url":/);
    run.child.kill('SIGHUP');
    const { code, signal } = await run.exited;
    expect({ code, signal }, run.stderr()).toEqual({ code: 0, signal: null });
  });

  it('SIGINT cuts the watch interval sleep short and exits 0', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const run = startCli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '10m'], { env: envFor(s.url) });
    await run.waitFor(/pass 1:/);
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const { code } = await run.exited;
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('a second signal exits at once with 130; the first only aborts', () => {
    const controller = new AbortController();
    const exits: number[] = [];
    const said: string[] = [];
    const handler = signalHandler(
      controller,
      (code) => exits.push(code),
      (line) => said.push(line),
    );
    handler('SIGTERM');
    expect(controller.signal.aborted).toBe(true);
    expect(exits).toEqual([]);
    handler('SIGINT');
    expect(exits).toEqual([130]);
    expect(said).toEqual(['campaign-sync: second SIGINT, exiting now\n']);
  });
});

describe('watch', () => {
  it('picks up growth across passes, one line per pass, and stops after --max-cycles', async () => {
    const s = await sim({ campaigns: 2, records: 10, growth: { count: 4, windowMs: 1000 } });
    const run = await cli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '1s', '--max-cycles', '3', '--json'], {
      env: envFor(s.url),
    });
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.pass)).toEqual([1, 2, 3]);
    expect(lines[0].records).toBeGreaterThanOrEqual(20);
    expect(lines[1].records).toBeGreaterThan(0);
    expect(lines[2].records).toBeGreaterThan(0);
    expect(lines[1].streams.every((x: { new: number }) => x.new > 0)).toBe(true);
  });

  it('spaces passes start to start by the interval, with small jitter', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const run = await cli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '700ms', '--max-cycles', '4', '--json'], {
      env: envFor(s.url),
    });
    const starts = run.stdout
      .trim()
      .split('\n')
      .map((l) => Date.parse(JSON.parse(l).started_at));
    for (let i = 1; i < starts.length; i++) {
      const gap = (starts[i] as number) - (starts[i - 1] as number);
      expect(gap).toBeGreaterThanOrEqual(700);
      expect(gap).toBeLessThan(700 * 1.05 + 250);
    }
  });

  it('a failing pass is logged and the next one succeeds', async () => {
    // A port with nothing on it yet: the first pass fails, then the service comes up.
    const probe = await sim();
    const port = probe.port;
    await probe.close();
    const run = startCli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '1s', '--max-cycles', '3', '--max-retries', '0'], {
      env: envFor(`http://127.0.0.1:${port}`),
    });
    await run.waitFor(/pass 1 failed/);
    const s = await startSimulator({ port, campaigns: 1, records: 5 });
    try {
      const { code } = await run.exited;
      expect(code).toBe(0);
      expect(run.stderr()).toMatch(/pass 1 failed: nothing synced: ECONNREFUSED: .* — GET \/v1\/campaigns/);
      expect(run.stdout()).toMatch(/pass 2: 5 records/);
      expect(run.stdout()).toMatch(/pass 3: 0 records/);
    } finally {
      await s.close();
    }
  });

  it("another program's write lock on the database fails a pass (75), not the watch: the next pass opens it again and syncs", async () => {
    const s = await sim({ campaigns: 2, records: 5, growth: { count: 2, windowMs: 1000 } });
    const db = join(tempDir(), 'm.db');
    expect((await cli(['pull', '--db', db], { env: envFor(s.url, s.apiKey) })).code).toBe(0);
    // What a sqlite3 shell with `BEGIN IMMEDIATE;` holds: the write lock, past busy_timeout (10 s).
    const holder = new Database(db);
    holder.exec('BEGIN IMMEDIATE');
    const run = startCli(['watch', '--db', db, '--interval', '1s', '--max-cycles', '3', '--json'], { env: envFor(s.url, s.apiKey) });
    try {
      await run.waitFor(/"pass":1,"error"/, 30_000);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const passes = run
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pass: number; error?: string; exit_code?: number; records?: number });
    expect(passes.map((p) => p.pass)).toEqual([1, 2, 3]);
    // The same one line a pull ends with, and its exit code: 75, not 74 ("fix the storage").
    expect(passes[0]?.exit_code).toBe(75);
    expect(passes[0]?.error).toMatch(
      /^cannot (write to|commit to) .*m\.db: another program kept the database locked for more than 10 s \(SQLITE_BUSY[A-Z_]*: a sqlite3 shell or a tool with an open write transaction\?\); nothing committed was lost: run again once it is released$/,
    );
    expect(passes[1]?.error).toBeUndefined();
    expect(passes[2]?.error).toBeUndefined();
    expect(assertConsistent(db)).toBeGreaterThan(10n);
  });

  it('warns at start when --max-age is within --interval (/healthz would flap to 503 between passes); --quiet silences it', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const args = [
      'watch',
      '--db',
      join(tempDir(), 'm.db'),
      '--interval',
      '3s',
      '--max-age',
      '1s',
      '--metrics-listen',
      '0',
      '--max-cycles',
      '1',
    ];
    const run = await cli(args, { env: envFor(s.url) });
    expect(run.code, run.stderr).toBe(0);
    const warnings = run.stderr.split('\n').filter((l) => l.startsWith('warning:'));
    expect(warnings).toEqual([
      'warning: --max-age 1s is not above --interval 3s and its 5% jitter: /healthz will answer 503 between passes, and a liveness probe would restart a healthy watch; set --max-age above --interval plus a pass',
    ]);
    expect((await cli([...args, '--quiet'], { env: envFor(s.url) })).stderr).not.toMatch(/warning/);
    // Above the interval: nothing to say.
    const fine = await cli(
      ['watch', '--db', join(tempDir(), 'm.db'), '--interval', '3s', '--max-age', '10s', '--metrics-listen', '0', '--max-cycles', '1'],
      {
        env: envFor(s.url),
      },
    );
    expect(fine.stderr).not.toMatch(/warning/);
  });

  it('warns once when the request budget cannot keep --max-staleness for the number of streams', async () => {
    const s = await sim({ campaigns: 30, records: 2 });
    const run = await cli(
      // 14 streams a pass, a pass every 5 s (the rate paces it): a stream may wait three passes.
      [
        'watch',
        '--db',
        join(tempDir(), 'm.db'),
        '--interval',
        '1s',
        '--rate-limit',
        '15/5s',
        '--max-staleness',
        '10s',
        '--max-cycles',
        '2',
        '--json',
      ],
      { env: envFor(s.url) },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(2);
    const warnings = run.stderr.split('\n').filter((l) => l.startsWith('warning:'));
    expect(warnings).toEqual([
      'warning: --max-staleness 10s cannot be kept for 30 streams: the request budget (15/5s) checks at most 14 a pass, so a stream may wait 15s; set --max-staleness to 15s or more, or raise --rate-limit if the service allows it',
    ]);
  });

  it('401 stops watch with exit 3', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const run = await cli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '1s'], { env: envFor(s.url, 'wrong') });
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/401 Unauthorized/);
  });
});
