/**
 * One process per database, and one per NDJSON folder. The lock is a RESERVED lock on a small SQLite
 * file (`<db>.lock` beside the database; `.campaign-sync.lock` inside an `--out` folder), taken with
 * BEGIN IMMEDIATE and held until the process ends. It is a POSIX advisory lock, so the operating
 * system releases it when its holder dies, kill -9 included: nothing stale to clean up. Who holds it
 * (pid, host, since) is written to `<lock>.info` for the error message. A link at either name (a
 * shared `--out` folder is a normal place for one to be planted) is refused: core/fs/private-file.ts.
 * The lock file stays between runs, except one a run created and that run failed before committing
 * anything (discard): it goes with the database that run created, and a run that refused the
 * database leaves none beside it.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, rmSync } from 'node:fs';
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

/** Test seam: runs once a lock file is open and before it is locked (where another process may remove it). */
export const lockSeams: { opened?: ((lockPath: string) => void) | undefined } = {};

export class RunLock {
  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly lockPath: string,
    private readonly infoPath: string,
    /** The lock file taken (its device and inode): the file the connection holds open, whatever its name leads to now. */
    private readonly file: FileId,
    /** This process created the lock file: discard() takes it back. */
    private readonly created: boolean,
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

  /**
   * The lock counts only while the lock file's name leads to the file locked. Its creator removes it
   * when its run fails before committing anything (discard), still holding it; a process that opened
   * the file just before may then take a lock on a file nobody else can find any more (or SQLite
   * fails on the removed file, SQLITE_IOERR_FSTAT): it sees the name leads elsewhere (or nowhere)
   * and takes the lock again on the file there now. Each round needs another process to create, lock
   * and remove the file in between: a few suffice.
   */
  private static take(lockPath: string, busy: (holder: string) => string, what: string): RunLock {
    const infoPath = `${lockPath}.info`;
    // A link at either name, planted in a shared folder, would have its target written or made 0600.
    refuseLinks([infoPath]);
    for (let round = 1; ; round++) {
      const created = prepareSqliteFile(lockPath, `the lock file ${lockPath}`);
      // Pinned before SQLite opens the name: if the name still leads to this file once the lock is
      // held, SQLite opened this very file (a removed file is never put back under its name).
      const pinned = pin(lockPath);
      if (pinned === undefined) {
        // Removed by its creator since it was made or found here: take the one there next.
        if (round < TAKE_ROUNDS) continue;
        throw new LockedError(busy(REPLACED));
      }
      let db: BetterSqlite3.Database | undefined;
      try {
        db = openSqlite(lockPath, { fileMustExist: true });
        lockSeams.opened?.(lockPath);
        db.pragma('busy_timeout = 0');
        db.exec('BEGIN IMMEDIATE');
      } catch (err) {
        const moved = !leadsTo(lockPath, pinned.file);
        pinned.unpin();
        db?.close();
        // Removed under it (SQLite may fail on the unlinked file: SQLITE_IOERR_FSTAT): the file there now.
        if (moved && round < TAKE_ROUNDS) continue;
        const failure = lockFailure(err, lockPath, busy(describeHolder(infoPath)), what);
        // Made here a moment ago and held by no other (which would be busy): nothing of this run stays.
        if (created && !(failure instanceof LockedError)) rmSync(lockPath, { force: true });
        throw failure;
      }
      const held = leadsTo(lockPath, pinned.file);
      pinned.unpin();
      if (!held) {
        db.exec('ROLLBACK');
        db.close();
        if (round < TAKE_ROUNDS) continue;
        throw new LockedError(busy(REPLACED));
      }
      const lock = new RunLock(db, lockPath, infoPath, pinned.file, created);
      const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
      try {
        writePrivateFile(infoPath, `${JSON.stringify(holder)}\n`);
      } catch (err) {
        lock.discard();
        throw storageError(err, `cannot write ${infoPath}`);
      }
      return lock;
    }
  }

  release(): void {
    if (!this.db.open) return;
    rmSync(this.infoPath, { force: true });
    this.db.exec('ROLLBACK');
    this.db.close();
  }

  /**
   * Releases the lock, and first removes its file when this process created it (a run that failed
   * before committing anything leaves nothing behind). Removed while still held, so no process can
   * hold it meanwhile; one that opened it and takes it after finds the name no longer leads there
   * (take). A lock file that was there before is left, as release() leaves it.
   */
  discard(): void {
    if (!this.db.open) return;
    if (this.created) {
      rmSync(this.infoPath, { force: true });
      // Only the file this lock holds: the connection keeps it open, so its inode is nobody else's.
      if (leadsTo(this.lockPath, this.file)) rmSync(this.lockPath, { force: true });
    }
    this.release();
  }
}

/** How many times take() takes a lock whose file was removed under it before it gives up (exit 75). */
const TAKE_ROUNDS = 5;

const REPLACED = 'its lock file was removed and made again while this one took it';

/** A file's identity. */
interface FileId {
  dev: bigint;
  ino: bigint;
}

/**
 * Linux's O_PATH: a descriptor that names a file without opening it. Its close drops no POSIX lock
 * (an ordinary descriptor's close drops every lock this process holds on the file, a connection's
 * of this process to the same lock file included), and while it is open the inode cannot be reused.
 */
const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

/**
 * The identity of the file at `path`, held until unpin() (Linux: an O_PATH descriptor; elsewhere
 * its lstat alone, where a reused inode could deceive the check in a window of microseconds).
 * Undefined when nothing is there.
 */
function pin(path: string): { file: FileId; unpin(): void } | undefined {
  if (O_PATH === 0) {
    const s = lstatSync(path, { bigint: true, throwIfNoEntry: false });
    return s === undefined ? undefined : { file: { dev: s.dev, ino: s.ino }, unpin: () => {} };
  }
  let fd: number;
  try {
    fd = openSync(path, O_PATH | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw storageError(err, `cannot open ${path}`);
  }
  try {
    const s = fstatSync(fd, { bigint: true });
    return { file: { dev: s.dev, ino: s.ino }, unpin: () => closeSync(fd) };
  } catch (err) {
    closeSync(fd);
    throw storageError(err, `cannot open ${path}`);
  }
}

/** Whether the name `path` leads to `file` (no link between). */
function leadsTo(path: string, file: FileId): boolean {
  const named = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return named?.isFile() === true && named.dev === file.dev && named.ino === file.ino;
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
