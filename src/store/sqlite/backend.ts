/** The Mirror port (store/port.ts) over a SQLite file; erasure's code is loaded only for `forget`, export's only for `export`. */

import { currentClock } from '../../core/io.js';
import type { Destination } from '../../core/types.js';
import type { BackendCapabilities, MirrorBackend } from '../port.js';
import { Campaigns } from './campaigns.js';
import { openSqliteCheckpointAdmin } from './checkpoint-admin.js';
import { openDatabase } from './db.js';
import { openSqliteJobStore } from './job-store.js';
import { sqliteOwnFiles } from './own-files.js';
import { SqliteQuarantine } from './quarantine.js';
import { openSqliteReader } from './reader.js';
import { claimSqliteService } from './service.js';

/**
 * What a SQLite file can do, by the destination a pull feeds: one host (the run lock), the budget's
 * slots in the user's state folder; an NDJSON folder's records are lines of its files (the files are
 * the export and, a line per change, the history), so nothing reads them as tables.
 */
export const SQLITE_CAPABILITIES: Readonly<Record<Destination['kind'], BackendCapabilities>> = {
  sqlite: { fleet: false, sharedBudget: false, export: true, sql: true, versions: true },
  ndjson: { fleet: false, sharedBudget: false, export: false, sql: false, versions: false },
};

export const sqliteBackend: MirrorBackend = {
  openJobStore: (c) => openSqliteJobStore(c, SQLITE_CAPABILITIES),
  openReader: openSqliteReader,
  openCheckpointAdmin: openSqliteCheckpointAdmin,
  openEraser: async (t) => (await import('./eraser.js')).openSqliteEraser(t),
  openExport: async (t, opts) => (await import('./export-source.js')).openSqliteExport(t, opts),
  ownFiles: sqliteOwnFiles,
  openVersions: async (t) => (await import('./versions.js')).openSqliteVersions(t),
  async openQuarantine(t) {
    const db = openDatabase(t.path, { mustExist: true });
    const quarantine = new SqliteQuarantine(db);
    return {
      name: t.path,
      list: async () => quarantine.list(),
      campaignNames: async () => new Campaigns(db).names(),
      drop: async (which) => quarantine.drop(which),
      close: async () => {
        db.close();
      },
    };
  },
  async storeCampaigns(t, list, lister, service) {
    // The campaigns table is small and written in one transaction: no run lock needed.
    const db = openDatabase(t.path, { mode: t.modes.file });
    try {
      claimSqliteService(db, service, t.path);
      // Seen at the run's clock, as a pull's lists are (grouped-sink.ts runNow).
      new Campaigns(db).upsert(list, new Date(currentClock().now()).toISOString(), lister);
    } finally {
      db.close();
    }
  },
};
