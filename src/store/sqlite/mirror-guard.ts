/**
 * Stops a sync whose SQLite database was moved or removed while it ran: checked
 * before each watch pass and before the final close, one stat each. A moved database first gets its
 * WAL copied in (core/fs/moved.ts), so the file at its new name holds every commit; then the run stops
 * with exit 74 and one line saying where the data is. The NDJSON sink checks its own folder and files.
 */
import { closeSync, existsSync, fsyncSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { type FileIdentity, identify, stillAt, whereNow } from '../../core/fs/moved.js';
import { openOwnFile, openPrivateFile } from '../../core/fs/private-file.js';
import { StorageError } from '../../errors.js';
import type { PageSink } from '../port.js';
import type { Db } from './db.js';

/**
 * A copy of `<path>-wal` beside it (0600), when it holds commits: `{ kept }` names it; `{}` when there
 * is nothing to keep (no WAL by that name, or an empty one); `{ failed }` when the copy failed.
 */
function keepWal(path: string): { kept?: string; failed?: string } {
  const wal = `${path}-wal`;
  try {
    if ((statSync(wal, { throwIfNoEntry: false })?.size ?? 0) === 0) return {};
    const kept = `${path}-wal.kept-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    copyPrivately(wal, kept);
    return { kept };
  } catch (err) {
    return { failed: (err as Error).message };
  }
}

/** Copies `from` into a new file `to` (0600; nothing that is at that name already, a link included, is written). */
function copyPrivately(from: string, to: string): void {
  const source = openOwnFile(from);
  try {
    const target = openPrivateFile(to, { exclusive: true });
    try {
      const chunk = Buffer.alloc(1 << 20);
      for (let at = 0; ; ) {
        const n = readSync(source, chunk, 0, chunk.length, at);
        if (n === 0) break;
        for (let done = 0; done < n; ) done += writeSync(target, chunk, done, n - done, at + done);
        at += n;
      }
      fsyncSync(target);
    } finally {
      closeSync(target);
    }
  } finally {
    closeSync(source);
  }
}

export class MirrorGuard {
  private readonly id: FileIdentity | undefined;
  /** The WAL SQLite holds open: removed alone (`rm m.db-wal`), the commits in it live only in this process. */
  private readonly walId: FileIdentity | undefined;
  private found: StorageError | undefined;
  private moved = false;

  constructor(
    private readonly db: Db,
    private readonly path: string,
    private readonly sink: PageSink,
  ) {
    this.id = identify(path);
    this.walId = identify(`${path}-wal`);
  }

  /** The failure to stop with, the first time a path no longer leads to what was opened; undefined after. */
  check(): StorageError | undefined {
    if (this.found) return undefined;
    this.found = this.checkDatabase() ?? this.checkSink();
    return this.found;
  }

  private checkDatabase(): StorageError | undefined {
    if (this.id === undefined) return undefined;
    if (stillAt(this.path, this.id)) return this.checkWal();
    this.moved = true;
    const stop = 'nothing more was written';
    const at = whereNow(this.id);
    if (at === 'removed' || (at === undefined && !existsSync(this.path))) {
      // Removed, or moved to another file system (a copy, then the name removed): the copy holds only
      // what was checkpointed, and the newest commits are in the WAL under the old name. Copying them
      // into the removed file would lose them, and a later open of a new database there would reset
      // that WAL: it is kept beside, as it is.
      const { kept, failed } = keepWal(this.path);
      const gone = `${this.path} was removed (or moved to another file system) while it was being synced; ${stop}`;
      if (kept !== undefined) {
        return new StorageError(
          `${gone}; its newest commits were in ${this.path}-wal, kept as ${kept}: to recover them, put the database file back at ${this.path} and rename ${kept} to ${this.path}-wal before anything opens it`,
        );
      }
      if (failed !== undefined) {
        return new StorageError(
          `${gone}; its newest commits are in ${this.path}-wal, which could not be copied aside (${failed}): keep that file, put the database file back at ${this.path}, before anything opens it`,
        );
      }
      const rest = existsSync(`${this.path}-wal`) ? 'it held every commit itself' : 'what it held went with it';
      return new StorageError(`${gone}; ${rest} (run again to start a new mirror there)`);
    }
    const complete = checkpointAll(this.db);
    if (!complete) {
      return new StorageError(
        `${this.path} was moved while it was being synced${at === undefined ? '' : ` (to ${at})`}: its newest commits are still in ${this.path}-wal; ${stop} (keep that file: rename it to the database's new name followed by -wal before opening the database)`,
      );
    }
    if (at === undefined) {
      return new StorageError(
        `${this.path} was moved or replaced while it was being synced: the file this run had open holds everything committed, wherever it is now; ${stop}`,
      );
    }
    return new StorageError(
      `${this.path} was moved to ${at} while it was being synced: that file holds everything committed; ${stop} (go on with --db ${at}, or move it back)`,
    );
  }

  /**
   * The WAL removed (or replaced) under a database still in place: its commits are in the open,
   * unlinked file only, gone with this process (or a kill -9). They are copied into the database now.
   */
  private checkWal(): StorageError | undefined {
    if (this.walId === undefined || stillAt(`${this.path}-wal`, this.walId)) return undefined;
    const complete = checkpointAll(this.db);
    const what = `${this.path}-wal was removed or replaced while ${this.path} was being synced`;
    return new StorageError(
      complete
        ? `${what}: every commit it held was copied into ${this.path} first; nothing more was written`
        : `${what}: its newest commits could not all be copied into ${this.path} (another connection held them back) and may be lost; nothing more was written`,
    );
  }

  private checkSink(): StorageError | undefined {
    const problem = this.sink.moved();
    return problem === undefined ? undefined : new StorageError(problem);
  }

  /**
   * After the database closed: SQLite leaves an emptied WAL and its index under the old name of a
   * moved database, and the close puts them back (store/sqlite/db.ts): they belong to no database; removed
   * when empty and nothing else took the name. A WAL that still holds commits is left for the user.
   */
  tidy(): void {
    if (!this.moved || existsSync(this.path)) return;
    try {
      if (statSync(`${this.path}-wal`).size !== 0) return;
      rmSync(`${this.path}-wal`, { force: true });
      rmSync(`${this.path}-shm`, { force: true });
    } catch {
      // Nothing there, or not ours to remove: clutter at worst.
    }
  }
}

/**
 * Copies the whole WAL into the database file through the open connection and empties the WAL: the
 * moved file then holds every commit on its own (SQLite would not do it on close, and the WAL keeps
 * the old name). True when every frame was copied; false when a reader of the old name held some
 * back, or the checkpoint failed (a full disk): the caller says the commits may not all be there.
 */
export function checkpointAll(db: Db): boolean {
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return r !== undefined && r.busy === 0 && r.log === r.checkpointed;
  } catch {
    return false;
  }
}
