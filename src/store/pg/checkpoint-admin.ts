/** `reset` on a PostgreSQL mirror, holding the leases of the streams it changes. */
import type { CheckpointAdmin, MirrorTarget } from '../port.js';
import { campaignIdsFor } from './campaigns.js';
import { PgCheckpoints } from './checkpoints.js';
import { PgDatabase } from './database.js';
import { holdAll } from './lease-hold.js';
import { PgLeases } from './leases.js';
import { DEFAULT_LEASE_MS } from './open.js';

export async function openPgCheckpointAdmin(t: MirrorTarget): Promise<CheckpointAdmin> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 3, mustExist: true, upgrade: true, where: t.where });
  const state = new PgCheckpoints(db);
  const leases = new PgLeases(db, DEFAULT_LEASE_MS);
  return {
    name: db.name,
    hasStreams: (id) => state.hasStreams(id),
    campaignIds: (selector) => campaignIdsFor(db, selector),
    checkpointed: async () => (await state.all()).filter((r) => r.cursor !== null).length,
    async reset(campaignIds) {
      const all = await state.all();
      await holdAll(
        leases,
        all.filter((r) => campaignIds.length === 0 || campaignIds.includes(r.campaign_id)).map((r) => r.stream),
        db.name,
      );
      return state.reset(campaignIds, all);
    },
    async close() {
      try {
        await leases.close();
      } finally {
        await db.close();
      }
    },
  };
}
