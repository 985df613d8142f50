/**
 * `export -o` never puts its file in place of something that is not a regular file it may replace:
 * the database being exported or one of its files (-wal, -shm, the lock), by any name (a link, a hard
 * link, another spelling of the path), a named pipe, or a link to a device. Each is exit 2 before any
 * work, and the database is untouched: `export --db m.db -o m.db` must never replace the mirror with
 * a CSV file, nor `-o fifo` replace the pipe with a file (its reader would hang).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { exportTable } from '../../../src/commands/export.js';
import { resolveSettings } from '../../../src/config/settings.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

let dir: string;
let db: string;

beforeEach(() => {
  dir = tempDir();
  db = join(dir, 'm.db');
  const d = openDatabase(db);
  d.prepare("INSERT INTO campaigns (id, name, raw, seen_at) VALUES ('c1', 'one', '{}', '2026-01-01')").run();
  d.close();
});

async function exportTo(output: string) {
  return runCli(['export', '--db', db, '--table', 'campaigns', '-o', output], { cwd: dir });
}

/** The mirror still opens and holds its row. */
function intact(): void {
  const d = openDatabase(db, { mustExist: true, readonly: true });
  try {
    expect(d.prepare('SELECT id FROM campaigns').pluck().all()).toEqual(['c1']);
  } finally {
    d.close();
  }
}

describe('export -o onto the database or one of its files', () => {
  const cases: Array<[string, () => string]> = [
    ['the database itself', () => db],
    ['the database by a relative path', () => relative(dir, db)],
    ['its -wal (absent)', () => `${db}-wal`],
    ['its -shm', () => `${db}-shm`],
    ['its lock file', () => `${db}.lock`],
    [
      'a link to the database',
      () => {
        symlinkSync(db, join(dir, 'out.csv'));
        return join(dir, 'out.csv');
      },
    ],
    [
      'a hard link to the database',
      () => {
        linkSync(db, join(dir, 'hard.csv'));
        return join(dir, 'hard.csv');
      },
    ],
  ];
  it.each(cases)('%s: exit 2, and the mirror is untouched', async (_, make) => {
    const before = readFileSync(db);
    const target = make();
    const run = await exportTo(target);
    expect(run.stderr).toBe(
      `campaign-sync: -o ${target}: is the database being exported (${db}) or one of its files; give another file name\n`,
    );
    expect(run.code).toBe(2);
    expect(readFileSync(db).equals(before)).toBe(true);
    intact();
  });

  it('a database given through a link is found behind it too', async () => {
    const link = join(dir, 'link.db');
    symlinkSync(db, link);
    const run = await runCli(['export', '--db', link, '--table', 'campaigns', '-o', db]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is the database being exported/);
    intact();
  });
});

describe('export -o onto a pipe or a device', () => {
  it('a named pipe: exit 2, and the pipe stays a pipe', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const run = await exportTo(fifo);
    expect(run.stderr).toBe(
      `campaign-sync: -o ${fifo}: is a named pipe: export puts a whole file in its place; to write into a pipe or a device, leave out -o and redirect stdout\n`,
    );
    expect(run.code).toBe(2);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('a link to a device: exit 2, and the link stays', async () => {
    const link = join(dir, 'null');
    symlinkSync('/dev/null', link);
    const run = await exportTo(link);
    expect(run.stderr).toMatch(/-o .*null: is a device: export puts a whole file in its place/);
    expect(run.code).toBe(2);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('a regular file and a new name are still written', async () => {
    const run = await exportTo(join(dir, 'out.csv'));
    expect(run.code).toBe(0);
    expect(readFileSync(join(dir, 'out.csv'), 'utf8')).toMatch(/^id,/);
    const again = await exportTo(join(dir, 'out.csv'));
    expect(again.code).toBe(0);
  });
});

describe("export -o '' and -o -", () => {
  it('an empty file name is a usage error naming -o (exit 2), and nothing is written', async () => {
    const run = await exportTo('');
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('campaign-sync: -o: the file name is empty; give a file, or - for stdout\n');
    expect(run.stdout).toBe('');
    expect(readdirSync(dir).filter((f) => !f.startsWith('m.db'))).toEqual([]);
  });

  it('-o - is stdout: the rows there, no file named -', async () => {
    const run = await exportTo('-');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^id,name,.*\r\nc1,one,/);
    expect(existsSync(join(dir, '-'))).toBe(false);
    // A file named - is still reachable as ./-.
    const file = await exportTo('./-');
    expect(file.code).toBe(0);
    expect(readFileSync(join(dir, '-'), 'utf8')).toMatch(/^id,/);
  });

  it('-o - follows the rules of stdout: --json refused, Parquet refused on a terminal', async () => {
    const json = await runCli(['export', '--db', db, '--table', 'campaigns', '-o', '-', '--json'], { cwd: dir });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: expect.stringContaining('(-o - is stdout)'), exit_code: 2 });
    const terminal = Object.assign(new Writable({ write: (_c, _e, done) => done() }), { isTTY: true });
    await expect(
      exportTable(resolveSettings('export', { db, table: 'campaigns', format: 'parquet', output: '-' }), terminal),
    ).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/binary.*-o <file>/),
    });
    expect(existsSync(join(dir, '-'))).toBe(false);
  });
});
