/** `status`'s reader of a SQLite mirror, opened read-only. */

import { currentClock } from '../../core/io.js';
import type { MirrorReader, MirrorTarget } from '../port.js';
import { Campaigns } from './campaigns.js';
import { SqliteCheckpoints } from './checkpoints.js';
import { isEmptyDatabase, openDatabase } from './db.js';
import { DriftLedger } from './drift-ledger.js';
import { lockHolder } from './run-lock.js';

export async function openSqliteReader(t: MirrorTarget, opts: { emptyHasNoStreams?: boolean | undefined }): Promise<MirrorReader> {
  const dbPath = t.path;
  if (opts.emptyHasNoStreams && isEmptyDatabase(dbPath)) {
    // Nothing is opened: SQLite would take the empty file for a database without our tables.
    return {
      streams: async () => [],
      campaignNames: async () => new Map(),
      skipped: async () => [],
      holder: async () => lockHolder(dbPath),
      takeDrift: async () => ({ changes: [] }),
      fleet: async () => undefined,
      now: async () => currentClock().now(),
      close: async () => {},
    };
  }
  const db = openDatabase(dbPath, { mustExist: true, readonly: true });
  const campaigns = new Campaigns(db);
  return {
    streams: async () => new SqliteCheckpoints(db).all(),
    campaignNames: async () => campaigns.names(),
    skipped: async () => campaigns.skipped(),
    holder: async () => lockHolder(dbPath),
    takeDrift: async () => {
      const changes = new DriftLedger(db).pending();
      if (changes.length === 0) return { changes };
      // The reader is read-only: a second connection marks them, briefly (a pull's group may hold the write lock).
      try {
        const writer = openDatabase(dbPath, { mustExist: true });
        try {
          new DriftLedger(writer).reported(changes);
        } finally {
          writer.close();
        }
        return { changes };
      } catch (err) {
        return { changes, unmarked: (err as Error).message };
      }
    },
    // One process syncs a SQLite file, under its run lock: no fleet.
    fleet: async () => undefined,
    // One host stamps and reads a SQLite mirror: the run's clock is its clock.
    now: async () => currentClock().now(),
    close: async () => {
      db.close();
    },
  };
}
