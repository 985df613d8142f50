/**
 * Version 12: every mirror's versions keep the request id of the page that brought them. Version 9
 * made `change_times` without `request_id`, triggers that copy none and a `result_versions` that
 * gives NULL, while today's writes record each page's request id in `change_times`. This step adds
 * the column where it is missing (some builds made it at version 9; the rows of a mirror without it
 * keep NULL: unknown) and makes the triggers and the view again, copying and reading it, so that
 * every mirror at version 12 holds the same schema, whichever build upgraded it to 9.
 *
 * Everything it needs is written out here (the full-raw SQL is version 6's, the rest version 9's
 * with the request id), not read from version 9's file: each file is frozen as it shipped.
 */
import type BetterSqlite3 from 'better-sqlite3';

const TRIGGERS = ['session_results_version', 'session_results_pruned', 'role_results_version', 'role_results_pruned'];

/** What a time is written as: ISO 8601 in UTC with milliseconds, as Date.toISOString writes it. */
const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** When change number `seq` was taken: its own time, or the first one recorded after it (rows older than the trail). */
const timeOf = (seq: string) => `(SELECT t.at FROM change_times t WHERE t.seq >= coalesce(${seq}, 0) ORDER BY t.seq LIMIT 1)`;

const EVAL_JSON =
  "json_object('score', e.score_text, 'skill', json_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', e.evaluated_at, 'evaluation_id', e.evaluation_id)";

const emptyArray = (raw: string, path: string) => `(json_type(${raw}, '${path}') = 'array' AND json_array_length(${raw}, '${path}') = 0)`;

function detailRaw(d: string): string {
  const evals = `SELECT ${EVAL_JSON} AS j FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id ORDER BY e.position`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, '$.eval_results')} THEN json_replace(${d}.raw, '$.eval_results', json((SELECT json_group_array(json(j)) FROM (${evals})))) ELSE ${d}.raw END)`;
}

/** The full `raw` of a role result whose stored text is `raw` and id `id` (its score details as stored now). */
function roleRaw(raw: string, id: string): string {
  const details = `SELECT ${detailRaw('d')} AS j FROM score_details d WHERE d.role_result_id = ${id} ORDER BY d.position`;
  return `(CASE WHEN ${emptyArray(raw, '$.score_details')} THEN json_replace(${raw}, '$.score_details', json((SELECT json_group_array(json(j)) FROM (${details})))) ELSE ${raw} END)`;
}

const KINDS = [
  { kind: 'session', table: 'session_results', reportType: 'NULL', raw: (row: string) => `${row}.raw` },
  { kind: 'role', table: 'role_results', reportType: 'report_type', raw: (row: string) => roleRaw(`${row}.raw`, `${row}.id`) },
] as const;

/** The request id of the page whose write took change number `seq` (NULL when its answer carried none). */
const requestOf = (seq: string) => `(SELECT t.request_id FROM change_times t WHERE t.seq = ${seq})`;

const nextVersion = (kind: string, id: string) => `1 + (SELECT count(*) FROM past_versions p WHERE p.kind = '${kind}' AND p.id = ${id})`;

/** The row of past_versions for the version `row` holds (alias or old), ended at `until`. */
const pastOf = (k: (typeof KINDS)[number], row: string, until: string) =>
  `INSERT INTO past_versions (kind, id, version, campaign_id, report_type, user_id, user_email, order_index, deleted, raw, valid_from, valid_to, request_id)
  SELECT '${k.kind}', ${row}.id, ${nextVersion(k.kind, `${row}.id`)}, ${row}.campaign_id, ${k.reportType === 'NULL' ? 'NULL' : `${row}.report_type`}, ${row}.user_id, ${row}.user_email, ${row}.order_index, 0, ${k.raw(row)}, ${timeOf(`${row}.change_seq`)}, ${until}, ${requestOf(`${row}.change_seq`)}`;

/** Ends the deletion the record came back from (its first version since is `row`'s). */
const endDeletion = (k: (typeof KINDS)[number], id: string, at: string) =>
  `UPDATE past_versions SET valid_to = ${at} WHERE kind = '${k.kind}' AND id = ${id} AND valid_to IS NULL`;

function triggers(k: (typeof KINDS)[number]): string {
  const newTime = '(SELECT at FROM change_times WHERE seq = new.change_seq)';
  const pruneTime = '(SELECT at FROM change_times WHERE seq = new.seq)';
  return `
CREATE TRIGGER ${k.table}_version AFTER UPDATE OF change_seq ON ${k.table}
WHEN old.change_seq IS NOT new.change_seq AND new.change_seq IS NOT NULL
BEGIN
  INSERT OR IGNORE INTO change_times (seq, at) VALUES (new.change_seq, ${NOW});
  ${endDeletion(k, 'old.id', timeOf('old.change_seq'))};
  ${pastOf(k, 'old', newTime)};
END;
CREATE TRIGGER ${k.table}_pruned AFTER INSERT ON tombstones
WHEN new.table_name = '${k.table}'
BEGIN
  INSERT OR IGNORE INTO change_times (seq, at) VALUES (new.seq, ${NOW});
  ${endDeletion(k, 'new.id', `(SELECT ${timeOf('r.change_seq')} FROM ${k.table} r WHERE r.id = new.id)`)};
  ${pastOf(k, 'r', pruneTime)} FROM ${k.table} r WHERE r.id = new.id;
  INSERT INTO past_versions (kind, id, version, campaign_id, report_type, user_id, user_email, order_index, deleted, raw, valid_from, valid_to)
  SELECT '${k.kind}', r.id, ${nextVersion(k.kind, 'r.id')}, r.campaign_id, ${k.reportType === 'NULL' ? 'NULL' : 'r.report_type'}, r.user_id, r.user_email, r.order_index, 1, NULL, ${pruneTime}, NULL
  FROM ${k.table} r WHERE r.id = new.id;
END;`;
}

/** A current row as the last version of its record; a deletion it came back from ends where it begins. */
const currentOf = (k: (typeof KINDS)[number]) =>
  `SELECT '${k.kind}' AS kind, r.id, ${nextVersion(k.kind, 'r.id')} AS version, r.campaign_id, ${k.reportType === 'NULL' ? 'NULL' : 'r.report_type'} AS report_type, r.user_id, r.user_email, r.order_index, 0 AS deleted, ${timeOf('r.change_seq')} AS valid_from, NULL AS valid_to, ${requestOf('r.change_seq')} AS request_id, ${k.raw('r')} AS raw FROM ${k.table} r`;

const reopened = (k: (typeof KINDS)[number]) =>
  `(SELECT ${timeOf('r.change_seq')} FROM ${k.table} r WHERE p.kind = '${k.kind}' AND r.id = p.id)`;

/** The triggers and the view (the tables and their rows are left as they are). */
const TRIGGERS_AND_VIEW = `${KINDS.map(triggers).join('\n')}
CREATE VIEW result_versions AS
SELECT p.kind, p.id, p.version, p.campaign_id, p.report_type, p.user_id, p.user_email, p.order_index, p.deleted, p.valid_from,
  coalesce(p.valid_to, ${KINDS.map(reopened).join(', ')}) AS valid_to, p.request_id, p.raw
FROM past_versions p
UNION ALL ${currentOf(KINDS[0])}
UNION ALL ${currentOf(KINDS[1])};
`;

export const V12 = `${TRIGGERS.map((t) => `DROP TRIGGER IF EXISTS ${t};`).join('\n')}
DROP VIEW IF EXISTS result_versions;`;

/** Adds the column where version 9 made none, then the triggers and the view that read it. */
export function requestIdsV12(db: BetterSqlite3.Database): number {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('change_times');
  if (!columns.includes('request_id')) db.exec('ALTER TABLE change_times ADD COLUMN request_id TEXT');
  db.exec(TRIGGERS_AND_VIEW);
  return 0;
}
