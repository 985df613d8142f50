/** The Mirror port (store/port.ts) over a PostgreSQL team mirror; loaded only for a postgres:// --db. */
import type { BackendCapabilities, MirrorBackend } from '../port.js';
import { campaignNames, upsertCampaigns } from './campaigns.js';
import { openPgCheckpointAdmin } from './checkpoint-admin.js';
import { PgDatabase } from './database.js';
import { openPgEraser } from './eraser.js';
import { openPgJobStore } from './job-store.js';
import { dropQuarantine, listQuarantine } from './quarantine.js';
import { openPgReader } from './reader.js';
import { serverNow } from './server-clock.js';
import { claimPgService } from './service.js';

/**
 * What a PostgreSQL team mirror can do: a fleet of workers taking streams by lease, the request
 * budget's slots in the database for every host, and the tables SQLite has (it has no NDJSON destination).
 */
export const PG_CAPABILITIES: BackendCapabilities = { fleet: true, sharedBudget: true, export: true, sql: true, versions: true };

export const pgBackend: MirrorBackend = {
  openJobStore: (c) => openPgJobStore(c, PG_CAPABILITIES),
  openReader: (t) => openPgReader(t),
  openCheckpointAdmin: openPgCheckpointAdmin,
  openEraser: openPgEraser,
  openExport: async (t, opts) => (await import('./export-source.js')).openPgExport(t, opts),
  // Nothing of a server's mirror is a local file an export could write over.
  ownFiles: () => [],
  openVersions: async (t) => (await import('./versions.js')).openPgVersions(t),
  async openQuarantine(t) {
    // Brought to the current version: a mirror of an older release gets its (empty) quarantine.
    const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 1, mustExist: true, upgrade: true, where: t.where });
    return {
      name: db.name,
      list: () => listQuarantine(db),
      campaignNames: () => campaignNames(db),
      drop: (which) => dropQuarantine(db, which),
      close: () => db.close(),
    };
  },
  async storeCampaigns(t, list, lister, service) {
    // Created and migrated on first use, like a pull.
    const db = await PgDatabase.open(t.path, t.pgSchema, { connections: 1, where: t.where });
    try {
      await claimPgService(db, service);
      // Seen at the server's clock, as a pull's lists are (store/pg/server-clock.ts).
      await upsertCampaigns(db, list, new Date(await serverNow(db)).toISOString(), lister);
    } finally {
      await db.close();
    }
  },
};
