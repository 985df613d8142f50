/**
 * The exact `raw` of a DETAILED role record and of its score details, rebuilt in SQL from the rows
 * store/model/compact.ts split them into (schema 6). Used by export and by the mirror's change check. The
 * `role_results_full` and `score_details_full` views analysts read hold the copy store/sqlite/migrations/v6.ts
 * froze: a change here that they must follow takes a new migration replacing them
 * (test/component/store/migrations.test.ts fails until they agree).
 *
 * An empty `score_details` (or `eval_results`) array in a stored `raw` is refilled from the rows, in
 * `position` order; any other value is kept as stored. SQLite's JSON functions copy numbers and
 * strings as written, and json_object quotes exactly as JSON.stringify does for well-formed strings
 * (test/component/store/sqlite/compact.test.ts checks every code point), so the text comes back byte for byte.
 *
 * The arrays are aggregated over an ordered subquery rather than with `json_group_array(... ORDER BY)`,
 * which only SQLite 3.44 and later parse: these views must open in an analyst's older sqlite3 too.
 */

const EVAL_JSON =
  "json_object('score', e.score_text, 'skill', json_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', e.evaluated_at, 'evaluation_id', e.evaluation_id)";

/** True when the value at `path` is an empty array (json_array_length alone also answers 0 for null). */
function emptyArray(raw: string, path: string): string {
  return `(json_type(${raw}, '${path}') = 'array' AND json_array_length(${raw}, '${path}') = 0)`;
}

/** The full `raw` of the score_details row aliased `d`. */
export function detailRawSql(d: string): string {
  const evals = `SELECT ${EVAL_JSON} AS j FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id ORDER BY e.position`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, '$.eval_results')} THEN json_replace(${d}.raw, '$.eval_results', json((SELECT json_group_array(json(j)) FROM (${evals})))) ELSE ${d}.raw END)`;
}

/** The full `raw` of the role_results row aliased `r`. */
export function roleRawSql(r: string): string {
  const details = `SELECT ${detailRawSql('d')} AS j FROM score_details d WHERE d.role_result_id = ${r}.id ORDER BY d.position`;
  return `(CASE WHEN ${emptyArray(`${r}.raw`, '$.score_details')} THEN json_replace(${r}.raw, '$.score_details', json((SELECT json_group_array(json(j)) FROM (${details})))) ELSE ${r}.raw END)`;
}
