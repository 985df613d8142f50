/**
 * A database file or NDJSON folder moved or removed under a running sync (say
 * `mv campaign-sync.db old.db` while `watch` runs). The process keeps writing into the open file,
 * wherever it now is; SQLite skips the checkpoint it does on close for a database that has moved, so
 * the newest commits stayed in `<old name>-wal`, which the next pull there truncated. Each open file's
 * identity (device, inode) is kept; a path that no longer leads to it is found with one stat per pass.
 */
import { readdirSync, readlinkSync, statSync } from 'node:fs';

/** The file a path led to when it was opened. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/** The identity of the file or folder at `path` (links followed, as SQLite and open() follow them); undefined when absent. */
export function identify(path: string): FileIdentity | undefined {
  try {
    const s = statSync(path, { bigint: true, throwIfNoEntry: false });
    return s === undefined ? undefined : { dev: s.dev, ino: s.ino };
  } catch {
    return undefined;
  }
}

/** Whether `path` still leads to the file it led to when opened. A path that cannot be looked at (EACCES) is not judged. */
export function stillAt(path: string, id: FileIdentity): boolean {
  let s: ReturnType<typeof statSync> & { dev: bigint; ino: bigint };
  try {
    const found = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (found === undefined) return false;
    s = found;
  } catch (err) {
    return (err as { code?: string }).code !== 'ENOTDIR';
  }
  return s.dev === id.dev && s.ino === id.ino;
}

/**
 * Where a file this process holds open is now: its current name, `removed` when its last name was
 * unlinked, undefined when the system cannot tell (no /proc: macOS). Linux keeps the name of every
 * open file up to date through renames, in /proc/self/fd.
 */
export function whereNow(id: FileIdentity): string | 'removed' | undefined {
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return undefined;
  }
  for (const fd of fds) {
    const link = `/proc/self/fd/${fd}`;
    try {
      const s = statSync(link, { bigint: true });
      if (s.dev !== id.dev || s.ino !== id.ino) continue;
      const name = readlinkSync(link);
      return s.nlink === 0n || name.endsWith(' (deleted)') ? 'removed' : name;
    } catch {
      // Closed meanwhile (the readdir's own fd): not ours.
    }
  }
  return undefined;
}
