/**
 * Stops a sync whose SQLite database was moved or removed while it ran (hostile report 2): checked
 * before each watch pass and before the final close, one stat each. A moved database first gets its
 * WAL copied in (store/moved.ts), so the file at its new name holds every commit; then the run stops
 * with exit 74 and one line saying where the data is. The NDJSON sink checks its own folder and files.
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { StorageError } from '../errors.js';
import type { Db } from '../store/db.js';
import { checkpointAll, type FileIdentity, identify, stillAt, whereNow } from '../store/moved.js';
import type { Sink } from '../store/sinks/sink.js';

export class MirrorGuard {
  private readonly id: FileIdentity | undefined;
  private found: StorageError | undefined;
  private moved = false;

  constructor(
    private readonly db: Db,
    private readonly path: string,
    private readonly sink: Sink,
  ) {
    this.id = identify(path);
  }

  /** The failure to stop with, the first time a path no longer leads to what was opened; undefined after. */
  check(): StorageError | undefined {
    if (this.found) return undefined;
    this.found = this.checkDatabase() ?? this.checkSink();
    return this.found;
  }

  private checkDatabase(): StorageError | undefined {
    if (this.id === undefined || stillAt(this.path, this.id)) return undefined;
    this.moved = true;
    let complete = false;
    try {
      complete = checkpointAll(this.db);
    } catch {
      // Reported below as not complete.
    }
    const at = whereNow(this.id);
    const stop = 'nothing more was written';
    if (at === 'removed') {
      return new StorageError(
        `${this.path} was removed while it was being synced: what it held went with it; ${stop} (run again to start a new mirror there)`,
      );
    }
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

  private checkSink(): StorageError | undefined {
    const problem = this.sink.moved?.();
    return problem === undefined ? undefined : new StorageError(problem);
  }

  /**
   * After the database closed: SQLite leaves an emptied WAL and its index under the old name of a
   * moved database, and the close puts them back (store/db.ts): they belong to no database; removed
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
