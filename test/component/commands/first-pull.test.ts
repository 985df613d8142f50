/**
 * Nothing left by a failure: a first pull (or watch) that fails before committing anything takes back
 * every file it made (the database, its -wal and -shm, the lock file and its .info; NDJSON files, the
 * folder's lock and the --out folders it created), and a refused --db gets no lock file beside it.
 * What was there before stays, and so does a mirror that holds anything. The database's and the lock
 * file's removal with a second connection or process about: test/component/store/sqlite/discard.test.ts.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

/** A loopback port that was free a moment ago: connection refused. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
}

/** Every name under `dir`, folders and dot files included, sorted. */
function tree(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

async function wrongKey() {
  const s = await sim({ campaigns: 2, records: 5 });
  return { s, env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: 'not-the-key' } };
}

describe('a first pull that fails leaves nothing', () => {
  it('a wrong key (401) in an empty folder leaves it empty; status then says there is no database', async () => {
    const { env } = await wrongKey();
    const dir = tempDir();
    const r = await runCli(['pull'], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(3);
    expect(tree(dir)).toEqual([]);
    const status = await runCli(['status'], { cwd: dir });
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/no database at \.\/campaign-sync\.db/);
  });

  it("cron's line with --metrics-file: the metrics file tells the failure, and no mirror is left", async () => {
    const { env } = await wrongKey();
    const dir = tempDir();
    const r = await runCli(['pull', '--metrics-file', 'm.prom'], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(3);
    expect(tree(dir)).toEqual(['m.prom']);
    expect(readFileSync(join(dir, 'm.prom'), 'utf8')).toMatch(/^campaign_sync_passes_total\{result="failed"\} 1$/m);
  });

  it('a refused connection leaves the folder empty', async () => {
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: `http://127.0.0.1:${await closedPort()}`, CAMPAIGN_SYNC_API_KEY: 'k' };
    const r = await runCli(['pull', '--max-retries', '0'], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    expect(tree(dir)).toEqual([]);
  });

  it('watch stopped by a 401 leaves nothing either', async () => {
    const { env } = await wrongKey();
    const dir = tempDir();
    const r = await runCli(['watch', '--db', join(dir, 'm.db'), '--max-cycles', '1'], { env });
    expect(r.code, r.stderr).toBe(3);
    expect(tree(dir)).toEqual([]);
  });

  it('NDJSON: the files, the folder lock and the --out folders it made go; a folder that was there stays, with what it held', async () => {
    const { env } = await wrongKey();
    const dir = tempDir();
    // Folders it makes (out/a/b), under one that was there (out).
    mkdirSync(join(dir, 'out'));
    let r = await runCli(['pull', '--db', join(dir, 'm.db'), '--out', join(dir, 'out', 'a', 'b')], { env });
    expect(r.code, r.stderr).toBe(3);
    expect(tree(dir)).toEqual(['out']);
    // A folder of the user's, holding a file of theirs: both stay as they were.
    writeFileSync(join(dir, 'out', 'notes.txt'), 'mine');
    r = await runCli(['pull', '--db', join(dir, 'm.db'), '--out', join(dir, 'out')], { env });
    expect(r.code, r.stderr).toBe(3);
    expect(tree(dir)).toEqual(['out', join('out', 'notes.txt')]);
    expect(readFileSync(join(dir, 'out', 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('--db naming a file that is not a database: exit 2, the file untouched, no lock file beside it', async () => {
    const { env } = await wrongKey();
    const dir = tempDir();
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'my notes\n');
    const r = await runCli(['pull', '--db', notes], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/notes\.txt is not a campaign-sync database/);
    expect(tree(dir)).toEqual(['notes.txt']);
    expect(readFileSync(notes, 'utf8')).toBe('my notes\n');
  });

  it('what was there before stays: a mirror left by a killed first run, and one that holds records', async () => {
    const { s, env } = await wrongKey();
    const dir = tempDir();
    // A first run killed (-9) after it made the database: its files are there when the next run starts.
    const left = join(dir, 'left.db');
    openDatabase(left).close();
    const before = tree(dir);
    expect((await runCli(['pull', '--db', left], { env })).code).toBe(3);
    expect(tree(dir)).toEqual([...before, 'left.db.lock'].sort());

    const kept = join(dir, 'kept.db');
    const good = await runCli(['pull', '--db', kept], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(good.code, good.stderr).toBe(0);
    const files = tree(dir);
    expect(files).toContain('kept.db');
    expect((await runCli(['pull', '--db', kept], { env })).code).toBe(3);
    expect(tree(dir)).toEqual(files);
    const status = await runCli(['status', '--db', kept, '--json']);
    expect(JSON.parse(status.stdout).streams).toHaveLength(2);
  });
});
