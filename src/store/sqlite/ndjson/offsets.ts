/**
 * What this database wrote to each NDJSON file: the committed length of the file (`ndjson_files`),
 * and for the campaigns file the last line sent per campaign (`ndjson_campaigns`). Both are written
 * in the same transaction as the checkpoints, so they stay in step with the files.
 */
import type { Db } from '../db.js';

export class NdjsonOffsets {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      get: db.prepare('SELECT committed_bytes FROM ndjson_files WHERE path = ?').pluck(),
      files: db.prepare('SELECT path, committed_bytes FROM ndjson_files ORDER BY path'),
      set: db.prepare(
        'INSERT INTO ndjson_files (path, committed_bytes) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET committed_bytes = excluded.committed_bytes',
      ),
      campaign: db.prepare('SELECT raw FROM ndjson_campaigns WHERE path = ? AND campaign_id = ?').pluck(),
      setCampaign: db.prepare(
        'INSERT INTO ndjson_campaigns (path, campaign_id, raw) VALUES (?, ?, ?) ON CONFLICT (path, campaign_id) DO UPDATE SET raw = excluded.raw',
      ),
    };
  }

  /** Every file this database wrote, with its committed length. */
  files(): Array<{ path: string; committed: number }> {
    return (this.s.files.all() as Array<{ path: string; committed_bytes: number }>).map((f) => ({
      path: f.path,
      committed: Number(f.committed_bytes),
    }));
  }

  /** The committed length of `path`, or undefined when this database never wrote it. */
  committed(path: string): number | undefined {
    const v = this.s.get.get(path) as number | bigint | undefined;
    return v === undefined ? undefined : Number(v);
  }

  /** Records the new committed length. Call inside the page's transaction. */
  setCommitted(path: string, bytes: number): void {
    this.s.set.run(path, bytes);
  }

  /** The JSON text last written for a campaign to the campaigns file `path`. */
  campaignLine(path: string, campaignId: string): string | undefined {
    return this.s.campaign.get(path, campaignId) as string | undefined;
  }

  /** Records a campaign line written to `path`. Call inside the write's transaction. */
  setCampaignLine(path: string, campaignId: string, raw: string): void {
    this.s.setCampaign.run(path, campaignId, raw);
  }
}
