/**
 * Version 5 of the schema, part one: declared links. Results name their campaign and score details their
 * role result as foreign keys, so Datasette, DBeaver and ERD tools link the rows. SQLite cannot add a
 * foreign key to a table, so the three tables are rebuilt: a new table with the same columns in the same
 * order, the rows copied, the old one dropped (with its indexes), the new one renamed, the indexes made
 * again. migrate() runs it in one transaction with foreign_keys off (db.ts keeps them off).
 *
 * The keys are declared, not enforced: the mirror copies what the service sends, and a result may arrive
 * for a campaign the campaign list does not (yet) show; deletes (reconcile --prune, forget) remove
 * children first all the same. `PRAGMA foreign_key_check` lists any row whose link is dangling.
 */

const REBUILD: Array<{ table: string; columns: string; indexes: string }> = [
  {
    table: 'session_results',
    columns: `id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL REFERENCES campaigns (id),
  user_id TEXT, user_email TEXT, session_id TEXT, scenario_id TEXT, scenario_name TEXT, scenario_type TEXT,
  score REAL, cefr TEXT, feedback TEXT, additional_scores TEXT, created_at TEXT, updated_at TEXT,
  order_index INTEGER NOT NULL, raw TEXT NOT NULL`,
    indexes: 'CREATE INDEX session_results_campaign ON session_results (campaign_id, order_index);',
  },
  {
    table: 'role_results',
    columns: `id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL REFERENCES campaigns (id),
  user_id TEXT, user_email TEXT, recommendation_status TEXT, overall_score REAL, cefr TEXT,
  additional_scores TEXT, report_type TEXT, created_at TEXT, updated_at TEXT,
  order_index INTEGER NOT NULL, raw TEXT NOT NULL`,
    indexes: 'CREATE INDEX role_results_campaign ON role_results (campaign_id, order_index);',
  },
  {
    table: 'score_details',
    columns: `id TEXT PRIMARY KEY,
  role_result_id TEXT NOT NULL REFERENCES role_results (id),
  campaign_id TEXT REFERENCES campaigns (id),
  user_id TEXT, user_email TEXT, scenario_id TEXT, scenario_name TEXT, scenario_type TEXT, session_id TEXT,
  score REAL, feedback TEXT, created_at TEXT, updated_at TEXT, raw TEXT NOT NULL`,
    indexes: 'CREATE INDEX score_details_role ON score_details (role_result_id);',
  },
];

export const V5_LINKS = REBUILD.map(
  ({ table, columns, indexes }) => `
CREATE TABLE ${table}_v5 (
  ${columns}
);
INSERT INTO ${table}_v5 SELECT * FROM ${table};
DROP TABLE ${table};
ALTER TABLE ${table}_v5 RENAME TO ${table};
${indexes}
`,
).join('');
