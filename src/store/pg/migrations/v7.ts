/**
 * Version 7: the audit trail of results, as SQLite's schema 9 (store/sqlite/migrations/v9.ts says what each
 * part holds): `change_times`, `past_versions`, the view `result_versions` (past versions and the
 * current rows, read from the current tables, never copied) and `results_as_of(timestamptz)`, the
 * results as the mirror held them at that time. Triggers keep it in the transaction of the write:
 * a result stamped with a new change number closes its previous version, a tombstone (prune) closes
 * the current one and opens a deletion. Times are the writing transaction's (now(), to the millisecond): one page, one time.
 *
 * The full-raw SQL is version 2's, written out here. Each step may run again on a schema that has it.
 * Versions keep no request id here (`past_versions.request_id` stays NULL): version 12 adds
 * `change_times.request_id` and makes the triggers and the view that fill and read it.
 */

/** The writing transaction's time, to the millisecond as SQLite's and `history`'s times are (an --as-of copied from them matches). */
const NOW = "date_trunc('milliseconds', now())";

/** When change number `seq` was taken: its own time, or the first one recorded after it (rows older than the trail). */
const timeOf = (seq: string) => `(SELECT t.at FROM change_times t WHERE t.seq >= coalesce(${seq}, 0) ORDER BY t.seq LIMIT 1)`;

const emptyArray = (raw: string, key: string) =>
  `(jsonb_typeof(${raw} -> '${key}') = 'array' AND jsonb_array_length(${raw} -> '${key}') = 0)`;

const EVAL_JSONB =
  "jsonb_build_object('score', e.score_text, 'skill', jsonb_build_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', to_char(e.evaluated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), " +
  "'evaluation_id', e.evaluation_id)";

function detailRaw(d: string): string {
  const evals = `SELECT jsonb_agg(${EVAL_JSONB} ORDER BY e.position) FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, 'eval_results')} THEN jsonb_set(${d}.raw, '{eval_results}', coalesce((${evals}), '[]'::jsonb)) ELSE ${d}.raw END)`;
}

/** The full `raw` of a role result whose stored value is `raw` and id `id` (its score details as stored now). */
function roleRaw(raw: string, id: string): string {
  const details = `SELECT jsonb_agg(${detailRaw('d')} ORDER BY d.position) FROM score_details d WHERE d.role_result_id = ${id}`;
  return `(CASE WHEN ${emptyArray(raw, 'score_details')} THEN jsonb_set(${raw}, '{score_details}', coalesce((${details}), '[]'::jsonb)) ELSE ${raw} END)`;
}

const KINDS = [
  { kind: 'session', table: 'session_results', role: false, raw: (row: string) => `${row}.raw` },
  { kind: 'role', table: 'role_results', role: true, raw: (row: string) => roleRaw(`${row}.raw`, `${row}.id`) },
] as const;
type Kind = (typeof KINDS)[number];

const nextVersion = (kind: string, id: string) =>
  `1 + (SELECT count(*) FROM past_versions p WHERE p.kind = '${kind}' AND p.id = ${id})::int`;

const COLS = 'kind, id, version, campaign_id, report_type, user_id, user_email, order_index, deleted, raw, valid_from, valid_to';

/** The values of a past version of the row `row` (OLD, or an alias), ended at `until`; a deletion when `deleted`. */
const versionOf = (k: Kind, row: string, deleted: boolean, from: string, until: string) =>
  `'${k.kind}', ${row}.id, ${nextVersion(k.kind, `${row}.id`)}, ${row}.campaign_id, ${k.role ? `${row}.report_type` : 'NULL'}, ${row}.user_id, ${row}.user_email, ${row}.order_index, ${deleted}, ${deleted ? 'NULL' : k.raw(row)}, ${from}, ${until}`;

function triggers(k: Kind): string {
  return `
CREATE OR REPLACE FUNCTION ${k.table}_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO change_times (seq, at) VALUES (NEW.change_seq, ${NOW}) ON CONFLICT (seq) DO NOTHING;
  UPDATE past_versions SET valid_to = ${timeOf('OLD.change_seq')} WHERE kind = '${k.kind}' AND id = OLD.id AND valid_to IS NULL;
  INSERT INTO past_versions (${COLS}) SELECT ${versionOf(k, 'OLD', false, timeOf('OLD.change_seq'), NOW)};
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ${k.table}_version ON ${k.table};
CREATE TRIGGER ${k.table}_version AFTER UPDATE OF change_seq ON ${k.table} FOR EACH ROW
  WHEN (OLD.change_seq IS DISTINCT FROM NEW.change_seq AND NEW.change_seq IS NOT NULL) EXECUTE PROCEDURE ${k.table}_version();
CREATE OR REPLACE FUNCTION ${k.table}_pruned() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO change_times (seq, at) VALUES (NEW.seq, ${NOW}) ON CONFLICT (seq) DO NOTHING;
  UPDATE past_versions SET valid_to = (SELECT ${timeOf('r.change_seq')} FROM ${k.table} r WHERE r.id = NEW.id)
    WHERE kind = '${k.kind}' AND id = NEW.id AND valid_to IS NULL;
  INSERT INTO past_versions (${COLS}) SELECT ${versionOf(k, 'r', false, timeOf('r.change_seq'), NOW)} FROM ${k.table} r WHERE r.id = NEW.id;
  INSERT INTO past_versions (${COLS}) SELECT ${versionOf(k, 'r', true, NOW, 'NULL')} FROM ${k.table} r WHERE r.id = NEW.id;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ${k.table}_pruned ON tombstones;
CREATE TRIGGER ${k.table}_pruned AFTER INSERT ON tombstones FOR EACH ROW
  WHEN (NEW.table_name = '${k.table}') EXECUTE PROCEDURE ${k.table}_pruned();`;
}

const currentOf = (k: Kind) =>
  `SELECT '${k.kind}'::text AS kind, r.id, ${nextVersion(k.kind, 'r.id')} AS version, r.campaign_id, ${k.role ? 'r.report_type' : 'NULL::text'} AS report_type, r.user_id, r.user_email, r.order_index, false AS deleted, ${timeOf('r.change_seq')} AS valid_from, NULL::timestamptz AS valid_to, NULL::text AS request_id, ${k.raw('r')} AS raw FROM ${k.table} r`;

const reopened = (k: Kind) => `(SELECT ${timeOf('r.change_seq')} FROM ${k.table} r WHERE p.kind = '${k.kind}' AND r.id = p.id)`;

export const V7 = `
CREATE TABLE IF NOT EXISTS change_times (seq bigint PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO change_times (seq, at) SELECT CASE WHEN is_called THEN last_value ELSE 0 END, ${NOW} FROM change_counter ON CONFLICT (seq) DO NOTHING;
CREATE TABLE IF NOT EXISTS past_versions (
  kind text NOT NULL, id text NOT NULL, version integer NOT NULL, campaign_id text, report_type text, user_id text, user_email text,
  order_index bigint, deleted boolean NOT NULL DEFAULT false, raw jsonb, valid_from timestamptz NOT NULL, valid_to timestamptz,
  request_id text, PRIMARY KEY (kind, id, version)
);
CREATE INDEX IF NOT EXISTS past_versions_user_id ON past_versions (user_id);
CREATE INDEX IF NOT EXISTS past_versions_user_email ON past_versions (lower(user_email));
${KINDS.map(triggers).join('\n')}
CREATE OR REPLACE VIEW result_versions AS
SELECT p.kind, p.id, p.version, p.campaign_id, p.report_type, p.user_id, p.user_email, p.order_index, p.deleted, p.valid_from,
  coalesce(p.valid_to, ${KINDS.map(reopened).join(', ')}) AS valid_to, p.request_id, p.raw
FROM past_versions p
UNION ALL ${currentOf(KINDS[0])}
UNION ALL ${currentOf(KINDS[1])};
CREATE OR REPLACE FUNCTION results_as_of(at timestamptz) RETURNS SETOF result_versions LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
  SELECT * FROM result_versions v WHERE NOT v.deleted AND v.valid_from <= at AND (v.valid_to IS NULL OR v.valid_to > at)
$$;
`;
