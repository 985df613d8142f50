/**
 * Version 7: record ids served by two campaigns (store/sqlite/conflicts.ts): each copy skipped, once, so its
 * warning is given once and `status` counts them per stream.
 */
export const V7 = `
CREATE TABLE id_conflicts (
  stream TEXT NOT NULL,
  record_id TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  kept_campaign_id TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  PRIMARY KEY (stream, record_id)
) WITHOUT ROWID;
`;
