/**
 * What `status` (and `status --check`) reads of a mirror, whichever database holds it: the streams,
 * the campaigns' names, the campaigns skipped for their type, and who is syncing it now.
 */
// No zod and no pg here: `status` of a SQLite mirror stays a light process; the
// PostgreSQL reader (mirror-reader-pg.ts) is loaded only for a postgres:// --db.
import { dbChoice } from '../config/config.js';
import type { MirrorSettings } from '../config/settings.js';
import { Campaigns, type SkippedCampaign } from '../store/campaigns.js';
import { Checkpoints, type StreamRow } from '../store/checkpoints.js';
import { isEmptyDatabase, openDatabase } from '../store/db.js';
import { type Holder, lockHolder } from '../store/lock.js';
import { dbWarnings, isPgUrl } from '../store/pg/url.js';

export interface MirrorReader {
  streams(): Promise<StreamRow[]>;
  campaignNames(): Promise<Map<string, string>>;
  skipped(): Promise<SkippedCampaign[]>;
  /** A process syncing the mirror now (SQLite: the lock's holder; PostgreSQL: the first worker holding stream locks). */
  holder(): Promise<Holder | undefined>;
  close(): Promise<void>;
}

/**
 * Opens the mirror of --db (and --pg-schema) for reading; a missing one is an error naming it, and so
 * is an empty file unless `emptyHasNoStreams` (status --check: a mirror with nothing synced yet).
 * `warn` gets the warnings about where its password is kept (store/pg/url.ts dbWarnings).
 */
export async function openMirrorReader(
  settings: MirrorSettings,
  opts: { emptyHasNoStreams?: boolean; warn?: (text: string) => void } = {},
): Promise<MirrorReader> {
  const chosen = dbChoice(settings.db, settings.sourceOf('db'));
  for (const w of dbWarnings(chosen)) opts.warn?.(w);
  const { path: dbPath, where } = chosen;
  if (isPgUrl(dbPath)) return (await import('./mirror-reader-pg.js')).openPgReader(dbPath, settings.pgSchema, where);
  if (opts.emptyHasNoStreams && isEmptyDatabase(dbPath)) {
    // Nothing is opened: SQLite would take the empty file for a database without our tables.
    return {
      streams: async () => [],
      campaignNames: async () => new Map(),
      skipped: async () => [],
      holder: async () => lockHolder(dbPath),
      close: async () => {},
    };
  }
  const db = openDatabase(dbPath, { mustExist: true, readonly: true });
  const campaigns = new Campaigns(db);
  return {
    streams: async () => new Checkpoints(db).all(),
    campaignNames: async () => campaigns.names(),
    skipped: async () => campaigns.skipped(),
    holder: async () => lockHolder(dbPath),
    close: async () => {
      db.close();
    },
  };
}
