/**
 * What `reset` needs of a mirror, whichever database holds it: find campaigns by id or name, count
 * and forget checkpoints, under the lock (SQLite: the run lock; PostgreSQL: the locks of the streams
 * it changes, so a worker syncing one of them makes reset exit 75 rather than be undone).
 */
import { dbChoice } from '../config/config.js';
import type { MirrorSettings } from '../config/settings.js';
import { Campaigns } from '../store/campaigns.js';
import { Checkpoints } from '../store/checkpoints.js';
import { openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { dbWarnings, isPgUrl } from '../store/pg/url.js';

export interface CheckpointAdmin {
  /** The database as messages name it (a PostgreSQL URL without its password). */
  readonly name: string;
  hasStreams(campaignId: string): Promise<boolean>;
  idsNamed(name: string): Promise<string[]>;
  /** Streams that have a checkpoint. */
  checkpointed(): Promise<number>;
  /**
   * Forgets the checkpoints of the campaigns (all when none), under the lock, and removes their
   * retired streams (a campaign whose type changed); returns how many were forgotten, and which went.
   */
  reset(campaignIds: string[]): Promise<{ forgotten: number; removed: string[] }>;
  close(): Promise<void>;
}

/** Opens the mirror of --db for `reset`; `warn` gets the warnings about where its password is kept (store/pg/url.ts dbWarnings). */
export async function openCheckpointAdmin(settings: MirrorSettings, warn?: (text: string) => void): Promise<CheckpointAdmin> {
  const chosen = dbChoice(settings.db, settings.sourceOf('db'));
  for (const w of dbWarnings(chosen)) warn?.(w);
  const { path: dbPath, where } = chosen;
  // pg is loaded only for a postgres:// --db: `reset` on a SQLite file starts as light as a pull.
  if (isPgUrl(dbPath)) return (await import('./checkpoint-admin-pg.js')).openPgCheckpointAdmin(dbPath, settings.pgSchema, where);
  const db = openDatabase(dbPath, { mustExist: true });
  let lock: RunLock | undefined;
  try {
    // Changing checkpoints under a running pull would be undone by its next commit: take the lock.
    lock = RunLock.acquire(dbPath);
  } catch (err) {
    db.close();
    throw err;
  }
  const checkpoints = new Checkpoints(db);
  const campaigns = new Campaigns(db);
  const held = lock;
  return {
    name: dbPath,
    hasStreams: async (id) => checkpoints.hasStreams(id),
    idsNamed: async (name) => campaigns.idsNamed(name),
    checkpointed: async () => checkpoints.all().filter((r) => r.cursor !== null).length,
    reset: async (ids) => checkpoints.reset(ids),
    async close() {
      held.release();
      db.close();
    },
  };
}
