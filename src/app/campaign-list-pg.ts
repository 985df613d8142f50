/**
 * `campaigns` into a PostgreSQL team mirror (loaded only for a postgres:// --db): the list is upserted
 * into the mirror's campaigns table, as a pull does (created and migrated on first use, like a pull).
 */
import { upsertCampaigns } from '../store/pg/campaigns.js';
import { PgDatabase } from '../store/pg/database.js';

export async function storeCampaignsPg(
  url: string,
  pgSchema: string,
  list: Array<Record<string, unknown>>,
  where: string,
  lister: string,
): Promise<void> {
  const db = await PgDatabase.open(url, pgSchema, { connections: 1, where });
  try {
    await upsertCampaigns(db, list, new Date().toISOString(), lister);
  } finally {
    await db.close();
  }
}
