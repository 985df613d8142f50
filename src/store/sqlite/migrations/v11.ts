/**
 * Version 11: drift, per stream: each field path and enumeration value its records carried (sync/drift.ts says
 * which), with the first record that carried it. `baseline` marks what the stream's first pass
 * recorded; `present` is 0 once a full read no longer carried it (`gone_at`); `pending` is what
 * `status` has yet to report once ('appeared', 'disappeared'), NULL when nothing is.
 */
export const V11 = `
CREATE TABLE drift_seen (
  stream TEXT NOT NULL,
  kind TEXT NOT NULL,
  value TEXT NOT NULL,
  record_id TEXT NOT NULL,
  seen_at TEXT NOT NULL,
  baseline INTEGER NOT NULL,
  present INTEGER NOT NULL DEFAULT 1,
  gone_at TEXT,
  pending TEXT,
  PRIMARY KEY (stream, kind, value)
) WITHOUT ROWID;
CREATE INDEX drift_seen_pending ON drift_seen (pending) WHERE pending IS NOT NULL;
`;
