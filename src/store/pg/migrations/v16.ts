/**
 * Version 16: a deletion says why, as SQLite's schema 14 (store/pg/changes.ts). `tombstones.reason` is
 * `pruned` (reconcile --prune: every tombstone before this version), `erased` (forget --user) or
 * `retention` (forget --older-than, a retention). It may run again on a schema that has it.
 */
export const V16 = `
ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS reason text NOT NULL DEFAULT 'pruned';
`;
