/**
 * Version 4: what each NDJSON file holds of each record (a digest of its last line), so a record read
 * again (lookback, --full, reconcile) is appended only when it changed, and reconcile knows which
 * records a folder holds. Files written before have no entries yet: `indexed = 0` makes the NDJSON
 * sink build them from the file's committed lines once (store/sqlite/ndjson/digest-index.ts).
 */
export const V4 = `
CREATE TABLE ndjson_records (
  path TEXT NOT NULL,
  report_type TEXT NOT NULL,
  id TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  digest TEXT NOT NULL,
  PRIMARY KEY (path, report_type, id)
) WITHOUT ROWID;
ALTER TABLE ndjson_files ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;
UPDATE ndjson_files SET indexed = 0;
`;
