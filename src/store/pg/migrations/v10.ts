/**
 * Version 10: drift, as SQLite's schema 11 (store/sqlite/drift-ledger.ts): per stream, each field path and
 * enumeration value its records carried, with the first record that carried it; `pending` is what
 * `status` has yet to report once. May run again on a schema that has it.
 */
export const V10 = `
CREATE TABLE IF NOT EXISTS drift_seen (
  stream text NOT NULL,
  kind text NOT NULL,
  value text NOT NULL,
  record_id text NOT NULL,
  seen_at timestamptz NOT NULL,
  baseline boolean NOT NULL,
  present boolean NOT NULL DEFAULT true,
  gone_at timestamptz,
  pending text,
  PRIMARY KEY (stream, kind, value)
);
CREATE INDEX IF NOT EXISTS drift_seen_pending ON drift_seen (pending) WHERE pending IS NOT NULL;
`;
