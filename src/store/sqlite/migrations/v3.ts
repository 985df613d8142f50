/**
 * Version 3: what each NDJSON destination was sent of the campaign list, tracked per file. Before, the
 * shared `campaigns` table stood in for it, so a campaign stored by `campaign-sync campaigns` (or by a
 * SQLite pull) never reached campaigns.ndjson. A v2 database's campaigns file was written from that
 * table, so the table's rows are what it holds: they seed the new one.
 */
export const V3 = `
CREATE TABLE ndjson_campaigns (
  path TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  raw TEXT NOT NULL,
  PRIMARY KEY (path, campaign_id)
);
INSERT INTO ndjson_campaigns (path, campaign_id, raw)
  SELECT f.path, c.id, c.raw FROM ndjson_files f, campaigns c WHERE f.path LIKE '%/campaigns.ndjson' AND f.committed_bytes > 0;
`;
