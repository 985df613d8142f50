/**
 * Version 5 of the schema: what analysts query (PRODUCT.md §5, issue 16). Views give session and role
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

export const V5_VIEWS = `
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

export const V5_INDEXES = `
CREATE INDEX session_results_email ON session_results (user_email);
CREATE INDEX session_results_user ON session_results (user_id);
CREATE INDEX session_results_created ON session_results (created_at);
CREATE INDEX role_results_email ON role_results (user_email);
CREATE INDEX role_results_user ON role_results (user_id);
CREATE INDEX role_results_created ON role_results (created_at);
CREATE INDEX eval_results_campaign_skill ON eval_results (campaign_id, skill_key, score);
CREATE INDEX eval_results_skill ON eval_results (skill_key);
`;
