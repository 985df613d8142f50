/**
 * One process per database, and one per NDJSON folder. The lock is a RESERVED lock on a small SQLite
 * file (`<db>.lock` beside the database; `.campaign-sync.lock` inside an `--out` folder), taken with
 * BEGIN IMMEDIATE and held until the process ends. It is a POSIX advisory lock, so the operating
 * system releases it when its holder dies, kill -9 included: nothing stale to clean up. Who holds it
 * (pid, host, since) is written to `<lock>.info` for the error message. A link at either name (a
 * shared `--out` folder is a normal place for one to be planted) is refused: core/fs/private-file.ts.
 */
import { rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { canonicalPath, readOwnFile, refuseLinks, writePrivateFile } from '../../core/fs/private-file.js';
import { errorCode, LockedError, StorageError, storageError } from '../../errors.js';
import type { Holder } from '../port.js';
import { checkDbPath } from './db.js';
import { openSqlite, prepareSqliteFile } from './private-db.js';

/** The lock file of an NDJSON folder, inside it (a dot file: `*.ndjson` globs pass it by). */
export const FOLDER_LOCK = '.campaign-sync.lock';

/** An info file is one line of JSON: anything longer is not ours. */
const INFO_MAX_BYTES = 4096;

export class RunLock {
  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly infoPath: string,
  ) {}

  /** Takes the lock of `dbPath` or throws LockedError (exit 75) at once; StorageError (74) when the lock file cannot be used. */
  static acquire(dbPath: string): RunLock {
    // A missing folder, a folder or a link given as the database is named as such, not as a lock file problem.
    checkDbPath(dbPath);
    // Beside the file SQLite opens, whatever folder links lead there: every name of a database locks it.
    const lockPath = `${canonicalPath(dbPath)}.lock`;
    return RunLock.take(
      lockPath,
      (holder) => `another campaign-sync is syncing ${dbPath} (${holder}); nothing was done`,
      `cannot lock ${dbPath}`,
    );
  }

  /**
   * Takes the lock of an NDJSON `--out` folder (it must exist), so that two databases never append
   * to, claim or cut the same files at once: the ownership checks of store/sqlite/ndjson/file.ts hold only
   * while one process at a time reads and writes the folder. LockedError (exit 75) when another
   * campaign-sync holds it, whichever database that one writes from.
   */
  static acquireFolder(folder: string): RunLock {
    const lockPath = join(canonicalPath(folder), FOLDER_LOCK);
    return RunLock.take(
      lockPath,
      (holder) => `another campaign-sync is writing NDJSON into ${folder} (${holder}); nothing was done`,
      `cannot lock the NDJSON folder ${folder}`,
    );
  }

  private static take(lockPath: string, busy: (holder: string) => string, what: string): RunLock {
    const infoPath = `${lockPath}.info`;
    // A link at either name, planted in a shared folder, would have its target written or made 0600.
    refuseLinks([infoPath]);
    prepareSqliteFile(lockPath, `the lock file ${lockPath}`);
    let db: BetterSqlite3.Database | undefined;
    try {
      db = openSqlite(lockPath, { fileMustExist: true });
      db.pragma('busy_timeout = 0');
      db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      db?.close();
      throw lockFailure(err, lockPath, busy(describeHolder(infoPath)), what);
    }
    const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    try {
      writePrivateFile(infoPath, `${JSON.stringify(holder)}\n`);
    } catch (err) {
      db.exec('ROLLBACK');
      db.close();
      throw storageError(err, `cannot write ${infoPath}`);
    }
    return new RunLock(db, infoPath);
  }

  release(): void {
    if (!this.db.open) return;
    rmSync(this.infoPath, { force: true });
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}

/**
 * Who holds the lock of `dbPath` now, for `status`: read from `<db>.lock.info` without touching the
 * lock itself (taking it, even for a moment, could make a starting pull fail with exit 75). A file
 * left by a process killed with -9 is ignored when that pid no longer runs on this host.
 */
export function lockHolder(dbPath: string): Holder | undefined {
  let h: Holder;
  try {
    h = JSON.parse(readOwnFile(`${canonicalPath(dbPath)}.lock.info`, INFO_MAX_BYTES) ?? '') as Holder;
  } catch {
    return undefined;
  }
  if (typeof h?.pid !== 'number') return undefined;
  if (h.host !== hostname()) return h;
  try {
    process.kill(h.pid, 0);
    return h;
  } catch (err) {
    // EPERM: it runs, under another user.
    return (err as { code?: string }).code === 'EPERM' ? h : undefined;
  }
}

function lockFailure(err: unknown, lockPath: string, busy: string, what: string): unknown {
  const code = errorCode(err) ?? '';
  if (code === 'SQLITE_BUSY') return new LockedError(busy);
  // Something else wrote there: it is never our data, and no lock is held on it while it is garbage.
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    const words = `${lockPath} is not a campaign-sync lock file (${(err as Error).message})`;
    return new StorageError(`${words}; remove it if no campaign-sync is running`, { code, cause: err });
  }
  // SQLite needs to create a journal beside the lock file to take the lock.
  if (code === 'SQLITE_READONLY_DIRECTORY') {
    return new StorageError(
      `${what}: the folder ${dirname(lockPath)} is not writable (${code}); nothing committed was lost: fix the storage and run again`,
      { code, cause: err },
    );
  }
  return storageError(err, `${what} with ${lockPath}`);
}

function describeHolder(infoPath: string): string {
  try {
    const h = JSON.parse(readOwnFile(infoPath, INFO_MAX_BYTES) ?? '') as Holder;
    return `pid ${h.pid} on ${h.host}, since ${h.since}`;
  } catch {
    return 'holder unknown';
  }
}
