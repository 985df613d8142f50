/**
 * Opening the SQLite mirror: a new file made owner-only (or group-readable when asked), an existing
 * one's mode left as its owner set it, WAL, and the schema (versioned, so later releases can migrate). A failure of the storage itself (missing folder, permission denied,
 * read-only, disk full, a folder where the file should be) is a StorageError (exit 74) naming the
 * path; a file that is not a campaign-sync database is a UsageError (exit 2): a wrong path.
 */
import { accessSync, closeSync, constants, existsSync, fchownSync, readSync, type Stats, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { openOwnFile, openPrivateFile, refuseLinks, special } from '../../core/fs/private-file.js';
import { currentWaits } from '../../core/io.js';
import { DEFAULT_WAITS } from '../../core/waits.js';
import { CampaignSyncError, errorCode, isStorageFailure, StorageError, storageError, UsageError } from '../../errors.js';
import { checkOwnSqliteFile, openSqlite, prepareSqliteFile, SQLITE_SIDES } from './private-db.js';
import { checkOurs, migrate } from './schema.js';

export type Db = BetterSqlite3.Database;

/** How long a statement waits for another connection's lock before SQLITE_BUSY, unless the run says less (core/waits.ts). */
export const BUSY_TIMEOUT_MS = DEFAULT_WAITS.sqliteBusyMs;

/**
 * WAL pages before SQLite copies them back into the database (its default is 1000, ~4 MB). A pull
 * writes in bulk: checkpointing every ~40 MB instead keeps group commits from waiting on copies.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Checks where a database goes before anything is created there or beside it (the lock file): the
 * folder must exist and the path must not be a folder.
 */
export function checkDbPath(path: string, found: Found = look(path)): void {
  if (found.kind === 'folder') throw new StorageError(`${path} is a folder, not a database file`, { code: 'EISDIR' });
  // A named pipe blocks whoever opens it until someone writes to it: the CLI hung there, deaf to
  // SIGINT and SIGTERM (its handlers run on the thread the open blocked).
  if (found.kind === 'special') {
    throw new UsageError(`${path} is ${found.what}, not a database file: give the path of a file, or of one to create`);
  }
  if (found.kind !== 'absent') return;
  const dir = dirname(path);
  if (!existsSync(dir)) throw new StorageError(`cannot create ${path}: the folder ${dir} does not exist`, { code: 'ENOENT' });
}

export interface OpenOptions {
  /** Open an existing database only (status, export): a missing file is a usage error. */
  mustExist?: boolean;
  readonly?: boolean;
  /** How long a statement waits for another connection's lock; the run's (core/waits.ts) when left out. */
  busyTimeoutMs?: number;
  /** The mode of a database this open creates (0600 by default; 0640 for a group of readers). */
  mode?: number;
}

/** Opens the database at `path`, creating and migrating it as needed. */
export function openDatabase(path: string, opts: OpenOptions = {}): Db {
  // One look at the file (and at its -wal when the file is empty) serves every check below.
  const found = look(path);
  if (opts.mustExist && found.kind === 'absent') {
    throw new UsageError(`no database at ${path} (run \`campaign-sync pull\` first, or pass --db)`);
  }
  // Opened as it is, SQLite takes an empty file for an empty database: `status` and `export` then
  // failed on a missing table (exit 74), and `reset` turned the file into a mirror. It is not one yet.
  if (opts.mustExist && found.kind === 'empty') {
    throw new UsageError(`${path} is empty: it is not a campaign-sync mirror yet (run \`campaign-sync pull\` first, or pass --db)`);
  }
  checkFound(path, found);
  // A file too small to be a database is checked before SQLite opens it (SQLite took a few bytes for
  // an empty database and overwrote them); anything bigger SQLite refuses itself (SQLITE_NOTADB),
  // and openFailure says why. Reading the header opens and closes a descriptor of the file, which
  // would drop the locks of another connection of this process to a mirror that is open (export's
  // helper thread opens a second one): a mirror is never that small.
  if (found.kind === 'file' && found.size < SMALLEST_DATABASE) checkHeader(path);
  // A file that is there already is only switched to WAL once it is known to be a mirror (or an empty
  // database): another program's SQLite file is refused as it was found. Its mode is never changed.
  const existing = opts.readonly !== true && found.kind !== 'absent';
  let checked = false;
  if (existing) {
    checkOneName(path, found.links);
    // Before the read-only probe, which opens it (SQLite gives an empty -wal or -shm the file's mode).
    checkOwnSqliteFile(path);
    checked = checkOursFirst(path);
  }
  if (opts.readonly) {
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      throw storageError(err, `cannot read ${path}`);
    }
  } else if (!existing) prepareSqliteFile(path, path, DB_LINK_FIX, opts.mode);
  let db: Db;
  try {
    // The file is there by now (created above when new): a link put at its name meanwhile is never created through.
    db = openSqlite(path, { readonly: opts.readonly === true, fileMustExist: true }, DB_LINK_FIX);
  } catch (err) {
    throw openFailure(err, path, opts);
  }
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? currentWaits().sqliteBusyMs}`);
    if (opts.readonly) {
      // A version-0 file is no mirror: another program's tables, or none (a database made by hand).
      if (checkOurs(db, path) === 0) {
        throw new UsageError(
          `${path} is not a campaign-sync mirror: it holds none of the mirror's tables (run \`campaign-sync pull\` first, or pass --db)`,
        );
      }
      return db;
    }
    // The read-only probe has checked an existing file already; a new one, or one it could not open, is checked here.
    if (!checked) checkOurs(db, path);
    if (existing) prepareSqliteFile(path, path, DB_LINK_FIX);
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a process crash (kill -9 included) loses no committed page; only a power
    // loss may drop the last pages, and never leaves records and checkpoints out of step.
    db.pragma('synchronous = NORMAL');
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma('foreign_keys = OFF');
    migrate(db, path);
    keepWalFiles(db, path);
    return db;
  } catch (err) {
    db.close();
    throw openFailure(err, path, opts);
  }
}

/** What is at a database's path, from one `stat` of it (and one of its `-wal` when it is empty). */
type Found =
  | { kind: 'absent'; links: 1 }
  | { kind: 'folder'; links: number }
  /** A file of 0 bytes with no pages in a `-wal` beside it: what `touch m.db` leaves. */
  | { kind: 'empty'; links: number }
  /** A file of 0 bytes beside a `-wal` of `wal` bytes: see checkFound. */
  | { kind: 'orphaned-wal'; links: number; wal: number }
  | { kind: 'file'; links: number; size: number }
  /** Not a file: a named pipe, a device or a socket. */
  | { kind: 'special'; links: number; what: string };

/** What to do about a link given as --db. */
const DB_LINK_FIX = "give the database file's own path";

/**
 * A link at the database's name, or at the -journal, -wal or -shm beside it, is refused first, for
 * reading too: SQLite follows a link at the name it opens (and writes the -shm of a WAL database
 * even to read it); a link there may have been planted in a shared folder.
 */
function look(path: string): Found {
  refuseLinks([path], DB_LINK_FIX);
  refuseLinks(SQLITE_SIDES.map((side) => path + side));
  let stats: Stats | undefined;
  try {
    stats = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    throw storageError(err, `cannot reach ${path}`);
  }
  if (stats === undefined) return { kind: 'absent', links: 1 };
  if (stats.isDirectory()) return { kind: 'folder', links: stats.nlink };
  if (!stats.isFile()) return { kind: 'special', links: stats.nlink, what: special(stats) };
  if (stats.size > 0) return { kind: 'file', links: stats.nlink, size: stats.size };
  const wal = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  return wal > 0 ? { kind: 'orphaned-wal', links: stats.nlink, wal } : { kind: 'empty', links: stats.nlink };
}

/**
 * Checks what `look` found before anything is created or opened there: the path (checkDbPath), and
 * a file of 0 bytes beside a WAL that holds pages, which was truncated or replaced (or moved away)
 * while its newest commits stayed in the WAL. SQLite deletes the WAL of an empty database as it
 * opens it, read-only too, and with it every commit it held: nothing is opened. Exit 74: the storage
 * is not as the last writer left it, and the WAL is the data to save.
 */
function checkFound(path: string, found: Found): void {
  checkDbPath(path, found);
  if (found.kind === 'orphaned-wal') {
    throw new StorageError(
      `${path} is empty, but ${path}-wal beside it holds ${found.wal} bytes of commits: the database file was truncated, replaced or moved away; nothing was opened, since SQLite would delete that log (put the database file back, or move ${path}-wal aside to start a new mirror)`,
      { code: 'EWALORPHAN' },
    );
  }
}

/**
 * Another program's database is refused through a read-only connection first: refused through the
 * writer's, its close checkpointed the other program's WAL into the file and deleted the WAL. When
 * the read-only open cannot be made (a WAL database without its -wal and -shm, a lock), the writer's
 * checks decide, as before. True when the probe found a database campaign-sync may open.
 */
function checkOursFirst(path: string): boolean {
  let probe: Db;
  try {
    probe = openSqlite(path, { readonly: true, fileMustExist: true }, DB_LINK_FIX);
  } catch {
    return false;
  }
  try {
    checkOurs(probe, path);
    return true;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    return false;
  } finally {
    probe.close();
  }
}

/**
 * A database with several names (hard links: `ln m.db h.db`, `cp -al`) is refused for writing. SQLite
 * keeps the write-ahead log and its index beside the name a database is opened by, so two processes
 * writing through two names never see each other's log or locks, and corrupt the file (sqlite.org,
 * "How To Corrupt An SQLite Database File": multiple links to the same file); the run lock sits beside a name too. A symbolic
 * link at the name is refused before (look).
 */
function checkOneName(path: string, links: number): void {
  if (links > 1) {
    throw new UsageError(
      `${path} has ${links} names (hard links); SQLite keeps its write-ahead log beside the name it is opened by, so writers using two names corrupt it: remove the other names (find them with \`find <folder> -xdev -samefile ${path}\`), or copy the file instead of linking it`,
    );
  }
}

/**
 * A file of 0 bytes with no WAL beside it holding pages: what `touch m.db` or a mounted placeholder
 * leaves. A pull makes it a new database; for anything that reads a mirror there is nothing there yet.
 */
export function isEmptyDatabase(path: string): boolean {
  try {
    return look(path).kind === 'empty';
  } catch {
    return false; // unreachable: the open reports it
  }
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** SQLite's smallest page: a file below it cannot hold a database (its header and schema page). */
const SMALLEST_DATABASE = 512;

/**
 * A file that exists, is not empty and does not start with SQLite's header is someone else's: exit 2,
 * before SQLite opens it. SQLite itself says so only from some size on; a file of a few bytes (a stray
 * `echo > m.db`) it took as an empty database and overwrote. An empty file is a new database.
 */
function checkHeader(path: string): void {
  let head: Buffer;
  try {
    const fd = openOwnFile(path);
    try {
      head = Buffer.alloc(SQLITE_HEADER.length);
      head = head.subarray(0, readSync(fd, head, 0, head.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return; // absent or unreadable: the open reports it
  }
  if (head.length > 0 && !head.equals(SQLITE_HEADER)) {
    throw new UsageError(`${path} is not a campaign-sync database: it is not an SQLite file; nothing was written to it`);
  }
}

/** The one-line error for a failed open: ours as they are, storage failures as 74, anything else as not ours (2). */
function openFailure(err: unknown, path: string, opts: OpenOptions): unknown {
  if (err instanceof CampaignSyncError) return err;
  const code = errorCode(err) ?? '';
  const notOurs = code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT');
  if (notOurs) {
    // The connection is closed: its header can be read now. Not an SQLite file at all is said so.
    try {
      checkHeader(path);
    } catch (header) {
      return header;
    }
  }
  // A WAL database is read through its -wal and -shm files; SQLite creates them when they are
  // missing, which read-only storage (or a folder we may not write to) does not allow.
  const missing = ['-wal', '-shm'].filter((suffix) => !existsSync(path + suffix)).map((suffix) => basename(path) + suffix);
  const cannotCreate = code.startsWith('SQLITE_CANTOPEN') || code === 'SQLITE_READONLY_DIRECTORY';
  if (!notOurs && opts.readonly && cannotCreate && missing.length > 0) {
    return new StorageError(
      `cannot read ${path} on read-only storage: its ${missing.join(' and ')} ${missing.length > 1 ? 'files are' : 'file is'} missing ` +
        'and cannot be created there; copy the database to writable storage, or run `campaign-sync status` on it once where it is writable',
      { code, cause: err },
    );
  }
  if (!notOurs && isStorageFailure(err)) return storageError(err, opts.readonly ? `cannot read ${path}` : `cannot open ${path}`);
  return new UsageError(`${path} is not a campaign-sync database: ${(err as Error).message}`);
}

/**
 * SQLite deletes `-wal` and `-shm` when the last connection closes, and cannot read a WAL database
 * without them where it may not create them (a read-only mount, a snapshot, a folder only readable
 * to us). So a writer puts them back empty, as SQLite itself creates them (with the database's mode
 * and, for root, its owner), once it has closed: the mirror stays readable by `status` and `export`
 * wherever it is copied with them, by the same readers as the database.
 */
function keepWalFiles(db: Db, path: string): void {
  const close = db.close.bind(db);
  plainClose.set(db, close);
  db.close = () => {
    close();
    for (const suffix of ['-wal', '-shm']) {
      try {
        // Only where it is missing: if another connection has opened the database since (one of this
        // process too, whose locks on the file a close would drop), its files stay as they are.
        if (!existsSync(path + suffix)) {
          const owner = statSync(path);
          const fd = openPrivateFile(path + suffix, { exclusive: true, mode: owner.mode & 0o666 });
          try {
            if (process.getuid?.() === 0 && owner.uid !== 0) fchownSync(fd, owner.uid, owner.gid);
          } finally {
            closeSync(fd);
          }
        }
      } catch {
        // Best effort: only reading from read-only storage needs them, and that is reported when it happens.
      }
    }
    return db;
  };
}

/** SQLite's own close of each writer's connection, without keepWalFiles's files. */
const plainClose = new WeakMap<Db, () => unknown>();

/**
 * Closes a writer's connection without putting its -wal and -shm back: for a database that is being
 * removed (store/sqlite/discard.ts). Any other connection closes as db.close() does.
 */
export function closeLeavingNoWalFiles(db: Db): void {
  const close = plainClose.get(db);
  if (close === undefined) db.close();
  else close();
}
