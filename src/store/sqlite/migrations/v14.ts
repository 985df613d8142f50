/**
 * Version 14: a deletion says why (store/sqlite/changes.ts). `tombstones.reason` is `pruned`
 * (reconcile --prune: every tombstone before this version), `erased` (forget --user) or `retention`
 * (forget --older-than, a retention): an erasure hands each result it takes to the consumers of
 * `export --since-last` too, as a tombstone holding the result's id alone.
 *
 * SQLite has no ADD COLUMN IF NOT EXISTS: the step is code that adds the column where it is missing,
 * so a database whose version was set back by hand (its tables kept) upgrades again.
 */
import type BetterSqlite3 from 'better-sqlite3';

export const V14 = '';

/** Adds `tombstones.reason` unless the table has it; rewrites no row. */
export function reasonsV14(db: BetterSqlite3.Database): number {
  const columns = db.prepare("SELECT name FROM pragma_table_info('tombstones')").pluck().all() as string[];
  if (!columns.includes('reason')) db.exec("ALTER TABLE tombstones ADD COLUMN reason TEXT NOT NULL DEFAULT 'pruned'");
  return 0;
}
