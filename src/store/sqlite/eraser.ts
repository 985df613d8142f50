/**
 * `forget` on a SQLite mirror: the person erased from the database and from the NDJSON files it
 * wrote (store/erasure.ts), under the run lock; an erasure an earlier forget left unfinished (killed,
 * or stopped by a full disk) is finished first, whoever is named.
 */
import { currentWaits } from '../../core/io.js';
import { waitWords } from '../../core/waits.js';
import { StorageError, storageError } from '../../errors.js';
import { openDatabase } from '../db.js';
import { eraseCandidate } from '../erasure.js';
import { RunLock } from '../lock.js';
import type { EraseMirror, MirrorTarget } from '../mirror-port.js';

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
    async erase(user) {
      try {
        const { rows, files, earlier, found, done } = eraseCandidate(db, user);
        if (!done) {
          throw new StorageError(
            `forget: cannot finish erasing in ${dbPath}: another process has it open (a reader's transaction or a writer) and did not let go within ${waitWords(currentWaits().sqliteBusyMs)}, so the old pages could not be overwritten; the rows are deleted but the erasure is not finished: close that process and run \`campaign-sync forget\` again (any --user) to finish it`,
            { code: 'SQLITE_BUSY' },
          );
        }
        return { rows, files, earlier, found };
      } catch (err) {
        // A full disk during the rewrite is a storage failure (exit 74), named, never "internal error".
        throw storageError(err, `forget: cannot write ${dbPath}`);
      }
    },
    async close() {
      lock.release();
      db.close();
    },
  };
}
