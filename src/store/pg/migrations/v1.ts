const feedbackTexts = (col: string, parts: Array<[string, string]>) => {
  const branches = parts
    .map(
      ([list, field]) =>
        `SELECT j ->> '${field}' AS t FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${col} -> '${list}') = 'array' THEN ${col} -> '${list}' ELSE '[]'::jsonb END) j`,
    )
    .join(' UNION ALL ');
  return `CASE WHEN jsonb_typeof(${col}) = 'object' THEN (SELECT coalesce(jsonb_agg(t), '[]'::jsonb) FROM (${branches}) x WHERE t IS NOT NULL) END`;
};
const strengths = (col: string) =>
  feedbackTexts(col, [
    ['strengths', 'description'],
    ['key_strengths', 'strength'],
  ]);
const growths = (col: string) =>
  feedbackTexts(col, [
    ['growths', 'description'],
    ['improvement_criteria', 'description'],
    ['areas_for_growths', 'improvement_area'],
  ]);

/** Version 1: the tables, indexes and views of the SQLite mirror, with PostgreSQL types. */
export const V1 = `
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE campaigns (
  id text PRIMARY KEY, name text, display_name text, type text, created_at timestamptz, raw jsonb NOT NULL, seen_at timestamptz
);
CREATE TABLE session_results (
  id text PRIMARY KEY, campaign_id text NOT NULL, user_id text, user_email text, session_id text, scenario_id text,
  scenario_name text, scenario_type text, score double precision, cefr text, feedback jsonb, additional_scores jsonb,
  created_at timestamptz, updated_at timestamptz, order_index bigint NOT NULL, raw jsonb NOT NULL
);
CREATE INDEX session_results_campaign ON session_results (campaign_id, order_index);
CREATE TABLE role_results (
  id text PRIMARY KEY, campaign_id text NOT NULL, user_id text, user_email text, recommendation_status text,
  overall_score double precision, cefr text, additional_scores jsonb, report_type text, created_at timestamptz,
  updated_at timestamptz, order_index bigint NOT NULL, raw jsonb NOT NULL
);
CREATE INDEX role_results_campaign ON role_results (campaign_id, order_index);
CREATE TABLE score_details (
  id text PRIMARY KEY, role_result_id text NOT NULL, campaign_id text, user_id text, user_email text, scenario_id text,
  scenario_name text, scenario_type text, session_id text, score double precision, feedback jsonb, created_at text,
  updated_at text, raw jsonb NOT NULL, position integer
);
CREATE INDEX score_details_role ON score_details (role_result_id);
CREATE TABLE eval_results (
  parent_type text NOT NULL CHECK (parent_type IN ('session_result', 'score_detail')), parent_id text NOT NULL,
  evaluation_id text, skill_key text, skill_label text, score double precision, score_text text, rationale text,
  evaluated_at timestamptz, campaign_id text, position integer
);
CREATE INDEX eval_results_parent ON eval_results (parent_type, parent_id);
CREATE TABLE sync_state (
  stream text PRIMARY KEY, campaign_id text NOT NULL, endpoint text NOT NULL CHECK (endpoint IN ('session', 'role')),
  report_type text, cursor bigint, records bigint NOT NULL DEFAULT 0, last_success_at timestamptz, last_error text,
  last_error_at timestamptz
);
CREATE INDEX session_results_email ON session_results (user_email);
CREATE INDEX session_results_user ON session_results (user_id);
CREATE INDEX session_results_created ON session_results (created_at);
CREATE INDEX role_results_email ON role_results (user_email);
CREATE INDEX role_results_user ON role_results (user_id);
CREATE INDEX role_results_created ON role_results (created_at);
CREATE INDEX eval_results_campaign_skill ON eval_results (campaign_id, skill_key, score);
CREATE INDEX eval_results_skill ON eval_results (skill_key);

CREATE VIEW results AS
  SELECT s.campaign_id, c.name AS campaign_name, s.user_id AS candidate_id, s.user_email AS candidate_email,
    'session'::text AS kind, s.scenario_id, s.scenario_name, s.score, s.cefr, NULL::text AS recommendation,
    s.feedback, ${strengths('s.feedback')} AS strengths, ${growths('s.feedback')} AS growths,
    s.created_at, s.updated_at, s.id AS result_id, s.order_index
  FROM session_results s LEFT JOIN campaigns c ON c.id = s.campaign_id
  UNION ALL
  SELECT r.campaign_id, c.name, r.user_id, r.user_email, 'role', NULL, NULL, r.overall_score, r.cefr,
    r.recommendation_status, NULL, NULL, NULL, r.created_at, r.updated_at, r.id, r.order_index
  FROM role_results r LEFT JOIN campaigns c ON c.id = r.campaign_id;

CREATE VIEW skill_scores AS
  SELECT e.campaign_id, c.name AS campaign_name, s.user_id AS candidate_id, s.user_email AS candidate_email,
    'session'::text AS kind, s.id AS result_id, NULL::text AS score_detail_id, s.scenario_id, s.scenario_name,
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

-- raw is whole in version 1: the _full views are the tables themselves (version 2 rebuilds raw).
CREATE VIEW role_results_full AS SELECT id, campaign_id, user_id, user_email, recommendation_status, overall_score, cefr, additional_scores, report_type, created_at, updated_at, order_index, raw FROM role_results;
CREATE VIEW score_details_full AS SELECT id, role_result_id, campaign_id, user_id, user_email, scenario_id, scenario_name, scenario_type, session_id, score, feedback, created_at, updated_at, raw, position FROM score_details;

CREATE VIEW latest_results AS
  SELECT * FROM (
    SELECT r.*, row_number() OVER (
      PARTITION BY r.campaign_id, coalesce(r.candidate_id, r.candidate_email)
      ORDER BY r.created_at DESC NULLS LAST, r.order_index DESC, r.result_id DESC
    ) AS rank_in_campaign
    FROM results r WHERE coalesce(r.candidate_id, r.candidate_email) IS NOT NULL
  ) ranked WHERE rank_in_campaign = 1;
`;
