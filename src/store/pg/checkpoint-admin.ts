/** `reset` on a PostgreSQL mirror, under the locks of the streams it changes. */
import type { CheckpointAdmin, MirrorTarget } from '../mirror-port.js';
import { campaignIdsNamed } from './campaigns.js';
import { PgDatabase } from './database.js';
import { PgLocks } from './lock.js';
import { PgState } from './state.js';

export async function openPgCheckpointAdmin(t: MirrorTarget): Promise<CheckpointAdmin> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 3, mustExist: true, where: t.where });
  const state = new PgState(db);
  const locks = new PgLocks(db);
  return {
    name: db.name,
    hasStreams: (id) => state.hasStreams(id),
    idsNamed: (name) => campaignIdsNamed(db, name),
    checkpointed: async () => (await state.all()).filter((r) => r.cursor !== null).length,
    async reset(campaignIds) {
      const all = await state.all();
      for (const r of all) if (campaignIds.length === 0 || campaignIds.includes(r.campaign_id)) await locks.acquire(r.stream);
      return state.reset(campaignIds, all);
    },
    async close() {
      await locks.release();
      await db.close();
    },
  };
}
