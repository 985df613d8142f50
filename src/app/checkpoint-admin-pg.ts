/** app/checkpoint-admin.ts's PostgreSQL part, loaded only for a postgres:// --db. */
import { resolvePgSchema } from '../config/config.js';
import { campaignIdsNamed } from '../store/pg/campaigns.js';
import { PgDatabase } from '../store/pg/database.js';
import { PgLocks } from '../store/pg/lock.js';
import { PgState } from '../store/pg/state.js';
import type { CheckpointAdmin } from './checkpoint-admin.js';

export async function openPgCheckpointAdmin(dbPath: string, pgSchema: string | undefined, where: string): Promise<CheckpointAdmin> {
  const db = await PgDatabase.open(dbPath, resolvePgSchema(pgSchema), { connections: 3, mustExist: true, where });
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
