/**
 * Local storage failures: each one exits 74 with one line that names what failed and
 * the path the user gave, and a mirror on read-only storage stays readable by `status` and `export`.
 * Tests run as root, which ignores permission bits: read-only storage is a real read-only mount, and
 * "permission denied" is the CLI run as `nobody`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { uncaughtStorageError } from '../../../src/main.js';
import { RunLock } from '../../../src/store/sqlite/run-lock.js';
import { BIN, type CliResult, tempDir } from '../../helpers/index.js';
import { mountReadOnly, mountTmpfs } from '../../helpers/mounts.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

/** Runs the built CLI as `nobody` when we are root (so that permission bits apply), else as ourselves. */
function cliAsUser(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const argv = [process.execPath, BIN, ...args];
  const [cmd, ...rest] = ROOT ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...argv] : argv;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, rest, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** A temp folder the CLI can use whoever it runs as. */
function sharedDir(): string {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  if (ROOT) chownSync(dir, NOBODY, NOBODY);
  return dir;
}

/** Exit 74 and exactly one line on stderr, matching `pattern`. */
function expectStorageFailure(r: CliResult, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(74);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(/^campaign-sync: /);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/internal error|disk I\/O error/);
}

async function mirror(dir: string, name = 'm.db') {
  const s = await sharedSim({ campaigns: 2, records: 20 });
  const db = join(dir, name);
  const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
  const r = await runCli(['pull', '--db', db, '--quiet'], { env });
  expect(r.code, r.stderr).toBe(0);
  return { db, env };
}

/** A pull that fails before its first request: nothing listens on port 1. */
const deadApi = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:1', CAMPAIGN_SYNC_API_KEY: 'k' };

describe('storage failures at open and lock time exit 74', () => {
  it('a missing folder is named, not the lock file beside the database', async () => {
    const dir = tempDir();
    const db = join(dir, 'nodir', 'x.db');
    for (const args of [['pull'], ['watch', '--max-cycles', '1']]) {
      const r = await runCli([...args, '--db', db], { env: deadApi });
      expectStorageFailure(r, new RegExp(`${join(dir, 'nodir')}.* does not exist`));
      expect(r.stderr).not.toContain('.lock');
    }
    const s = await sharedSim({ campaigns: 1, records: 1 });
    const campaigns = await runCli(['campaigns', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expectStorageFailure(campaigns, new RegExp(`${join(dir, 'nodir')}.* does not exist`));
    // Reading commands: a database that does not exist is a wrong path (exit 2), whatever the reason.
    const status = await runCli(['status', '--db', db]);
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/no database at .*nodir\/x\.db \(run `campaign-sync pull` first/);
    expect(existsSync(join(dir, 'nodir'))).toBe(false);
  });

  it('a folder given as --db is named as a folder, and nothing is created beside it', async () => {
    const dir = tempDir();
    const adir = join(dir, 'adir');
    mkdirSync(adir);
    expectStorageFailure(await runCli(['pull', '--db', adir], { env: deadApi }), new RegExp(`${adir} is a folder, not a database file`));
    expect(existsSync(`${adir}.lock`)).toBe(false);
    for (const args of [['status'], ['export', '--table', 'campaigns'], ['reset', '--all']]) {
      expectStorageFailure(await runCli([...args, '--db', adir]), new RegExp(`${adir} is a folder, not a database file`));
    }
  });

  it('garbage in <db>.lock names the lock file and says when to remove it', async () => {
    const dir = tempDir();
    const { db, env } = await mirror(dir);
    writeFileSync(`${db}.lock`, 'this is not a lock file, it is garbage from somewhere else\n'.repeat(20));
    for (const args of [['pull'], ['reset', '--all']]) {
      const r = await runCli([...args, '--db', db], { env });
      expectStorageFailure(r, new RegExp(`${db}\\.lock is not a campaign-sync lock file.*remove it if no campaign-sync is running`));
    }
    expect(() => RunLock.acquire(db)).toThrow(expect.objectContaining({ name: 'StorageError', exitCode: 74 }));
    rmSync(`${db}.lock`);
    expect((await runCli(['pull', '--db', db, '--quiet'], { env })).code).toBe(0);
  });

  it('a full disk at open time is a storage failure naming the path, not "not a campaign-sync database"', async (ctx) => {
    const dir = tempDir();
    const undo = mountTmpfs(dir, 64);
    if (!undo) return ctx.skip();
    try {
      // Fill the file system to the last block, then try to create a mirror on it.
      try {
        writeFileSync(join(dir, 'filler'), Buffer.alloc(1024 * 1024));
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const db = join(dir, 'm.db');
      const r = await runCli(['pull', '--db', db], { env: deadApi });
      expectStorageFailure(r, new RegExp(`${dir}/m\\.db.*(no space left on the device|database or disk is full)`));
      expect(r.stderr).not.toMatch(/not a campaign-sync database/);
    } finally {
      undo();
    }
  });
});

describe('a mirror on read-only storage', () => {
  it('stays readable by status and export; writers exit 74 naming the path', async (ctx) => {
    const dir = tempDir();
    const { db, env } = await mirror(dir);
    const undo = mountReadOnly(dir);
    if (!undo) return ctx.skip();
    try {
      const status = await runCli(['status', '--db', db, '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).streams).toHaveLength(2);
      const exported = await runCli(['export', '--db', db, '--table', 'campaigns', '--format', 'ndjson']);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout.trim().split('\n')).toHaveLength(2);

      const pull = await runCli(['pull', '--db', db], { env });
      expectStorageFailure(pull, new RegExp(`${db}.*read-only file system \\(EROFS\\)`));
      const reset = await runCli(['reset', '--all', '--db', db]);
      expectStorageFailure(reset, new RegExp(`cannot open ${db} for writing: read-only file system \\(EROFS\\)`));
      expect(reset.stderr).not.toMatch(/cannot create/);
    } finally {
      undo();
    }
  });

  it('a WAL mirror copied without its -wal/-shm files gets a message that says so', async (ctx) => {
    const dir = tempDir();
    const { db } = await mirror(dir);
    const bare = join(tempDir(), 'copy');
    mkdirSync(bare);
    copyFileSync(db, join(bare, 'm.db'));
    const undo = mountReadOnly(bare);
    if (!undo) return ctx.skip();
    try {
      const r = await runCli(['status', '--db', join(bare, 'm.db')]);
      expectStorageFailure(
        r,
        new RegExp(`cannot read ${bare}/m\\.db on read-only storage: its m\\.db-wal and m\\.db-shm files are missing`),
      );
    } finally {
      undo();
    }
  });
});

describe('permission denied', () => {
  it('a read-only database in a read-only folder: status and export work, pull says permission denied (74)', async () => {
    const dir = sharedDir();
    const { db, env } = await mirror(dir);
    if (ROOT) for (const f of readdirSync(dir)) chownSync(join(dir, f), NOBODY, NOBODY);
    chmodSync(db, 0o400);
    chmodSync(dir, 0o555);
    try {
      const status = await cliAsUser(['status', '--db', db, '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).streams).toHaveLength(2);
      const exported = await cliAsUser(['export', '--db', db, '--table', 'campaigns', '--format', 'ndjson']);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout.trim().split('\n')).toHaveLength(2);
      const reset = await cliAsUser(['reset', '--all', '--db', db]);
      expectStorageFailure(reset, new RegExp(`cannot open ${db} for writing: permission denied \\(EACCES\\)`));
      const pull = await cliAsUser(['pull', '--db', db], env);
      expectStorageFailure(pull, new RegExp(`cannot lock ${db}: the folder ${dir} is not writable`));
    } finally {
      chmodSync(dir, 0o755);
    }
  });

  it('a copy without its -wal/-shm files in a folder we may not write: the same message as on read-only storage', async () => {
    const dir = sharedDir();
    const { db } = await mirror(dir);
    const bare = sharedDir();
    copyFileSync(db, join(bare, 'm.db'));
    if (ROOT) chownSync(join(bare, 'm.db'), NOBODY, NOBODY);
    chmodSync(bare, 0o555);
    try {
      const r = await cliAsUser(['status', '--db', join(bare, 'm.db')]);
      expectStorageFailure(r, /on read-only storage: its m\.db-wal and m\.db-shm files are missing/);
    } finally {
      chmodSync(bare, 0o755);
    }
  });

  it("another user's private database: status names it and says permission denied (74)", async () => {
    const dir = sharedDir();
    const { db } = await mirror(dir);
    if (ROOT) chownSync(db, 0, 0);
    else chmodSync(db, 0o000);
    const r = await cliAsUser(['status', '--db', db]);
    expectStorageFailure(r, new RegExp(`cannot read ${db}: permission denied \\(EACCES\\)`));
  });
});

describe('the safety net in main', () => {
  it('an fs or SQLite error nobody wrapped is a storage failure (74) naming the file, not an internal error', () => {
    let fsError: unknown;
    try {
      readFileSync('/nonexistent-campaign-sync/x.db');
    } catch (err) {
      fsError = err;
    }
    expect(uncaughtStorageError(fsError)).toMatchObject({
      exitCode: 74,
      message: expect.stringMatching(/^cannot open \/nonexistent-campaign-sync\/x\.db: no such file or folder \(ENOENT\)/),
    });
    const sqlite = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' });
    expect(uncaughtStorageError(sqlite)).toMatchObject({
      exitCode: 74,
      message: expect.stringMatching(/^local storage failed: disk input\/output error \(SQLITE_IOERR_WRITE\); nothing committed was lost/),
    });
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
    expect(uncaughtStorageError(full)?.exitCode).toBe(74);
    // Not storage: a socket's EACCES carries no path; our own errors keep their code; plain bugs stay internal.
    expect(uncaughtStorageError(Object.assign(new Error('listen EACCES'), { code: 'EACCES', syscall: 'listen' }))).toBeUndefined();
    expect(uncaughtStorageError(new UsageError('bad flag'))).toBeUndefined();
    expect(uncaughtStorageError(new TypeError('x is undefined'))).toBeUndefined();
  });
});
