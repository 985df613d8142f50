import type { ApiClient } from '../api/client.js';
import { createClient } from '../app/client.js';
import { dbChoice } from '../config/config.js';
import type { CampaignsSettings } from '../config/settings.js';
import { Campaigns } from '../store/campaigns.js';
import { openDatabase } from '../store/db.js';
import { dbWarnings, isPgUrl } from '../store/pg/url.js';
import { commandEvents } from '../ui/events.js';
import { Output } from '../ui/output.js';
import { type Column, renderTable } from '../ui/table.js';

/**
 * On a narrow terminal the creation time goes first, then the display name and the type; the id
 * and the name (what `--campaign` takes) stay, cut no shorter than 13 and 20 characters.
 */
const CAMPAIGN_COLUMNS: Column[] = [
  { head: 'id', shrink: 13 },
  { head: 'name', shrink: 20 },
  { head: 'display name', shrink: 16, drop: 2 },
  { head: 'type', drop: 3 },
  { head: 'created', drop: 1 },
];

/** `campaign-sync campaigns`: lists the accessible campaigns and upserts them into `campaigns`. */
export async function campaigns(settings: CampaignsSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const chosen = dbChoice(settings.db, settings.sourceOf('db'));
  // Before anything is opened: said even when the database cannot be reached.
  for (const w of dbWarnings(chosen)) out.warn(w);
  const { path: dbPath, where } = chosen;
  const pgSchema = isPgUrl(dbPath) ? settings.pgSchema : undefined;
  const config = settings.api;
  for (const w of config.warnings ?? []) out.warn(w);
  const client = createClient(config, { signal, events: commandEvents(out) });
  let list: Awaited<ReturnType<ApiClient['listCampaigns']>>;
  try {
    list = await client.listCampaigns();
  } finally {
    await client.close();
  }
  // The campaigns table is small and written in one transaction: no run lock needed.
  if (pgSchema !== undefined) {
    // pg is loaded only for a postgres:// --db.
    await (await import('../app/campaign-list-pg.js')).storeCampaignsPg(dbPath, pgSchema, list, where, client.lister);
  } else {
    const db = openDatabase(dbPath);
    try {
      new Campaigns(db).upsert(list, new Date().toISOString(), client.lister);
    } finally {
      db.close();
    }
  }
  out.document({ data: list });
  out.print(
    list.length === 0
      ? 'This key can access no campaigns.'
      : renderTable(
          CAMPAIGN_COLUMNS,
          list.map((c) => [c.id, c.name ?? '', c.display_name ?? '', c.type ?? '', c.created_at ?? '']),
          out.tableStyle,
        ),
  );
  return 0;
}
