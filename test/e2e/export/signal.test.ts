/**
 * SIGINT/SIGTERM during `export`: the export stops between two chunks, exits 130 with one line, and
 * leaves no file at -o (a previous file of that name untouched) and no partial file. The first signal
 * counts: an export that ran on to its end and exited 0 would pass a stopped job for a finished one.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { between, untilAborted } from '../../../src/export/interrupt.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { BIN, tempDir } from '../../helpers/index.js';

let dir: string;
let dbPath: string;
let shadowedPath: string;

beforeAll(() => {
  dir = tempDir();
  dbPath = join(dir, 'mirror.db');
  const db = openDatabase(dbPath);
  // 60,000 rows of ~1 kB: long enough to export (a second or more) that a signal lands in the middle of it.
  db.exec(`
    WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 60000)
    INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, skill_label, score, rationale, evaluated_at, campaign_id, position)
    SELECT 'session_result', 'p' || x, 'e' || x, 'k', 'label, "quoted"', x / 7.0, printf('%.1000c', 'r') || x, '2026-01-02T03:04:05Z', 'c1', x FROM n`);
  db.close();
  shadowedPath = join(dir, 'shadowed.db');
  copyFileSync(dbPath, shadowedPath);
  const shadowed = openDatabase(shadowedPath);
  shadowed.exec(
    'ALTER TABLE eval_results ADD COLUMN rowid TEXT; ALTER TABLE eval_results ADD COLUMN _rowid_ TEXT; ALTER TABLE eval_results ADD COLUMN oid TEXT',
  );
  shadowed.close();
});

/** Starts an export to `out`, sends `signal` once its partial file holds 1 MB, and waits for its end. */
async function interrupt(format: string, out: string, signal: NodeJS.Signals, db: string) {
  const child = spawn(process.execPath, [BIN, 'export', '--db', db, '--table', 'eval-results', '--format', format, '-o', out], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const ended = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let sent = false;
  let sentAt = 0;
  for (let i = 0; i < 2000 && !sent && child.exitCode === null; i++) {
    const partial = readdirSync(dir).find((f) => f.endsWith('.partial'));
    if (partial !== undefined) {
      let size = 0;
      try {
        size = statSync(join(dir, partial)).size;
      } catch {
        // renamed or removed between the listing and the stat
      }
      if (size >= 1 << 20) {
        sentAt = performance.now();
        child.kill(signal);
        sent = true;
      }
    }
    if (!sent) await new Promise((r) => setTimeout(r, 5));
  }
  const [code] = await ended;
  return { code, stderr, sent, stoppedMs: performance.now() - sentAt };
}

describe('a signal during export', () => {
  // `shadowed`: columns named rowid, _rowid_ and oid hide the row id, so CSV is read row by row.
  for (const [format, signal, shadowed] of [
    ['csv', 'SIGINT', false],
    ['ndjson', 'SIGTERM', false],
    ['parquet', 'SIGINT', false],
    ['csv', 'SIGINT', true],
  ] as const) {
    it(`${format}${shadowed ? ' read row by row' : ''}, ${signal}: exits 130 at once, no file at -o (the previous one untouched), no partial left`, async () => {
      const out = join(dir, `out${shadowed ? '-shadowed' : ''}.${format}`);
      writeFileSync(out, 'the previous export\n', { mode: 0o600 });
      const r = await interrupt(format, out, signal, shadowed ? shadowedPath : dbPath);
      expect(r.sent, 'the export ended before 1 MB was written: the fixture is too small').toBe(true);
      expect(r.code, r.stderr).toBe(130);
      expect(r.stderr.trim()).toBe(`campaign-sync: export interrupted: ${out} was not written`);
      // Stopped between two chunks: an export that ran on to its end would have committed its file and
      // exited 0 (above); the bound is loose for a busy CI machine (locally 0.3-1.4 s).
      expect(r.stoppedMs).toBeLessThan(5000);
      expect(readFileSync(out, 'utf8')).toBe('the previous export\n');
      expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
    });
  }

  it('an export left alone still completes (the check between chunks costs nothing else)', async () => {
    const out = join(dir, 'whole.csv');
    const child = spawn(process.execPath, [BIN, 'export', '--db', dbPath, '--table', 'eval-results', '-o', out, '--quiet'], {
      stdio: 'ignore',
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const text = readFileSync(out, 'utf8');
    expect(text.split('\r\n').length - 2).toBe(60_000);
  });
});

describe('the writers between two chunks', () => {
  it('between() lets a signal in and throws its abort error; without a signal it does nothing', async () => {
    await expect(between(undefined)).resolves.toBeUndefined();
    const controller = new AbortController();
    await expect(between(controller.signal)).resolves.toBeUndefined();
    // Aborted by a handler that runs only when the event loop turns (as a process signal's does).
    setImmediate(() => controller.abort());
    await expect(between(controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it("untilAborted() stops an asynchronous source (PostgreSQL's rows) at the next row and closes it", async () => {
    let closed = false;
    const controller = new AbortController();
    async function* source() {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        closed = true;
      }
    }
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const row of untilAborted(source(), controller.signal)) {
          seen.push(row);
          if (row === 2) controller.abort();
        }
      })(),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual([0, 1, 2]);
    expect(closed).toBe(true);
  });
});

describe('a signal during an export to stdout whose reader does not read (`export | less`)', () => {
  it('exits 130 at once instead of waiting for the reader', async () => {
    const child = spawn(process.execPath, [BIN, 'export', '--db', dbPath, '--table', 'eval-results'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const ended = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    // Rows arrive; nothing reads them, so the pipe fills and the export waits for room.
    await once(child.stdout, 'readable');
    await new Promise((r) => setTimeout(r, 500));
    expect(child.exitCode).toBeNull();
    child.kill('SIGINT');
    const timeout = new Promise<'hung'>((r) => setTimeout(() => r('hung'), 5000));
    const result = await Promise.race([ended, timeout]);
    if (result === 'hung') child.kill('SIGKILL');
    expect(result).toEqual([130, null]);
    expect(stderr.trim()).toBe('campaign-sync: export interrupted: stdout got part of the rows');
    child.stdout.destroy();
  });
});
