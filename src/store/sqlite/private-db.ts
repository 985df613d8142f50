/**
 * An SQLite file of ours (a mirror, a run lock, the budget ledger), opened by better-sqlite3, which
 * follows a link at the name it is given (SQLite itself opens its -journal, -wal and -shm with
 * O_NOFOLLOW, and then says only SQLITE_CANTOPEN): the name and those beside it are checked first,
 * and the connection is checked to have opened the file at that very name. No descriptor of an
 * existing SQLite file is opened and closed here: any close of a file drops every POSIX lock this
 * process holds on it, a connection's included. The rules of every file of ours: core/fs/private-file.ts.
 */
import { accessSync, closeSync, constants, lstatSync, realpathSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { checkOwnFile, isLink, linkRefused, notAFile, openPrivateFile, refuseLinks } from '../../core/fs/private-file.js';
import { CampaignSyncError, errorCode, StorageError, storageError } from '../../errors.js';
import { Database } from './driver.js';

/** The files SQLite opens beside a database file. */
export const SQLITE_SIDES = ['-journal', '-wal', '-shm'] as const;

/**
 * Gets an SQLite file of ours (a mirror, a run lock) ready for openSqlite: a link at its name or at
 * the -journal, -wal or -shm beside it is refused; an absent file is created with `mode` (0600 by
 * default; a new file: no lock of this process on it to drop), and SQLite makes its -wal and -shm
 * with the same mode. An existing one must be a writable regular file, and it and the side files
 * there are used with the modes they have (checkOwnFile), never changed. `what` names it in errors.
 * True when this call created the file (an exclusive create: of two processes racing, one only), so
 * that a run that fails can take back what it made.
 */
export function prepareSqliteFile(path: string, what = path, fix?: string, mode = 0o600): boolean {
  refuseLinks([path, ...SQLITE_SIDES.map((side) => path + side)], fix);
  try {
    closeSync(openPrivateFile(path, { exclusive: true, mode }));
    return true;
  } catch (err) {
    if (err instanceof CampaignSyncError) throw err;
    if (errorCode(err) !== 'EEXIST') throw storageError(err, `cannot create ${what}`);
  }
  let stats: Stats;
  try {
    stats = lstatSync(path);
    if (stats.isSymbolicLink()) throw linkRefused(path, fix);
    if (stats.isDirectory()) {
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: 'EISDIR' });
    }
    if (!stats.isFile()) throw notAFile(what, stats);
    accessSync(path, constants.W_OK);
  } catch (err) {
    throw storageError(err, `cannot open ${what} for writing`);
  }
  checkOwnSqliteFile(path, what, stats);
  return false;
}

/**
 * Refuses an existing SQLite file of ours, or a -journal, -wal or -shm beside it, that another user
 * owns or every user may write (checkOwnFile), before any connection opens it: SQLite gives an empty
 * -wal or -shm the database's mode as it opens them. By path (lstat): a descriptor of the file closed
 * here would drop this process's locks on it.
 */
export function checkOwnSqliteFile(path: string, what = path, stats = lstatSync(path)): void {
  checkOwnFile(stats, what);
  for (const side of SQLITE_SIDES) {
    const found = lstatSync(path + side, { throwIfNoEntry: false });
    if (found?.isFile()) checkOwnFile(found, path + side);
  }
}

/** Where SQLite puts a file it opens by `path` that is no link: its folder's real path, then its name. */
function realName(path: string): string | undefined {
  try {
    return join(realpathSync(dirname(resolve(path))), basename(path));
  } catch {
    return undefined;
  }
}

/**
 * A connection to the file at `path` itself: SQLite follows a link at the name it is given, so one
 * put there after the checks would lead it elsewhere. The name SQLite resolved is compared to the
 * path's before any statement reads or writes a page; a link found then is refused (linkRefused).
 */
export function openSqlite(path: string, options?: BetterSqlite3.Options, fix?: string): BetterSqlite3.Database {
  const db = new Database(path, options);
  let opened: string | undefined;
  try {
    opened = (db.pragma('database_list') as Array<{ name: string; file: string }>).find((d) => d.name === 'main')?.file;
  } catch (err) {
    db.close();
    throw err;
  }
  if (opened !== realName(path)) {
    db.close();
    throw isLink(path)
      ? linkRefused(path, fix)
      : new StorageError(`${path} changed while it was being opened; nothing was written: run again`);
  }
  return db;
}
