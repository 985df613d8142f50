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

const LINKS = REBUILD.map(
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

/**
 * Version 5 of the schema, part two: what analysts query. Views give session and role
 * results one shape, eval results their candidate, and each candidate's latest result per campaign;
 * indexes serve the filters analysts use (e-mail, id, created_at, skill, the eval results' campaign).
 *
 * Feedback arrives in two shapes: the nested default `{strengths: [{description}], growths:
 * [{description}], improvement_criteria: [{title, description}], ...}` and the docs'
 * `{key_strengths: [{title, strength}], areas_for_growths: [{title, improvement_area}]}`. The views read
 * both into `strengths` and `growths`, JSON arrays of texts (the raw `feedback` stays alongside).
 *
 * "Latest" is by `created_at` (compared as instants through julianday, so zones and fractions order
 * correctly), then `order_index`, then id: the service's order_index does not follow created_at.
 */

/** A JSON array of the texts under `paths` (each `$.list` + `.field`), from whichever shape `col` holds. */
function texts(col: string, parts: Array<[string, string]>): string {
  const branches = parts
    .map(([list, field]) => `SELECT j.value ->> '$.${field}' AS t FROM json_each(${col}, '$.${list}') j`)
    .join(' UNION ALL ');
  return `CASE WHEN json_valid(${col}) AND json_type(${col}) = 'object' THEN (SELECT json_group_array(t) FROM (${branches}) WHERE t IS NOT NULL) END`;
}

const strengths = (col: string) =>
  texts(col, [
    ['strengths', 'description'],
    ['key_strengths', 'strength'],
  ]);
const growths = (col: string) =>
  texts(col, [
    ['growths', 'description'],
    ['improvement_criteria', 'description'],
    ['areas_for_growths', 'improvement_area'],
  ]);

const VIEWS = `
CREATE VIEW results AS
  SELECT s.campaign_id, c.name AS campaign_name, s.user_id AS candidate_id, s.user_email AS candidate_email,
    'session' AS kind, s.scenario_id, s.scenario_name, s.score, s.cefr, NULL AS recommendation,
    s.feedback, ${strengths('s.feedback')} AS strengths, ${growths('s.feedback')} AS growths,
    s.created_at, s.updated_at, s.id AS result_id, s.order_index
  FROM session_results s LEFT JOIN campaigns c ON c.id = s.campaign_id
  UNION ALL
  SELECT r.campaign_id, c.name, r.user_id, r.user_email, 'role', NULL, NULL, r.overall_score, r.cefr,
    r.recommendation_status, NULL, NULL, NULL, r.created_at, r.updated_at, r.id, r.order_index
  FROM role_results r LEFT JOIN campaigns c ON c.id = r.campaign_id;

CREATE VIEW skill_scores AS
  SELECT e.campaign_id, c.name AS campaign_name, s.user_id AS candidate_id, s.user_email AS candidate_email,
    'session' AS kind, s.id AS result_id, NULL AS score_detail_id, s.scenario_id, s.scenario_name,
    e.skill_key, e.skill_label, e.score, e.score_text, e.rationale, e.evaluated_at, e.evaluation_id
  FROM eval_results e JOIN session_results s ON s.id = e.parent_id LEFT JOIN campaigns c ON c.id = e.campaign_id
  WHERE e.parent_type = 'session_result'
  UNION ALL
  SELECT e.campaign_id, c.name, r.user_id, r.user_email, 'role', r.id, d.id, d.scenario_id, d.scenario_name,
    e.skill_key, e.skill_label, e.score, e.score_text, e.rationale, e.evaluated_at, e.evaluation_id
  FROM eval_results e JOIN score_details d ON d.id = e.parent_id JOIN role_results r ON r.id = d.role_result_id
    LEFT JOIN campaigns c ON c.id = e.campaign_id
  WHERE e.parent_type = 'score_detail';

CREATE VIEW score_detail_feedback AS
  SELECT d.id AS score_detail_id, d.role_result_id AS result_id, d.campaign_id, d.user_id AS candidate_id,
    d.user_email AS candidate_email, d.scenario_id, d.scenario_name, d.score, d.feedback,
    ${strengths('d.feedback')} AS strengths, ${growths('d.feedback')} AS growths, d.created_at
  FROM score_details d;

CREATE VIEW latest_results AS
  SELECT * FROM (
    SELECT r.*, row_number() OVER (
      PARTITION BY r.campaign_id, coalesce(r.candidate_id, r.candidate_email)
      ORDER BY julianday(r.created_at) DESC, r.order_index DESC, r.result_id DESC
    ) AS rank_in_campaign
    FROM results r WHERE coalesce(r.candidate_id, r.candidate_email) IS NOT NULL
  ) WHERE rank_in_campaign = 1;
`;

const INDEXES = `
CREATE INDEX session_results_email ON session_results (user_email);
CREATE INDEX session_results_user ON session_results (user_id);
CREATE INDEX session_results_created ON session_results (created_at);
CREATE INDEX role_results_email ON role_results (user_email);
CREATE INDEX role_results_user ON role_results (user_id);
CREATE INDEX role_results_created ON role_results (created_at);
CREATE INDEX eval_results_campaign_skill ON eval_results (campaign_id, skill_key, score);
CREATE INDEX eval_results_skill ON eval_results (skill_key);
`;

/** Version 5: declared links, then the analysts' views and indexes. */
export const V5 = LINKS + VIEWS + INDEXES;
