/**
 * The database or the NDJSON folder moved or removed while `watch` runs: watch
 * stops with exit 74 and one line saying where the data is, and a moved database holds every commit.
 */
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { afterWatchStart, cli, type RunningCli, sim, startCli, tempDir } from '../helpers/index.js';

function envFor(url: string, key: string) {
  return { CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: key };
}

/** The new records each pass reported (--json lines on stdout). */
function reportedNew(run: RunningCli): number {
  let total = 0;
  for (const line of run.stdout().trim().split('\n')) {
    const pass = JSON.parse(line) as { streams?: Array<{ new: number }> };
    for (const s of pass.streams ?? []) total += s.new;
  }
  return total;
}

/** The records a database holds (after an integrity check), opened as a reader would open it. */
function storedRecords(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const rows = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
    const total = rows('session_results') + rows('role_results');
    expect(db.prepare('SELECT sum(records) FROM sync_state').pluck().get()).toBe(total);
    return total;
  } finally {
    db.close();
  }
}

describe('watch: the mirror moved or removed while it runs', () => {
  it('a moved database: the next pass stops with 74, naming the new name, and that file holds every committed record', async () => {
    const s = await sim({ campaigns: 2, records: 30, growth: { count: 20, windowMs: 1000 } });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const run = startCli(['watch', '--db', db, '--interval', '1s', '--max-cycles', '8', '--json'], { env: envFor(s.url, s.apiKey) });
    await run.waitFor(/"pass":2,/);
    renameSync(db, join(dir, 'moved.db'));
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(74);
    expect(afterWatchStart(run.stderr()).trim()).toMatch(
      /^campaign-sync: \S*m\.db was moved to \S*moved\.db while it was being synced: that file holds everything committed; nothing more was written \(go on with --db \S*moved\.db, or move it back\)$/,
    );
    // SQLite does not checkpoint a moved database on close, leaving every commit in m.db-wal: without
    // the copy, moved.db would be a 4 KB shell without tables.
    const stored = storedRecords(join(dir, 'moved.db'));
    expect(stored).toBeGreaterThan(60);
    expect(stored).toBe(reportedNew(run));
    // Nothing stranded under the old name.
    expect(existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0).toBe(0);
  });

  it('moved while watch sleeps, then SIGTERM: the final close makes the moved file complete and exits 74', async () => {
    const s = await sim({ campaigns: 2, records: 40 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const run = startCli(['watch', '--db', db, '--interval', '1h', '--json'], { env: envFor(s.url, s.apiKey) });
    await run.waitFor(/"pass":1,/);
    renameSync(db, join(dir, 'moved.db'));
    run.child.kill('SIGTERM');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(74);
    expect(run.stderr()).toMatch(/m\.db was moved to \S*moved\.db while it was being synced/);
    expect(storedRecords(join(dir, 'moved.db'))).toBe(80);
    expect(reportedNew(run)).toBe(80);
  });

  it('a removed database: the next pass stops with 74 and says it was removed', async () => {
    const s = await sim({ campaigns: 1, records: 10, growth: { count: 5, windowMs: 1000 } });
    const db = join(tempDir(), 'm.db');
    const run = startCli(['watch', '--db', db, '--interval', '1s', '--max-cycles', '6'], { env: envFor(s.url, s.apiKey) });
    await run.waitFor(/pass 1:/);
    for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(74);
    expect(afterWatchStart(run.stderr()).trim()).toMatch(
      /^campaign-sync: \S*m\.db was removed \(or moved to another file system\) while it was being synced; nothing more was written; what it held went with it \(run again to start a new mirror there\)$/,
    );
    expect(run.stdout()).not.toMatch(/pass 3:/);
  });

  it('moved to another file system (a copy, then the name removed): the WAL that held the newest commits is kept, and recovers them', async () => {
    const s = await sim({ campaigns: 2, records: 40 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const run = startCli(['watch', '--db', db, '--interval', '1h', '--json'], { env: envFor(s.url, s.apiKey) });
    await run.waitFor(/"pass":1,/);
    // What `mv` does across file systems; the main file holds none of the commits yet (all in the WAL).
    const copy = join(tempDir(), 'elsewhere.db');
    copyFileSync(db, copy);
    rmSync(db);
    run.child.kill('SIGTERM');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(74);
    // The WAL must be kept aside, not copied into the removed file and emptied: that copy would have no tables.
    const kept = /kept as (\S+): to recover them, put the database file back at \S+ and rename/.exec(run.stderr())?.[1];
    expect(kept, run.stderr()).toBeDefined();
    expect((statSync(kept as string).mode & 0o777).toString(8)).toBe('600');
    copyFileSync(copy, db);
    renameSync(kept as string, `${db}-wal`);
    rmSync(`${db}-shm`, { force: true });
    expect(storedRecords(db)).toBe(80);
    expect(reportedNew(run)).toBe(80);
  });

  it('its WAL alone removed: the commits only the open file still held are copied into the database, then 74', async () => {
    const s = await sim({ campaigns: 2, records: 40, growth: { count: 5, windowMs: 1000 } });
    const db = join(tempDir(), 'm.db');
    const run = startCli(['watch', '--db', db, '--interval', '1s', '--max-cycles', '6', '--json'], { env: envFor(s.url, s.apiKey) });
    await run.waitFor(/"pass":1,/);
    // Every commit is in the WAL (the database file is a page or two): went unnoticed, and a kill -9 lost it all.
    rmSync(`${db}-wal`);
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(74);
    expect(afterWatchStart(run.stderr()).trim()).toMatch(
      /m\.db-wal was removed or replaced while \S*m\.db was being synced: every commit it held was copied into \S*m\.db first; nothing more was written$/,
    );
    expect(storedRecords(db)).toBe(reportedNew(run));
  });

  it('NDJSON: a removed --out folder stops watch with 74; a moved one is named with its new place', async () => {
    const s = await sim({ campaigns: 1, records: 10, growth: { count: 5, windowMs: 1000 } });
    for (const how of ['rm', 'mv'] as const) {
      const dir = tempDir();
      const out = join(dir, 'out');
      const args = ['watch', '--db', join(dir, 'm.db'), '--format', 'ndjson', '--out', out, '--interval', '1s', '--max-cycles', '6'];
      const run = startCli(args, { env: envFor(s.url, s.apiKey) });
      await run.waitFor(/pass 1:/);
      if (how === 'rm') rmSync(out, { recursive: true });
      else renameSync(out, join(dir, 'out2'));
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(74);
      if (how === 'rm') expect(run.stderr()).toMatch(/^campaign-sync: the NDJSON folder \S*out was removed while it was being synced: /m);
      else {
        expect(run.stderr()).toMatch(
          /^campaign-sync: the NDJSON folder \S*out was moved to \S*out2 while it was being synced: its files there hold every committed line; nothing more was written \(move it back to \S*out to go on\)$/m,
        );
        // Moved back, the folder is this database's again: the next run goes on from it.
        renameSync(join(dir, 'out2'), out);
        expect(readFileSync(join(out, 'campaigns.ndjson'), 'utf8')).toMatch(/"id"/);
        expect((await cli(['pull', ...args.slice(1, 7)], { env: envFor(s.url, s.apiKey) })).code).toBe(0);
      }
    }
  });

  it('pull: a database moved while it runs is made complete at its new name before the close, exit 74', async () => {
    // Slow replies keep the pull running when the file is moved.
    const s = await startSimulator({ campaigns: 4, records: 400, faults: { slow: 1 }, slowMs: 100 });
    try {
      const dir = tempDir();
      const db = join(dir, 'm.db');
      const run = startCli(['pull', '--db', db, '--page-size', '20'], { env: envFor(s.url, s.apiKey) });
      for (const t0 = Date.now(); !existsSync(`${db}-wal`) && Date.now() - t0 < 30_000; ) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 300));
      renameSync(db, join(dir, 'moved.db'));
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(74);
      expect(run.stderr()).toMatch(/m\.db was moved to \S*moved\.db while it was being synced: that file holds everything committed/);
      // The pull went on to the end into the moved file: all of it is there.
      expect(storedRecords(join(dir, 'moved.db'))).toBe(1600);
    } finally {
      await s.close();
    }
  });
});
