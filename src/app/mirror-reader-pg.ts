/** app/mirror-reader.ts's reader of a PostgreSQL mirror, loaded only for a postgres:// --db. */
import { resolvePgSchema } from '../config/config.js';
import { campaignNames, skippedCampaigns } from '../store/pg/campaigns.js';
import { PgDatabase } from '../store/pg/database.js';
import { lockHolders } from '../store/pg/lock.js';
import { PgState } from '../store/pg/state.js';
import type { MirrorReader } from './mirror-reader.js';

export async function openPgReader(url: string, pgSchema: string | undefined, where: string): Promise<MirrorReader> {
  const db = await PgDatabase.open(url, resolvePgSchema(pgSchema), { connections: 2, mustExist: true, where });
  const state = new PgState(db);
  return {
    streams: () => state.all(),
    campaignNames: () => campaignNames(db),
    skipped: () => skippedCampaigns(db),
    holder: async () => (await lockHolders(db))[0],
    close: () => db.close(),
  };
}
