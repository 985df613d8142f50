/**
 * Version 9: the audit trail of results (store/sqlite/versions.ts reads it). Every version of a result the
 * mirror held, with when it held it:
 * - `change_times`: when each change number (store/sqlite/changes.ts) that stamped a row was taken, i.e. when
 *   the mirror first saw what that write brought. Seeded with the counter as it stands, at the time of
 *   this upgrade: rows stored before it have no time of their own and count from the upgrade on.
 * - `past_versions`: the versions that are no longer current, each with its full `raw` as served (a
 *   DETAILED record's text rebuilt from its rows) and [valid_from, valid_to); and a row per deletion
 *   (reconcile --prune), `deleted` = 1 and no `raw`, open until the record comes back.
 * - the view `result_versions`: past_versions and the current rows, each current row the last version
 *   of its record (valid_to NULL). The current version is read from the current tables, never copied.
 *
 * Triggers keep it, inside the transaction of the write that changes a result: a write that stamps a
 * result with a new change number (an insert or a changed content; store/sqlite/upserts.ts) closes its
 * previous version, and a tombstone (prune) closes the current one and opens a deletion. `forget`
 * stamps nothing and writes no tombstone: it leaves no version behind (and erases the person's).
 *
 * Everything this step needs is written out here (the full-raw SQL is version 6's), not borrowed
 * from the write path. Versions keep no request id here (`past_versions.request_id` stays NULL):
 * version 12 adds `change_times.request_id` and makes the triggers and the view that fill and read it.
 */

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

const nextVersion = (kind: string, id: string) => `1 + (SELECT count(*) FROM past_versions p WHERE p.kind = '${kind}' AND p.id = ${id})`;

/** The row of past_versions for the version `row` holds (alias or old), ended at `until`. */
const pastOf = (k: (typeof KINDS)[number], row: string, until: string) =>
  `INSERT INTO past_versions (kind, id, version, campaign_id, report_type, user_id, user_email, order_index, deleted, raw, valid_from, valid_to)
  SELECT '${k.kind}', ${row}.id, ${nextVersion(k.kind, `${row}.id`)}, ${row}.campaign_id, ${k.reportType === 'NULL' ? 'NULL' : `${row}.report_type`}, ${row}.user_id, ${row}.user_email, ${row}.order_index, 0, ${k.raw(row)}, ${timeOf(`${row}.change_seq`)}, ${until}`;

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
  `SELECT '${k.kind}' AS kind, r.id, ${nextVersion(k.kind, 'r.id')} AS version, r.campaign_id, ${k.reportType === 'NULL' ? 'NULL' : 'r.report_type'} AS report_type, r.user_id, r.user_email, r.order_index, 0 AS deleted, ${timeOf('r.change_seq')} AS valid_from, NULL AS valid_to, NULL AS request_id, ${k.raw('r')} AS raw FROM ${k.table} r`;

const reopened = (k: (typeof KINDS)[number]) =>
  `(SELECT ${timeOf('r.change_seq')} FROM ${k.table} r WHERE p.kind = '${k.kind}' AND r.id = p.id)`;

export const V9 = `
CREATE TABLE change_times (seq INTEGER PRIMARY KEY, at TEXT NOT NULL);
INSERT INTO change_times (seq, at) SELECT seq, ${NOW} FROM change_counter;
CREATE TABLE past_versions (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  version INTEGER NOT NULL,
  campaign_id TEXT,
  report_type TEXT,
  user_id TEXT,
  user_email TEXT,
  order_index INTEGER,
  deleted INTEGER NOT NULL DEFAULT 0,
  raw TEXT,
  valid_from TEXT NOT NULL,
  valid_to TEXT,
  request_id TEXT
);
CREATE UNIQUE INDEX past_versions_key ON past_versions (kind, id, version);
CREATE INDEX past_versions_user_id ON past_versions (user_id);
CREATE INDEX past_versions_user_email ON past_versions (user_email COLLATE NOCASE);
${KINDS.map(triggers).join('\n')}
CREATE VIEW result_versions AS
SELECT p.kind, p.id, p.version, p.campaign_id, p.report_type, p.user_id, p.user_email, p.order_index, p.deleted, p.valid_from,
  coalesce(p.valid_to, ${KINDS.map(reopened).join(', ')}) AS valid_to, p.request_id, p.raw
FROM past_versions p
UNION ALL ${currentOf(KINDS[0])}
UNION ALL ${currentOf(KINDS[1])};
`;
