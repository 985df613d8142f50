/**
 * One process per database. The lock is a RESERVED lock on a small SQLite file beside the database
 * (`<db>.lock`), taken with BEGIN IMMEDIATE and held until the process ends. It is a POSIX advisory
 * lock, so the operating system releases it when its holder dies, kill -9 included: nothing stale
 * to clean up. Who holds it (pid, host, since) is written to `<db>.lock.info` for the error message.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import { LockedError } from '../errors.js';
import { createPrivateFile } from './db.js';

interface Holder {
  pid: number;
  host: string;
  since: string;
}

export class RunLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly infoPath: string,
  ) {}

  /** Takes the lock of `dbPath` or throws LockedError (exit 75) at once. */
  static acquire(dbPath: string): RunLock {
    const lockPath = `${dbPath}.lock`;
    const infoPath = `${lockPath}.info`;
    createPrivateFile(lockPath);
    const db = new Database(lockPath);
    try {
      db.pragma('busy_timeout = 0');
      db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      db.close();
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      throw new LockedError(`another campaign-sync is syncing ${dbPath} (${describeHolder(infoPath)}); nothing was done`);
    }
    const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    writeFileSync(infoPath, `${JSON.stringify(holder)}\n`, { mode: 0o600 });
    return new RunLock(db, infoPath);
  }

  release(): void {
    if (!this.db.open) return;
    rmSync(this.infoPath, { force: true });
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}

function describeHolder(infoPath: string): string {
  try {
    const h = JSON.parse(readFileSync(infoPath, 'utf8')) as Holder;
    return `pid ${h.pid} on ${h.host}, since ${h.since}`;
  } catch {
    return 'holder unknown';
  }
}
