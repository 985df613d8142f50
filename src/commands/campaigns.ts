import type { ApiClient } from '../api/client.js';
import { createClient, serviceClaim } from '../app/client.js';
import { mirrorOf } from '../app/factory.js';
import type { CampaignsSettings } from '../config/command-settings.js';
import { PREFIX_MIN } from '../core/campaign-selector.js';
import { commandEvents } from '../ui/events.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { type Column, renderTable } from '../ui/table.js';

/**
 * On a narrow terminal the creation time goes first, then the type and the display name; the id
 * and the name (what `--campaign` takes) stay: the name whole, the id shortened, when it must be, to
 * the shortest prefix of at least 8 characters that tells the campaigns apart (`--campaign` takes
 * that too).
 */
const CAMPAIGN_COLUMNS: Column[] = [
  { head: 'id', prefix: PREFIX_MIN },
  { head: 'name', whole: true },
  { head: 'display name', shrink: 16, drop: 3 },
  { head: 'type', drop: 2 },
  { head: 'created', drop: 1 },
];

/** `campaign-sync campaigns`: lists the accessible campaigns and upserts them into `campaigns`. */
export async function campaigns(settings: CampaignsSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  // Before anything is opened: said even when the database cannot be reached.
  const mirror = mirrorOf(settings, (text) => out.warn(text));
  const config = settings.api;
  for (const w of config.warnings ?? []) out.warn(w);
  // A service that rate-limits the list makes it wait (a Retry-After of a minute): shown, not a silent terminal.
  const progress = await startProgress(out, 'listing campaigns');
  const client = createClient(config, { signal, events: commandEvents(out, progress) });
  let list: Awaited<ReturnType<ApiClient['listCampaigns']>>;
  try {
    list = await client.listCampaigns();
  } finally {
    progress.stop();
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
