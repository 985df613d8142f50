/**
 * Version 18: campaigns gain `change_seq`, as SQLite's schema 16: the change number of the write that
 * inserted a campaign or changed its name (store/pg/changes.ts), so that the views' `export
 * --since-last` feeds give a campaign's results again once it is renamed. Campaigns stored before
 * have no number. May run again on a schema that has it.
 */
export const V18 = `
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS change_seq bigint;
`;
