/**
 * Version 10: the quarantine (store/sqlite/quarantine.ts): records that failed the record rules, each kept
 * once per stream (by the digest of its text) with the page that held it, so that `quarantine retry`
 * can read that page again.
 */
export const V10 = `
CREATE TABLE quarantine (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  report_type TEXT,
  record_id TEXT,
  order_index TEXT,
  raw TEXT NOT NULL,
  digest TEXT NOT NULL,
  reason TEXT NOT NULL,
  request_id TEXT,
  page_after TEXT,
  page_since TEXT,
  page_until TEXT,
  page_position INTEGER NOT NULL,
  quarantined_at TEXT NOT NULL,
  UNIQUE (stream, digest)
);
`;
