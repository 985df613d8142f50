/** Version 1: the tables of the first release. */
export const V1 = `
CREATE TABLE campaigns (
  id TEXT PRIMARY KEY,
  name TEXT,
  display_name TEXT,
  type TEXT,
  created_at TEXT,
  raw TEXT NOT NULL,
  seen_at TEXT
);
CREATE TABLE session_results (
  id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  user_id TEXT,
  user_email TEXT,
  session_id TEXT,
  scenario_id TEXT,
  scenario_name TEXT,
  scenario_type TEXT,
  score REAL,
  cefr TEXT,
  feedback TEXT,
  additional_scores TEXT,
  created_at TEXT,
  updated_at TEXT,
  order_index INTEGER NOT NULL,
  raw TEXT NOT NULL
);
CREATE INDEX session_results_campaign ON session_results (campaign_id, order_index);
CREATE TABLE role_results (
  id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  user_id TEXT,
  user_email TEXT,
  recommendation_status TEXT,
  overall_score REAL,
  cefr TEXT,
  additional_scores TEXT,
  report_type TEXT,
  created_at TEXT,
  updated_at TEXT,
  order_index INTEGER NOT NULL,
  raw TEXT NOT NULL
);
CREATE INDEX role_results_campaign ON role_results (campaign_id, order_index);
CREATE TABLE score_details (
  id TEXT PRIMARY KEY,
  role_result_id TEXT NOT NULL,
  campaign_id TEXT,
  user_id TEXT,
  user_email TEXT,
  scenario_id TEXT,
  scenario_name TEXT,
  scenario_type TEXT,
  session_id TEXT,
  score REAL,
  feedback TEXT,
  created_at TEXT,
  updated_at TEXT,
  raw TEXT NOT NULL
);
CREATE INDEX score_details_role ON score_details (role_result_id);
CREATE TABLE eval_results (
  parent_type TEXT NOT NULL CHECK (parent_type IN ('session_result', 'score_detail')),
  parent_id TEXT NOT NULL,
  evaluation_id TEXT,
  skill_key TEXT,
  skill_label TEXT,
  score REAL,
  score_text TEXT,
  rationale TEXT,
  evaluated_at TEXT,
  campaign_id TEXT
);
CREATE INDEX eval_results_parent ON eval_results (parent_type, parent_id);
CREATE TABLE sync_state (
  stream TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  endpoint TEXT NOT NULL CHECK (endpoint IN ('session', 'role')),
  report_type TEXT,
  cursor INTEGER,
  records INTEGER NOT NULL DEFAULT 0,
  last_success_at TEXT,
  last_error TEXT,
  last_error_at TEXT
);
CREATE TABLE ndjson_files (
  path TEXT PRIMARY KEY,
  committed_bytes INTEGER NOT NULL
);
`;
