/**
 * `forget` on a SQLite mirror: the person (or the results older than a cut) erased from the database
 * and from the NDJSON files it wrote (store/sqlite/erasure.ts), under the run lock; an erasure an earlier forget left unfinished (killed,
 * or stopped by a full disk) is finished first, whoever is named.
 */
import { currentClock, currentWaits } from '../../core/io.js';
import { waitWords } from '../../core/waits.js';
import { StorageError, storageError } from '../../errors.js';
import type { EraseMirror, ErasureDone, MirrorTarget } from '../port.js';
import { openDatabase } from './db.js';
import { countOlderThan, type Erasure, eraseCandidate, eraseOlderThan } from './erasure.js';
import { RunLock } from './run-lock.js';

export async function openSqliteEraser(t: MirrorTarget): Promise<EraseMirror> {
  const dbPath = t.path;
  const db = openDatabase(dbPath, { mustExist: true });
  let lock: RunLock;
  try {
    // A pull running meanwhile could write the user's records back: take the lock.
    lock = RunLock.acquire(dbPath);
  } catch (err) {
    db.close();
    throw storageError(err, `forget: cannot write ${dbPath}`);
  }
  return {
    name: dbPath,
    searched: `${dbPath} or the NDJSON files it wrote`,
    erase: async (user) => run(() => eraseCandidate(db, user)),
    eraseOlderThan: async (before) => run(() => eraseOlderThan(db, before)),
    async countOlderThan(before) {
      try {
        return countOlderThan(db, before);
      } catch (err) {
        throw storageError(err, `forget: cannot read ${dbPath}`);
      }
    },
    // One host syncs the file: the run's clock, as its retention's.
    now: async () => currentClock().now(),
    async close() {
      lock.release();
      db.close();
    },
  };

  function run(erase: () => Erasure): ErasureDone {
    try {
      const { rows, copies, files, earlier, found, done } = erase();
      if (!done) {
        throw new StorageError(
          `forget: cannot finish erasing in ${dbPath}: another process has it open (a reader's transaction or a writer) and did not let go within ${waitWords(currentWaits().sqliteBusyMs)}, so the old pages could not be overwritten; the rows are deleted but the erasure is not finished: close that process and run \`campaign-sync forget\` again (any --user or --older-than) to finish it`,
          { code: 'SQLITE_BUSY' },
        );
      }
      return { rows, copies, files, earlier, found };
    } catch (err) {
      // A full disk during the rewrite is a storage failure (exit 74), named, never "internal error".
      throw storageError(err, `forget: cannot write ${dbPath}`);
    }
  }
}
