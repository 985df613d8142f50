/** The Mirror port (store/port.ts) over a SQLite file; erasure's code is loaded only for `forget`, export's only for `export`. */

import type { MirrorBackend } from '../port.js';
import { Campaigns } from './campaigns.js';
import { openSqliteCheckpointAdmin } from './checkpoint-admin.js';
import { openDatabase } from './db.js';
import { openSqliteJobStore } from './job-store.js';
import { sqliteOwnFiles } from './own-files.js';
import { SqliteQuarantine } from './quarantine.js';
import { openSqliteReader } from './reader.js';

export const sqliteBackend: MirrorBackend = {
  openJobStore: openSqliteJobStore,
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
      drop: async (which) => quarantine.drop(which),
      close: async () => {
        db.close();
      },
    };
  },
  async storeCampaigns(t, list, at, lister) {
    // The campaigns table is small and written in one transaction: no run lock needed.
    const db = openDatabase(t.path);
    try {
      new Campaigns(db).upsert(list, at, lister);
    } finally {
      db.close();
    }
  },
};
