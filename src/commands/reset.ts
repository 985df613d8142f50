import { mirrorOf } from '../app/factory.js';
import type { ResetSettings } from '../config/command-settings.js';
import { UsageError } from '../errors.js';
import type { CheckpointAdmin } from '../store/port.js';
import { canAsk, confirm } from '../ui/confirm.js';
import { showText } from '../ui/escape.js';
import { Output } from '../ui/output.js';

/** Campaign ids for ids, names or id prefixes, as `pull --campaign` takes them; one that matches nothing is a usage error. */
async function resolveCampaigns(admin: CheckpointAdmin, selectors: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const sel of selectors) ids.push(await resolveCampaign(admin, sel));
  // One campaign named twice (by its name and its id, or the same twice) is one campaign.
  return [...new Set(ids)];
}

async function resolveCampaign(admin: CheckpointAdmin, sel: string): Promise<string> {
  if (await admin.hasStreams(sel)) return sel;
  const ids = await admin.campaignIds(sel);
  if (ids.length === 1) {
    const id = ids[0] as string;
    // A campaign the database knows but never synced (a type campaign-sync does not read, or one no
    // pull has reached yet): "Forgot 0 checkpoints" would read as done.
    if (!(await admin.hasStreams(id))) {
      throw new UsageError(
        `--campaign: "${sel}" has no stream in this database (a type campaign-sync does not read, or no pull has reached it yet): nothing to reset (see \`campaign-sync status\`)`,
      );
    }
    return id;
  }
  if (ids.length > 1) throw new UsageError(`--campaign: "${sel}" names ${ids.length} campaigns; use the id`);
  throw new UsageError(
    `--campaign: no stream of a campaign with the id, name or id prefix "${sel}" in this database (see \`campaign-sync status\`)`,
  );
}

/** `campaign-sync reset`: forgets checkpoints (not data) so the next pull re-reads. */
export async function reset(settings: ResetSettings, signal?: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const selectors = [...settings.campaign];
  if (settings.all && selectors.length > 0) throw new UsageError('--all forgets every checkpoint; it does not go with --campaign');
  // Forgetting every checkpoint makes the next pull re-read everything (minutes of the request
  // budget): it takes --all, or a yes on a terminal; a script without --all is a usage error.
  if (!settings.all && selectors.length === 0 && !canAsk(out)) {
    throw new UsageError('reset: name the streams to forget with --campaign <id or name>, or pass --all to forget every checkpoint');
  }
  const admin = await mirrorOf(settings, (text) => out.warn(text)).checkpointAdmin();
  try {
    const campaigns = await resolveCampaigns(admin, selectors);
    if (!settings.all && campaigns.length === 0) {
      const streams = await admin.checkpointed();
      if (streams === 0) {
        out.document({ reset: 0, campaigns });
        out.print(`No checkpoints to forget in ${admin.name}.`);
        return 0;
      }
      const question = `Forget the checkpoints of all ${streams} stream${streams === 1 ? '' : 's'} in ${admin.name}? The next pull re-reads everything.`;
      if (!(await confirm(out, question, 'nothing was reset', signal))) {
        out.print('Nothing was reset.');
        return 0;
      }
    }
    const { forgotten: changed, removed } = await admin.reset(campaigns);
    out.document({ reset: changed, campaigns, retired_streams_removed: removed });
    out.print(
      `Forgot ${changed} checkpoint${changed === 1 ? '' : 's'}${campaigns.length ? ` of ${campaigns.join(', ')}` : ''}; the next pull re-reads (stored records are kept).`,
    );
    // Stream keys are campaign ids from the service: escaped.
    if (removed.length > 0)
      out.print(
        showText(
          `Removed ${removed.length === 1 ? 'the retired stream' : `${removed.length} retired streams`} ${removed.join(', ')} (the campaign's type changed; its stored records are kept).`,
        ),
      );
    return 0;
  } finally {
    await admin.close();
  }
}
