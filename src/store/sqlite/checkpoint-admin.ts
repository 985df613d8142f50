/** `reset` on a SQLite mirror, under the run lock. */

import type { CheckpointAdmin, MirrorTarget } from '../port.js';
import { Campaigns } from './campaigns.js';
import { SqliteCheckpoints } from './checkpoints.js';
import { openDatabase } from './db.js';
import { RunLock } from './run-lock.js';

export async function openSqliteCheckpointAdmin(t: MirrorTarget): Promise<CheckpointAdmin> {
  const dbPath = t.path;
  const db = openDatabase(dbPath, { mustExist: true });
  let lock: RunLock | undefined;
  try {
    // Changing checkpoints under a running pull would be undone by its next commit: take the lock.
    lock = RunLock.acquire(dbPath);
  } catch (err) {
    db.close();
    throw err;
  }
  const checkpoints = new SqliteCheckpoints(db);
  const campaigns = new Campaigns(db);
  const held = lock;
  return {
    name: dbPath,
    hasStreams: async (id) => checkpoints.hasStreams(id),
    campaignIds: async (selector) => campaigns.idsFor(selector),
    checkpointed: async () => checkpoints.all().filter((r) => r.cursor !== null).length,
    reset: async (ids) => checkpoints.reset(ids),
    async close() {
      held.release();
      db.close();
    },
  };
}
