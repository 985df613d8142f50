/**
 * Version 2: DETAILED records stored once, as SQLite's schema 6 (store/pg/compact.ts describes the
 * shape): the _full views rebuild `raw`, and the rows already stored are compacted in place where the
 * rebuild gives back the same jsonb value (details first, then the records that list them); any
 * other row stays whole, which the views give back as it is.
 *
 * The rebuild's SQL and the views' columns are written out here, as this version defines them, not
 * borrowed from store/pg/compact.ts or store/model/rows.ts, which keep changing while this step must not.
 */
const COLUMNS = {
  role_results:
    'campaign_id, user_id, user_email, recommendation_status, overall_score, cefr, additional_scores, report_type, created_at, updated_at, order_index, raw'.split(
      ', ',
    ),
  score_details:
    'role_result_id, campaign_id, user_id, user_email, scenario_id, scenario_name, scenario_type, session_id, score, feedback, created_at, updated_at, raw, position'.split(
      ', ',
    ),
};

const full = (table: 'role_results' | 'score_details', alias: string, raw: string) =>
  `CREATE OR REPLACE VIEW ${table}_full AS SELECT ${alias}.id, ${COLUMNS[table].map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`)).join(', ')} FROM ${table} ${alias};`;

const emptyArray = (raw: string, key: string) =>
  `(jsonb_typeof(${raw} -> '${key}') = 'array' AND jsonb_array_length(${raw} -> '${key}') = 0)`;

const EVAL_JSONB =
  "jsonb_build_object('score', e.score_text, 'skill', jsonb_build_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', to_char(e.evaluated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), " +
  "'evaluation_id', e.evaluation_id)";

/** The full `raw` of the score_details row aliased `d`. */
function detailRaw(d: string): string {
  const evals = `SELECT jsonb_agg(${EVAL_JSONB} ORDER BY e.position) FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, 'eval_results')} THEN jsonb_set(${d}.raw, '{eval_results}', coalesce((${evals}), '[]'::jsonb)) ELSE ${d}.raw END)`;
}

/** The full `raw` of the role_results row aliased `r`. */
function roleRaw(r: string): string {
  const details = `SELECT jsonb_agg(${detailRaw('d')} ORDER BY d.position) FROM score_details d WHERE d.role_result_id = ${r}.id`;
  return `(CASE WHEN ${emptyArray(`${r}.raw`, 'score_details')} THEN jsonb_set(${r}.raw, '{score_details}', coalesce((${details}), '[]'::jsonb)) ELSE ${r}.raw END)`;
}

const emptied = (key: string) => `jsonb_typeof(t.raw -> '${key}') = 'array' AND jsonb_array_length(t.raw -> '${key}') > 0`;
export const V2 = `
${full('role_results', 'r', roleRaw('r'))}
${full('score_details', 'd', detailRaw('d'))}
UPDATE score_details d SET raw = x.raw
  FROM (SELECT t.id, jsonb_set(t.raw, '{eval_results}', '[]'::jsonb) AS raw FROM score_details t WHERE ${emptied('eval_results')}) x
  WHERE d.id = x.id AND ${detailRaw('x')} = d.raw;
UPDATE role_results r SET raw = x.raw
  FROM (SELECT t.id, jsonb_set(t.raw, '{score_details}', '[]'::jsonb) AS raw FROM role_results t WHERE ${emptied('score_details')}) x
  WHERE r.id = x.id AND ${roleRaw('x')} = r.raw;
`;
