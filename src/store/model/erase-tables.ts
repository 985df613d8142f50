/**
 * The tables that keep copies of results beside the results' own tables, which every erasure walks
 * with the same rule (store/model/erase-rule.ts): a copy goes when the rule takes its text whole, or
 * when its record went; a copy of another's record that holds the person is kept without them.
 * A copy's date is its record's (in its text), else the column that says when the mirror stored it.
 *
 * One entry per table, for SQLite and PostgreSQL alike. A table the database does not have (an older
 * schema) is skipped, so an entry may name a table a later version adds.
 */

/** A table of copies: where its text, its record's id and its stored time are. */
export interface CopyTable {
  table: string;
  /** The column holding the copy's text (JSON, or whatever was received); a row without one is judged by its date alone. */
  raw: string;
  /** The column holding the id of the record it copies (its copies go with the record). */
  recordId: string;
  /** The column holding when the mirror stored the copy (ISO 8601 text, or a timestamp). */
  stored: string;
}

/** Every table of copies an erasure walks. */
export const COPY_TABLES: readonly CopyTable[] = [
  // The versions of each result (the audit trail).
  { table: 'past_versions', raw: 'raw', recordId: 'id', stored: 'valid_from' },
  // The raw text of records that failed the record rules.
  { table: 'quarantine', raw: 'raw', recordId: 'record_id', stored: 'quarantined_at' },
];
