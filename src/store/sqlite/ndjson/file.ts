/**
 * The NDJSON files of `--format ndjson`, and who may touch them. A file is this database's only when
 * the database holds a committed length for it: then, and only then, a tail past that length is a
 * crash's partial write, cut before appending. A non-empty file the database never wrote is somebody
 * else's data (another database's output, a user's file): refused, never truncated. Files are opened
 * without following symbolic links, so nothing outside `--out` is ever written. A new file or folder
 * gets the mirror's modes (store/port.ts MirrorTarget); an existing one keeps its own.
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, lstatSync, readSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { makeFolders } from '../../../core/fs/folders.js';
import type { FileIdentity } from '../../../core/fs/moved.js';
import { openPrivateFile, refuseLinks } from '../../../core/fs/private-file.js';
import { CampaignSyncError, ExitCode, errorCode, StorageError, storageError } from '../../../errors.js';

export const NDJSON_FILES = { campaigns: 'campaigns.ndjson', session: 'session_results.ndjson', role: 'role_results.ndjson' } as const;

/** The NDJSON folder is out of step with the state in the database: nothing is written (exit 2). */
export class NdjsonStateError extends CampaignSyncError {
  override readonly name = 'NdjsonStateError';
  constructor(message: string) {
    super(message, ExitCode.usage);
  }
}

/**
 * Creates `--out` (`mode`: 0700, or 0750 for a group of readers) if needed and returns its absolute
 * path, with the folders this call made (the missing ones, top down): a run that fails before
 * committing anything removes them again if they are still empty. The folder itself may be a link to
 * a folder (a common way to point at a mounted volume); the files in it may not.
 */
export function openOutputFolder(dir: string, mode = 0o700): { path: string; made: string[] } {
  const path = resolve(dir);
  const made: string[] = [];
  for (let at = path; absent(at) && dirname(at) !== at; at = dirname(at)) made.unshift(at);
  try {
    makeFolders(path, mode);
    return { path, made };
  } catch (err) {
    if (errorCode(err) === 'EEXIST' || errorCode(err) === 'ENOTDIR') {
      throw new NdjsonStateError(`--out ${path}: is not a folder`);
    }
    throw storageError(err, `--out: cannot create ${path}`);
  }
}

/** Nothing at `path`, not even a dangling link (a parent that is a file: makeFolders says so). */
function absent(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false;
  }
}

type WriteFn = (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number;

/**
 * Whether the last committed line (without its newline) is one this database wrote: the sink checks
 * it against what it recorded of that line (its digest, or the campaign's line).
 */
export type LineCheck = (line: string) => boolean;

/** The longest last line read back to check it; a longer one is taken on its newline alone. */
const LAST_LINE_MAX = 64 * 1024 * 1024;

/** One append-only NDJSON file whose committed length lives in `ndjson_files`. */
export class NdjsonFile {
  private fd: number | undefined;
  /** Bytes written and covered by this database's offsets (committed, or in the open group). */
  offset: number;
  /** The file was not there before this run opened it (a run that commits nothing removes it again). */
  readonly created: boolean;

  constructor(
    readonly path: string,
    committed: number | undefined,
    private readonly write: WriteFn = writeSync,
    check?: LineCheck,
    /** The mode of the file when this creates it (0600, or 0640 for a group of readers). */
    mode = 0o600,
  ) {
    refuseLinks([path], 'replace it with the file itself, or use another --out');
    // Under the folder's lock: no other campaign-sync makes it meanwhile.
    this.created = lstatSync(path, { throwIfNoEntry: false }) === undefined;
    let fd: number;
    try {
      fd = openPrivateFile(path, { read: true, mode });
    } catch (err) {
      if (err instanceof CampaignSyncError && !(err instanceof StorageError)) throw err;
      if (errorCode(err) === 'EISDIR') throw new NdjsonStateError(`${path} is a folder, not an NDJSON file`);
      if (errorCode(err) === 'ENOTREG') throw new NdjsonStateError(`${path} is not a regular file`);
      throw storageError(err, `cannot open ${path}`);
    }
    try {
      const size = fstatSync(fd).size;
      if (committed === undefined && size > 0) {
        throw new NdjsonStateError(
          `${path} already holds ${size} bytes that this database did not write; nothing was written (use the database that wrote it with --db, another --out, or move the file away)`,
        );
      }
      const mine = committed ?? 0;
      if (size < mine) {
        throw new NdjsonStateError(
          `${path} holds ${size} bytes but ${mine} were committed: it was changed outside campaign-sync; nothing was written (restore it, or start over with a new --out and --db)`,
        );
      }
      // Rewritten by someone else to a length past ours (pretty-printed, re-sorted, edited): cutting it
      // at our length would leave half a record and append after it. Our length must end a line that
      // we wrote.
      if (mine > 0 && !endsWithOurLine(fd, mine, check)) {
        throw new NdjsonStateError(
          `${path}: the line that ends at its committed length (${mine} bytes) is not the one this database wrote there: the file was changed outside campaign-sync; nothing was written (restore it, or start over with a new --out and --db)`,
        );
      }
      // Ours: a tail past the committed length is a crash's partial write, cut before appending.
      if (size > mine) ftruncateSync(fd, mine);
      this.offset = mine;
      this.fd = fd;
    } catch (err) {
      closeSync(fd);
      if (err instanceof CampaignSyncError) throw err;
      throw storageError(err, `cannot prepare ${path}`);
    }
  }

  /** Appends and fsyncs; returns the offset after the write (not yet committed). */
  append(text: string | Buffer): number {
    const fd = this.fd as number;
    const buf = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    let done = 0;
    try {
      while (done < buf.length) done += this.write(fd, buf, done, buf.length - done, this.offset + done);
      fsyncSync(fd);
    } catch (err) {
      this.rollback();
      throw err;
    }
    return this.offset + buf.length;
  }

  /** Cuts what was appended past `offset` (an append whose commit failed); best effort. */
  rollback(): void {
    try {
      if (this.fd !== undefined) ftruncateSync(this.fd, this.offset);
    } catch {
      // A later run cuts it: the committed length says where this database's data ends.
    }
  }

  /** The identity of the open file (core/fs/moved.ts), whatever its name is now. */
  identity(): FileIdentity | undefined {
    if (this.fd === undefined) return undefined;
    const s = fstatSync(this.fd, { bigint: true });
    return { dev: s.dev, ino: s.ino };
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/**
 * Whether the first `end` bytes of the file end with a newline, and the line before it passes `check`
 * (read back at most LAST_LINE_MAX bytes; a longer line is taken on its newline alone).
 */
function endsWithOurLine(fd: number, end: number, check: LineCheck | undefined): boolean {
  const last = Buffer.alloc(1);
  if (readSync(fd, last, 0, 1, end - 1) !== 1 || last[0] !== 10) return false;
  if (!check) return true;
  // Back from the newline to the one before it (or the start of the file), in growing chunks.
  const parts: Buffer[] = [];
  let at = end - 1;
  let size = 64 * 1024;
  while (at > 0) {
    if (end - 1 - at > LAST_LINE_MAX) return true;
    const n = Math.min(size, at);
    const chunk = Buffer.alloc(n);
    if (readSync(fd, chunk, 0, n, at - n) !== n) return false;
    const nl = chunk.lastIndexOf(10);
    if (nl !== -1) {
      parts.unshift(chunk.subarray(nl + 1));
      break;
    }
    parts.unshift(chunk);
    at -= n;
    size *= 2;
  }
  return check(Buffer.concat(parts).toString('utf8'));
}
