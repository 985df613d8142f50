/**
 * Version 8: change numbers for `export --since-last` (store/sqlite/changes.ts says how they are taken and
 * read). Results gain `change_seq`; `change_counter` holds the last number taken; `tombstones` the
 * results reconcile --prune deleted; `export_consumers` what each consumer has. Rows stored before
 * have no number.
 */
export const V8 = `
ALTER TABLE session_results ADD COLUMN change_seq INTEGER;
ALTER TABLE role_results ADD COLUMN change_seq INTEGER;
CREATE TABLE change_counter (seq INTEGER NOT NULL);
INSERT INTO change_counter (seq) VALUES (0);
CREATE TABLE tombstones (
  table_name TEXT NOT NULL,
  id TEXT NOT NULL,
  campaign_id TEXT,
  seq INTEGER NOT NULL,
  deleted_at TEXT NOT NULL
);
CREATE INDEX tombstones_seq ON tombstones (table_name, seq);
CREATE TABLE export_consumers (
  name TEXT NOT NULL,
  table_name TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  exported_at TEXT NOT NULL,
  PRIMARY KEY (name, table_name)
);
`;
