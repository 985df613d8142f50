import { resolveDbPath } from '../config/config.js';
import { UsageError } from '../errors.js';
import { Campaigns } from '../store/campaigns.js';
import { Checkpoints } from '../store/checkpoints.js';
import { openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { canAsk, confirm } from '../ui/confirm.js';
import { Output, type OutputFlags } from '../ui/output.js';

export interface ResetFlags extends OutputFlags {
  db?: string;
  campaign?: string[];
  all?: boolean;
}

/** Campaign ids for ids or names, as `pull --campaign` takes them; one that matches nothing is a usage error. */
function resolveCampaigns(checkpoints: Checkpoints, campaigns: Campaigns, selectors: string[]): string[] {
  return selectors.map((sel) => {
    if (checkpoints.hasStreams(sel)) return sel;
    const ids = campaigns.idsNamed(sel);
    if (ids.length === 1) return ids[0] as string;
    if (ids.length > 1) throw new UsageError(`--campaign: "${sel}" names ${ids.length} campaigns; use the id`);
    throw new UsageError(
      `--campaign: no stream of a campaign with the id or name "${sel}" in this database (see \`campaign-sync status\`)`,
    );
  });
}

/** `campaign-sync reset`: forgets checkpoints (not data) so the next pull re-reads. */
export async function reset(flags: ResetFlags): Promise<number> {
  const out = new Output(flags);
  const selectors = flags.campaign ?? [];
  if (flags.all && selectors.length > 0) throw new UsageError('--all forgets every checkpoint; it does not go with --campaign');
  // Forgetting every checkpoint makes the next pull re-read everything (minutes of the request
  // budget): it takes --all, or a yes on a terminal; a script without --all is a usage error.
  if (!flags.all && selectors.length === 0 && !canAsk(out)) {
    throw new UsageError('reset: name the streams to forget with --campaign <id or name>, or pass --all to forget every checkpoint');
  }
  const dbPath = resolveDbPath(flags.db);
  const db = openDatabase(dbPath, { mustExist: true });
  // Changing checkpoints under a running pull would be undone by its next commit: take the lock.
  let lock: RunLock | undefined;
  try {
    lock = RunLock.acquire(dbPath);
    const checkpoints = new Checkpoints(db);
    const campaigns = resolveCampaigns(checkpoints, new Campaigns(db), selectors);
    if (!flags.all && campaigns.length === 0) {
      const streams = checkpoints.all().filter((r) => r.cursor !== null).length;
      const question = `Forget the checkpoints of all ${streams} stream${streams === 1 ? '' : 's'} in ${dbPath}? The next pull re-reads everything.`;
      if (!(await confirm(out, question))) {
        out.print('Nothing was reset.');
        return 0;
      }
    }
    const changed = checkpoints.reset(campaigns);
    out.document({ reset: changed, campaigns });
    out.print(
      `Forgot ${changed} checkpoint${changed === 1 ? '' : 's'}${campaigns.length ? ` of ${campaigns.join(', ')}` : ''}; the next pull re-reads (stored records are kept).`,
    );
    return 0;
  } finally {
    lock?.release();
    db.close();
  }
}
