import type { ApiClient } from '../api/client.js';
import { createClient, serviceClaim } from '../app/client.js';
import { mirrorOf } from '../app/factory.js';
import type { CampaignsSettings } from '../config/command-settings.js';
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
  // Before anything is opened: said even when the database cannot be reached.
  const mirror = mirrorOf(settings, (text) => out.warn(text));
  const config = settings.api;
  for (const w of config.warnings ?? []) out.warn(w);
  const client = createClient(config, { signal, events: commandEvents(out) });
  let list: Awaited<ReturnType<ApiClient['listCampaigns']>>;
  try {
    list = await client.listCampaigns();
  } finally {
    await client.close();
  }
  await mirror.storeCampaigns(list, client.lister, serviceClaim(settings));
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
