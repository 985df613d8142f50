/**
 * A file written whole or not at all (`export -o`, the metrics file). It is written under a temporary
 * name beside the target and renamed over it when complete, so nobody reads half of it, and nobody
 * can aim the write elsewhere: the name is unpredictable, created exclusively (an existing file or
 * link there is an error, never followed) and with its final mode from the first byte (0600 unless
 * asked otherwise). A partial left by a killed writer is removed by the next write to the same file.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, createWriteStream, fsyncSync, lstatSync, readdirSync, renameSync, rmSync, unlinkSync, type WriteStream } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { currentClock } from '../io.js';
import { openPrivateFile, type PrivateOpen } from './private-file.js';

const TAG = '.campaign-sync-';
const SUFFIX = '.partial';
/** A partial untouched this long belongs to no running export (a running one writes all the time). */
export const STALE_AFTER_MS = 60 * 60_000;

/** `<dir>/.<name>.campaign-sync-<pid>-<16 random hex>.partial`: same folder, so the rename is atomic. */
export function partialPath(target: string): string {
  return join(dirname(target), `.${basename(target)}${TAG}${process.pid}-${randomBytes(8).toString('hex')}${SUFFIX}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the stale partials of exports to `target`: regular files this user owns, named by
 * partialPath for this very target, whose process is gone or which nobody touched for an hour (a pid
 * can be reused), by the run's clock (core/io.ts). Links and other people's files are left alone.
 * Returns the paths removed.
 */
export function cleanStalePartials(target: string, now = currentClock().now()): string[] {
  const dir = dirname(target);
  const prefix = `.${basename(target)}${TAG}`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return []; // creating the partial reports a missing or unreadable folder
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith(SUFFIX)) continue;
    const id = /^(\d+)-[0-9a-f]{16}$/.exec(name.slice(prefix.length, -SUFFIX.length));
    if (!id) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (!st.isFile() || (process.getuid !== undefined && st.uid !== process.getuid())) continue;
      if (alive(Number(id[1])) && now - st.mtimeMs < STALE_AFTER_MS) continue;
      unlinkSync(path);
      removed.push(path);
    } catch {
      // Removed meanwhile, or not ours to remove: either way nothing to do.
    }
  }
  return removed;
}

/** An export's file in the making: write to `fd` (synchronously) or to `stream`, then commit() or discard(). */
export class PartialFile {
  readonly path: string;
  readonly fd: number;
  private writeStream: WriteStream | undefined;
  private open = true;

  /** `mode`: the file's (openPrivateFile's rule): 0600 by default, `'umask'` for one that holds nothing private. */
  constructor(
    readonly target: string,
    mode: PrivateOpen['mode'] = 0o600,
  ) {
    this.path = partialPath(target);
    // Anything already at the name, a link too (dangling or not), is an error: never followed.
    this.fd = openPrivateFile(this.path, { exclusive: true, mode });
  }

  /** A stream over the file, made on first use (NDJSON export pipes into it). */
  get stream(): WriteStream {
    // autoClose off: commit() fsyncs the descriptor after the stream has finished.
    this.writeStream ??= createWriteStream(this.path, { fd: this.fd, autoClose: false });
    return this.writeStream;
  }

  /** Once the stream has finished: to disk, then in place of the target in one step (rename follows no link). */
  commit(): void {
    fsyncSync(this.fd);
    this.close();
    renameSync(this.path, this.target);
  }

  /** Closes and removes the partial; never throws. */
  discard(): void {
    try {
      this.close();
      rmSync(this.path, { force: true });
    } catch {
      // The export's own error is the one to report; a partial left here is cleaned by the next export.
    }
  }

  private close(): void {
    if (!this.open) return;
    this.open = false;
    closeSync(this.fd);
  }
}
