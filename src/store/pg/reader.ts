/** `status`'s reader of a PostgreSQL mirror. */
import type { MirrorReader, MirrorTarget } from '../port.js';
import { campaignNames, skippedCampaigns } from './campaigns.js';
import { PgCheckpoints } from './checkpoints.js';
import { PgDatabase } from './database.js';
import { takeDriftChanges } from './drift.js';
import { fleetStatus } from './fleet-status.js';
import { lockHolders } from './lock.js';
import { serverNow } from './server-clock.js';

export async function openPgReader(t: MirrorTarget): Promise<MirrorReader> {
  const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 2, mustExist: true, where: t.where });
  const state = new PgCheckpoints(db);
  return {
    streams: () => state.all(),
    campaignNames: () => campaignNames(db),
    skipped: () => skippedCampaigns(db),
    // The first live worker holding a lease; a mirror of an older schema: its advisory locks' holders.
    holder: async () => {
      const fleet = await fleetStatus(db);
      if (fleet === undefined) return (await lockHolders(db))[0];
      const w = fleet.workers.find((x) => x.alive && x.streams.length > 0);
      return w === undefined ? undefined : { pid: w.pid, host: w.host, since: w.since };
    },
    fleet: () => fleetStatus(db),
    takeDrift: async () => ({ changes: await takeDriftChanges(db) }),
    // Ages are the server's: what every worker stamped is on its clock (store/pg/server-clock.ts).
    now: () => serverNow(db),
    close: () => db.close(),
  };
}
