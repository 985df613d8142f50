/**
 * Version 6: change numbers for `export --since-last`, as SQLite's schema 8 (store/pg/changes.ts says
 * how they are taken and read). Results gain `change_seq`; the sequence `change_counter` hands out
 * the numbers, one at a time (CACHE 1: a number a session kept in a cache could be handed out after
 * an export read the sequence past it); `tombstones` holds the results reconcile --prune deleted;
 * `export_consumers` what each consumer has. Rows stored before have no number. Each step may run
 * again on a schema that has it (as versions 4 and 5).
 */
export const V6 = `
ALTER TABLE session_results ADD COLUMN IF NOT EXISTS change_seq bigint;
ALTER TABLE role_results ADD COLUMN IF NOT EXISTS change_seq bigint;
CREATE SEQUENCE IF NOT EXISTS change_counter AS bigint MINVALUE 1 START 1 CACHE 1 NO CYCLE;
CREATE TABLE IF NOT EXISTS tombstones (
  table_name text NOT NULL, id text NOT NULL, campaign_id text, seq bigint NOT NULL, deleted_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS tombstones_seq ON tombstones (table_name, seq);
CREATE TABLE IF NOT EXISTS export_consumers (
  name text NOT NULL, table_name text NOT NULL, last_seq bigint NOT NULL, exported_at timestamptz NOT NULL,
  PRIMARY KEY (name, table_name)
);
`;
