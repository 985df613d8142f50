/** Version 4: record ids served by two campaigns, each skipped copy once (store/sqlite/conflicts.ts), as SQLite's schema 7. */
export const V4 = `
CREATE TABLE IF NOT EXISTS id_conflicts (
  stream text NOT NULL, record_id text NOT NULL, campaign_id text NOT NULL, kept_campaign_id text NOT NULL,
  first_seen_at timestamptz NOT NULL, PRIMARY KEY (stream, record_id)
);
`;
