/**
 * Version 9: the quarantine, as SQLite's schema 10 (store/sqlite/quarantine.ts): records that failed the
 * record rules, each kept once per stream (by the digest of its text) with the page that held it.
 * May run again on a schema that has it (as versions 4 to 6).
 */
export const V9 = `
CREATE TABLE IF NOT EXISTS quarantine (
  id bigserial PRIMARY KEY,
  stream text NOT NULL,
  campaign_id text NOT NULL,
  endpoint text NOT NULL,
  report_type text,
  record_id text,
  order_index text,
  raw text NOT NULL,
  digest text NOT NULL,
  reason text NOT NULL,
  request_id text,
  page_after text,
  page_since text,
  page_until text,
  page_position integer NOT NULL,
  quarantined_at timestamptz NOT NULL,
  UNIQUE (stream, digest)
);
`;
