/**
 * Version 16: campaigns gain `change_seq`, the change number of the write that inserted a campaign or
 * changed its name (store/sqlite/changes.ts). The views give each result's campaign name, so their
 * `export --since-last` feeds give a campaign's results again once it is renamed. Campaigns stored
 * before have no number.
 *
 * SQLite has no ADD COLUMN IF NOT EXISTS: the step is code that adds the column where it is missing,
 * so a database whose version was set back by hand (its tables kept) upgrades again.
 */
import type BetterSqlite3 from 'better-sqlite3';

export const V16 = '';

/** Adds `campaigns.change_seq` unless the table has it; rewrites no row. */
export function campaignNumbersV16(db: BetterSqlite3.Database): number {
  const columns = db.prepare("SELECT name FROM pragma_table_info('campaigns')").pluck().all() as string[];
  if (!columns.includes('change_seq')) db.exec('ALTER TABLE campaigns ADD COLUMN change_seq INTEGER');
  return 0;
}
