/**
 * The one way campaign-sync opens a file it writes: the database and its run lock (through SQLite),
 * the lock's info file, the budget ledger, NDJSON files, the metrics file, and the temporary files of
 * exports and erasures. None is reached through a symbolic link at its own name: a link there,
 * dangling or not, is refused (exit 2, naming it), and what it points to keeps its bytes and mode. A
 * folder on the way may be a link (`--out /srv/drop` with /srv a link is the operator's own choice).
 * A file is created 0600 (or the mode asked for) through its descriptor, never by a path that a link
 * put there meanwhile would redirect, and an open never blocks on a named pipe put where a file
 * belongs. The mode of a file that exists is its owner's: never changed here.
 *
 * The SQLite files of a mirror are opened through store/sqlite/private-db.ts, on top of these.
 */
import {
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
import { errorCode, StorageError, UsageError } from '../../errors.js';

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;

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
  /**
   * The mode of a file this open creates, set through its descriptor whatever the umask (default
   * 0600). `'umask'`: 0644 less the umask, as any program creates a file (for one that holds nothing
   * private). A file that exists keeps its mode.
   */
  mode?: number | 'umask';
}

/** A mode as people write it: `0640`. */
export function octalMode(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}

/**
 * An existing file of ours keeps the mode its owner gave it: an operator's `chmod 640` for a group of
 * readers lasts. Refused with a StorageError (exit 74): one another user owns (unless this process is
 * root, which may write any file), and one every user may write, whose content anybody could change
 * under the mirror. `what` names it.
 */
export function checkOwnFile(stats: Stats, what: string): void {
  const me = process.getuid?.();
  if (me !== undefined && me !== 0 && stats.uid !== me) {
    throw new StorageError(
      `${what} belongs to another user (uid ${stats.uid}); campaign-sync writes only files of the user it runs as: run it as that user, or chown the file`,
      { code: 'EPERM' },
    );
  }
  if ((stats.mode & 0o002) !== 0) {
    throw new StorageError(
      `${what} may be written by every user (mode ${octalMode(stats.mode)}); campaign-sync leaves the mode of an existing file as it is, and writes no file anybody may change: chmod o-w it and run again`,
      { code: 'EPERM' },
    );
  }
}

/**
 * Opens `path` for writing and returns the descriptor: an absent file is created with `how.mode`
 * (0600 by default) through the descriptor, whatever the umask; an existing one is used as it is
 * (checkOwnFile), its mode never changed. A link at the name is linkRefused, anything but a regular
 * file a StorageError (ENOTREG); other failures are the system's errors, for the caller to name.
 */
export function openPrivateFile(path: string, how: PrivateOpen = {}): number {
  const access = how.read ? constants.O_RDWR : constants.O_WRONLY;
  const open = (flags: number) => {
    try {
      return openSync(path, access | flags | NOFOLLOW | NONBLOCK, how.mode === 'umask' ? 0o644 : 0o600);
    } catch (err) {
      // ELOOP (EMLINK on FreeBSD) for a link, EEXIST for one under O_EXCL: a link either way.
      if (isLink(path)) throw linkRefused(path);
      throw err;
    }
  };
  const create = constants.O_CREAT | constants.O_EXCL;
  let fd: number | undefined;
  let created = how.exclusive === true;
  if (created) fd = open(create);
  // Created by this open or found: only then is it known whether its mode is ours to set. Another
  // process creating it between the two opens is found by the next round.
  for (let round = 0; fd === undefined; round++) {
    try {
      fd = open(0);
      break;
    } catch (err) {
      if (errorCode(err) !== 'ENOENT' || round > 2) throw err;
    }
    try {
      fd = open(create);
      created = true;
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
    }
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notAFile(path, stats);
    if (!created) checkOwnFile(stats, path);
    else if (how.mode !== 'umask') fchmodSync(fd, how.mode ?? 0o600);
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
