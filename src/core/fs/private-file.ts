/**
 * The one way campaign-sync opens a file it writes: the database and its run lock (through SQLite),
 * the lock's info file, the budget ledger, NDJSON files, and the temporary files of exports and
 * erasures. None is reached through a symbolic link at its own name: a link there, dangling or not,
 * is refused (exit 2, naming it), and what it points to keeps its bytes and mode. A folder on the way
 * may be a link (`--out /srv/drop` with /srv a link is the operator's own choice). Files are made 0600
 * through a descriptor, never by a path that a link put there meanwhile would redirect, and an open
 * never blocks on a named pipe put where a file belongs.
 *
 * The SQLite files of a mirror are opened through store/sqlite/private-db.ts, on top of these.
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { errorCode, StorageError, storageError, UsageError } from '../../errors.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;
/**
 * Linux's O_PATH (not in Node's constants): a descriptor that names a file without opening it for
 * reading or writing. Closing one drops no POSIX lock, and with O_NOFOLLOW it names a link itself.
 */
const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

/** A symbolic link where a file of ours belongs (exit 2). `fix` says what to do instead. */
export function linkRefused(path: string, fix = 'remove the link and run again'): UsageError {
  return new UsageError(`${path} is a symbolic link; campaign-sync does not follow links to its own files (${fix})`);
}

export function isLink(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() === true;
  } catch {
    return false; // a folder on the way that cannot be read: the open reports it
  }
}

/** Throws linkRefused for the first of `paths` that is a symbolic link. */
export function refuseLinks(paths: readonly string[], fix?: string): void {
  for (const path of paths) if (isLink(path)) throw linkRefused(path, fix);
}

/** What a file system object that is not a regular file is, in words. */
export function special(stats: Stats): string {
  if (stats.isDirectory()) return 'a folder';
  if (stats.isFIFO()) return 'a named pipe';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

export function notAFile(path: string, stats: Stats): StorageError {
  return new StorageError(`${path} is ${special(stats)}, not a file: remove it and run again`, { code: 'ENOTREG' });
}

export interface PrivateOpen {
  /** A new file only: anything at the name is EEXIST (a link: linkRefused). */
  exclusive?: boolean;
  /** For reading too. */
  read?: boolean;
  /** The mode is left as found: the caller makes the file 0600 (fchmod) once it knows it is its own. */
  keepMode?: boolean;
}

/**
 * Opens `path` for writing, creating it 0600 when absent, and returns the descriptor: a link at the
 * name is linkRefused, anything but a regular file a StorageError (ENOTREG); other failures are the
 * system's errors, for the caller to name. Made 0600 through the descriptor, whatever the umask.
 */
export function openPrivateFile(path: string, how: PrivateOpen = {}): number {
  const flags = (how.read ? constants.O_RDWR : constants.O_WRONLY) | constants.O_CREAT | (how.exclusive ? constants.O_EXCL : 0);
  let fd: number;
  try {
    fd = openSync(path, flags | NOFOLLOW | NONBLOCK, 0o600);
  } catch (err) {
    // ELOOP (EMLINK on FreeBSD) for a link, EEXIST for one under O_EXCL: a link either way.
    if (isLink(path)) throw linkRefused(path);
    throw err;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notAFile(path, stats);
    if (!how.keepMode) fchmodSync(fd, 0o600);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Writes `text` as the whole content of `path` (openPrivateFile's rules). */
export function writePrivateFile(path: string, text: string): void {
  const fd = openPrivateFile(path);
  try {
    ftruncateSync(fd, 0);
    const bytes = Buffer.from(text, 'utf8');
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, done);
  } finally {
    closeSync(fd);
  }
}

/** Opens a file of ours for reading: never through a link at its name, never blocking on a pipe; a regular file only. */
export function openOwnFile(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notAFile(path, stats);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** The text of a small file of ours (up to `maxBytes`), or undefined when there is none that openOwnFile opens. */
export function readOwnFile(path: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openOwnFile(path);
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(maxBytes);
    let n = 0;
    for (let got = -1; got !== 0 && n < maxBytes; n += got) got = readSync(fd, buf, n, maxBytes - n, n);
    return buf.toString('utf8', 0, n);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes the existing file at `path` 0600 without following a link there and without a descriptor
 * whose close would drop this process's POSIX locks on it (a connection of ours may hold them): on
 * Linux through an O_PATH descriptor; elsewhere by its path, once lstat has found a file there.
 */
export function makePrivate(path: string, what = path): void {
  const failed = (err: unknown) => storageError(err, `cannot make ${what} private (chmod 600)`);
  if (O_PATH !== 0) {
    let fd: number;
    try {
      fd = openSync(path, O_PATH | NOFOLLOW);
    } catch (err) {
      throw failed(err);
    }
    try {
      const stats = fstatSync(fd);
      if (stats.isSymbolicLink()) throw linkRefused(path);
      if (!stats.isFile()) throw notAFile(what, stats);
      if ((stats.mode & 0o777) === 0o600) return;
      try {
        chmodSync(`/proc/self/fd/${fd}`, 0o600);
        return;
      } catch (err) {
        // No /proc mounted: by its path, below.
        if (errorCode(err) !== 'ENOENT') throw failed(err);
      }
    } finally {
      closeSync(fd);
    }
  }
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch (err) {
    throw failed(err);
  }
  if (stats.isSymbolicLink()) throw linkRefused(path);
  if (!stats.isFile()) throw notAFile(what, stats);
  if ((stats.mode & 0o777) === 0o600) return;
  try {
    chmodSync(path, 0o600);
  } catch (err) {
    throw failed(err);
  }
}

/**
 * The file a path names, whatever spelling or links lead there: the path resolved through its links
 * (its folder's, when it does not exist yet). Two processes given `m.db` through a linked folder, or
 * `./m.db` and its absolute path, lock the same `<db>.lock`: the lock sits beside the file SQLite
 * opens. (A link at a database's own name is refused before: checkDbPath.)
 */
export function canonicalPath(path: string): string {
  let at = resolve(path);
  // A link to a database not created yet is followed too: SQLite creates the file at its end.
  for (let hops = 0; hops < 40; hops++) {
    try {
      return realpathSync(at);
    } catch {}
    let target: string;
    try {
      target = readlinkSync(at);
    } catch {
      break;
    }
    at = resolve(dirname(at), target);
  }
  try {
    return join(realpathSync(dirname(at)), basename(at));
  } catch {
    return at;
  }
}
