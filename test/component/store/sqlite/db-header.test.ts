/**
 * A file that is not empty and not an SQLite database is never opened as one: exit 2, the file
 * unchanged. SQLite itself refused only files from some size on; a few bytes (`echo > m.db`, a typo
 * naming a notes file) it took for an empty database and overwrote.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { SCHEMA_VERSION } from '../../../../src/store/sqlite/schema.js';
import { tempDir } from '../../../helpers/index.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describe('a --db that is someone else’s file', () => {
  it.each([['\n'], ['x'], ['notes: call back'], ['SQLite format'], ['SQLite format 2\0 and more'], ['a'.repeat(4096)]])(
    '%j: a usage error, the file unchanged',
    (content) => {
      const path = join(tempDir(), 'm.db');
      writeFileSync(path, content);
      expect(() => openDatabase(path)).toThrow(
        `${path} is not a campaign-sync database: it is not an SQLite file; nothing was written to it`,
      );
      expect(() => openDatabase(path, { mustExist: true, readonly: true })).toThrow(/is not an SQLite file/);
      expect(readFileSync(path, 'utf8')).toBe(content);
    },
  );

  it('an empty file is a new database, and a database opens again', () => {
    const path = join(tempDir(), 'm.db');
    writeFileSync(path, '');
    openDatabase(path).close();
    openDatabase(path).close();
    openDatabase(path, { mustExist: true, readonly: true }).close();
  });

  it('pull on a one-byte file exits 2 before any request, and leaves it', async () => {
    const path = join(tempDir(), 'm.db');
    writeFileSync(path, '\n');
    const r = await runCli(['pull', '--db', path], { env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`campaign-sync: ${path} is not a campaign-sync database: it is not an SQLite file; nothing was written to it\n`);
    expect(readFileSync(path, 'utf8')).toBe('\n');
  });
});

describe('an empty --db file: not a mirror yet', () => {
  const emptyDb = () => {
    const path = join(tempDir(), 'm.db');
    writeFileSync(path, '');
    return path;
  };
  const notYet = (path: string) =>
    `${path} is empty: it is not a campaign-sync mirror yet (run \`campaign-sync pull\` first, or pass --db)`;

  it.each([[['status']], [['status', '--json']], [['export', '--table', 'campaigns']], [['reset', '--all']]])(
    '%j: exit 2 saying so, the file left empty',
    async (args) => {
      const path = emptyDb();
      const r = await runCli([...args, '--db', path]);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`campaign-sync: ${notYet(path)}\n`);
      if (args.includes('--json')) expect(JSON.parse(r.stdout)).toEqual({ error: notYet(path), exit_code: 2 });
      expect(statSync(path).size).toBe(0);
    },
  );

  it('status --check: nothing to check is CRITICAL (5), as a mirror with no streams yet; --json too', async () => {
    const path = emptyDb();
    const r = await runCli(['status', '--check', '--db', path]);
    expect(r.code).toBe(5);
    expect(r.stdout).toBe('CRITICAL: 0 of 0 streams healthy (max age 10m)\n');
    expect(r.stderr).toBe('');
    const j = await runCli(['status', '--check', '--json', '--db', path]);
    expect(j.code).toBe(5);
    expect(JSON.parse(j.stdout)).toMatchObject({ status: 'down', exit_code: 5, healthy: 0, streams: 0, unhealthy: [] });
    expect(statSync(path).size).toBe(0);
  });

  it('pull into it makes it a new mirror', async () => {
    const path = emptyDb();
    const s = await sharedSim({ campaigns: 1, records: 3 });
    const r = await runCli(['pull', '--quiet', '--base-url', s.url, '--db', path], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(r.code).toBe(0);
    const status = await runCli(['status', '--json', '--db', path]);
    expect(JSON.parse(status.stdout).streams).toHaveLength(1);
  });
});

describe('a hand-edited schema version (PRAGMA user_version)', () => {
  const mirrorAt = (version: number) => {
    const path = join(tempDir(), 'm.db');
    const db = openDatabase(path);
    db.prepare("INSERT INTO campaigns (id, name, raw) VALUES ('c1', 'one', '{}')").run();
    db.pragma(`user_version = ${version}`);
    db.close();
    return path;
  };

  it('negative: not a mirror, said in words (no JavaScript internals), for writers and readers alike', () => {
    const path = mirrorAt(-1);
    const message = `${path} is not a campaign-sync mirror: its schema version (PRAGMA user_version) is -1, and campaign-sync writes 1 to ${SCHEMA_VERSION}`;
    expect(() => openDatabase(path)).toThrow(message);
    expect(() => openDatabase(path, { mustExist: true, readonly: true })).toThrow(message);
  });

  it('older than its tables: exit 2 (not a storage failure), the data kept and the version unchanged', async () => {
    const path = mirrorAt(4);
    const r = await runCli(['reset', '--all', '--db', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^campaign-sync: ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a mirror this campaign-sync can open: its tables do not match its schema version 4 \\(PRAGMA user_version\\); upgrading it from schema 4 to 5 failed and was rolled back: .+\n$`,
      ),
    );
    const pull = await runCli(['pull', '--db', path], {
      env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(pull.code).toBe(2);
    const db = openDatabase(path, { mustExist: true, readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(4);
    expect(db.prepare('SELECT name FROM campaigns').pluck().all()).toEqual(['one']);
    db.close();
  });

  it('newer: still exit 2 asking for an upgrade', async () => {
    const path = mirrorAt(99);
    const r = await runCli(['status', '--db', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/was written by a newer campaign-sync \(schema 99, this one knows \d+\); upgrade\n$/);
  });
});

describe('a --db that is not a regular file (a named pipe, a device)', () => {
  // A named pipe blocked the open for ever, and the signal handlers of the CLI could not run while
  // it did: `timeout 5 campaign-sync status` hung until SIGKILL.
  const fifo = () => {
    const path = join(tempDir(), 'm.db');
    execFileSync('mkfifo', [path]);
    return path;
  };

  it.skipIf(process.platform === 'win32').each([[['status']], [['export', '--table', 'campaigns']], [['pull']], [['reset', '--all']]])(
    '%j on a named pipe: exit 2 at once, saying so',
    async (args) => {
      const path = fifo();
      const r = await runCli([...args, '--db', path], {
        env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' },
        timeoutMs: 15_000,
      });
      expect(r.signal).toBeNull();
      expect(r.stderr).toBe(`campaign-sync: ${path} is a named pipe, not a database file: give the path of a file, or of one to create\n`);
      expect(r.code).toBe(2);
    },
  );

  it.skipIf(process.platform === 'win32')('a named pipe as the run lock file: exit 74 naming it, at once', async () => {
    const path = join(tempDir(), 'm.db');
    execFileSync('mkfifo', [`${path}.lock`]);
    const r = await runCli(['pull', '--db', path], {
      env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' },
      timeoutMs: 15_000,
    });
    expect(r.stderr).toBe(`campaign-sync: the lock file ${path}.lock is a named pipe, not a file: remove it and run again\n`);
    expect(r.code).toBe(74);
  });

  it.skipIf(process.platform === 'win32')('a character device (/dev/null) is refused as well, by the store itself', () => {
    expect(() => openDatabase('/dev/null')).toThrow('/dev/null is a character device, not a database file');
    expect(() => openDatabase('/dev/null', { mustExist: true, readonly: true })).toThrow(/is a character device/);
  });
});
