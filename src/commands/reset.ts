import { resolveDbPath } from '../config/config.js';
import { openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { SyncState } from '../store/state.js';
import { Output, type OutputFlags } from '../ui/output.js';

export interface ResetFlags extends OutputFlags {
  db?: string;
  campaign?: string[];
}

/** `campaign-sync reset`: forgets checkpoints (not data) so the next pull re-reads. */
export async function reset(flags: ResetFlags): Promise<number> {
  const out = new Output(flags);
  const dbPath = resolveDbPath(flags.db);
  const db = openDatabase(dbPath, { mustExist: true });
  // Changing checkpoints under a running pull would be undone by its next commit: take the lock.
  let lock: RunLock | undefined;
  try {
    lock = RunLock.acquire(dbPath);
    const campaigns = flags.campaign ?? [];
    const changed = new SyncState(db).reset(campaigns);
    out.document({ reset: changed, campaigns });
    out.print(
      `Forgot ${changed} checkpoint${changed === 1 ? '' : 's'}${campaigns.length ? ` of ${campaigns.join(', ')}` : ''}; the next pull re-reads (stored records are kept).`,
    );
    return 0;
  } finally {
    lock?.release();
    db.close();
  }
}
