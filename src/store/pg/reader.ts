/** `status`'s reader of a PostgreSQL mirror. */
import type { MirrorReader, MirrorTarget } from '../mirror-port.js';
import { campaignNames, skippedCampaigns } from './campaigns.js';
import { PgDatabase } from './database.js';
import { takeDriftChanges } from './drift.js';
import { lockHolders } from './lock.js';
import { PgState } from './state.js';

export async function openPgReader(t: MirrorTarget): Promise<MirrorReader> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 2, mustExist: true, where: t.where });
  const state = new PgState(db);
  return {
    streams: () => state.all(),
    campaignNames: () => campaignNames(db),
    skipped: () => skippedCampaigns(db),
    holder: async () => (await lockHolders(db))[0],
    takeDrift: async () => ({ changes: await takeDriftChanges(db) }),
    close: () => db.close(),
  };
}
