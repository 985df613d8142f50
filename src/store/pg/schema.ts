/**
 * The team mirror's schema in PostgreSQL (issue 17): the tables, columns, indexes and views of the
 * SQLite mirror (store/schema.ts, store/views.ts) with PostgreSQL types: bigint order_index and
 * cursors, jsonb for raw, feedback and additional_scores, timestamptz for the service's date-times
 * (which carry a zone), text for score details' times (which may not). `meta.schema_version` holds
 * the version; MIGRATIONS[i] moves it from i to i + 1, in one transaction under an advisory lock so
 * workers starting together migrate once.
 *
 * Left out: the NDJSON bookkeeping tables (a PostgreSQL mirror is its own destination) and the
 * declared foreign keys (PostgreSQL would enforce them, and a result may arrive before its campaign).
 */
import type pg from 'pg';
import { UsageError } from '../../errors.js';
import { COLUMNS } from '../rows.js';
import { detailRawPg, roleRawPg } from './compact.js';

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

const V1 = `
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
CREATE VIEW role_results_full AS SELECT id, ${COLUMNS.role_results.join(', ')} FROM role_results;
CREATE VIEW score_details_full AS SELECT id, ${COLUMNS.score_details.join(', ')} FROM score_details;

CREATE VIEW latest_results AS
  SELECT * FROM (
    SELECT r.*, row_number() OVER (
      PARTITION BY r.campaign_id, coalesce(r.candidate_id, r.candidate_email)
      ORDER BY r.created_at DESC NULLS LAST, r.order_index DESC, r.result_id DESC
    ) AS rank_in_campaign
    FROM results r WHERE coalesce(r.candidate_id, r.candidate_email) IS NOT NULL
  ) ranked WHERE rank_in_campaign = 1;
`;

const full = (table: 'role_results' | 'score_details', alias: string, raw: string) =>
  `CREATE OR REPLACE VIEW ${table}_full AS SELECT ${alias}.id, ${COLUMNS[table]
    .map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`))
    .join(', ')} FROM ${table} ${alias};`;

/**
 * DETAILED records stored once (compact.ts), as SQLite's schema 6: the _full views rebuild `raw`, and
 * the rows already stored are compacted in place where the rebuild gives back the same jsonb value
 * (details first, then the records that list them); any other row stays whole, which the views give
 * back as it is.
 */
const emptied = (key: string) => `jsonb_typeof(t.raw -> '${key}') = 'array' AND jsonb_array_length(t.raw -> '${key}') > 0`;
const V2 = `
${full('role_results', 'r', roleRawPg('r'))}
${full('score_details', 'd', detailRawPg('d'))}
UPDATE score_details d SET raw = x.raw
  FROM (SELECT t.id, jsonb_set(t.raw, '{eval_results}', '[]'::jsonb) AS raw FROM score_details t WHERE ${emptied('eval_results')}) x
  WHERE d.id = x.id AND ${detailRawPg('x')} = d.raw;
UPDATE role_results r SET raw = x.raw
  FROM (SELECT t.id, jsonb_set(t.raw, '{score_details}', '[]'::jsonb) AS raw FROM role_results t WHERE ${emptied('score_details')}) x
  WHERE r.id = x.id AND ${roleRawPg('x')} = r.raw;
`;

/**
 * Records stored inline and uncompressed up to a whole page (8160 bytes), as SQLite stores them: with
 * the default target (2032 bytes) a session result's `raw` (~2 KB) was pglz-compressed on most
 * inserts, a quarter of the server's CPU for a session pull. Rows already stored stay as they are.
 */
const V3 = ['session_results', 'role_results', 'score_details'].map((t) => `ALTER TABLE ${t} SET (toast_tuple_target = 8160);`).join('\n');

/** Record ids served by two campaigns, each skipped copy once (store/conflicts.ts), as SQLite's schema 7. */
const V4 = `
CREATE TABLE IF NOT EXISTS id_conflicts (
  stream text NOT NULL, record_id text NOT NULL, campaign_id text NOT NULL, kept_campaign_id text NOT NULL,
  first_seen_at timestamptz NOT NULL, PRIMARY KEY (stream, record_id)
);
`;

/**
 * The request budget's slots (store/pg/budget-slots.ts), by the rules of store/budget-slots.ts, on
 * the server's clock alone, so that workers on hosts whose clocks disagree share one budget per key.
 * `budget_take` is a take in one statement: the key's takes are serialized by an advisory lock held
 * to the end of that statement's transaction (microseconds), so no two take one slot and the rows
 * made as needed stay numbered 0..n-1.
 */
const V5 = `
CREATE TABLE IF NOT EXISTS budget_slots (
  key text NOT NULL, slot integer NOT NULL, busy_until timestamptz NOT NULL, window_ms double precision NOT NULL,
  hold_ms double precision NOT NULL, owner bigint NOT NULL, PRIMARY KEY (key, slot)
);
CREATE OR REPLACE FUNCTION budget_take(p_key text, p_count integer, p_window double precision, p_timeout double precision, p_owner bigint)
RETURNS TABLE (taken integer, wait_ms double precision, in_flight boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  t timestamptz := clock_timestamp();
  ms constant interval := interval '1 millisecond';
  held double precision;
  pick record;
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('campaign-sync budget ' || p_key));
  UPDATE budget_slots s SET busy_until = t + s.hold_ms * ms WHERE s.key = p_key AND s.busy_until > t + s.hold_ms * ms;
  SELECT greatest(p_window, coalesce(max(s.window_ms), 0)) INTO held FROM budget_slots s WHERE s.key = p_key AND s.busy_until > t;
  SELECT s.slot, s.busy_until + greatest(0, held - s.window_ms) * ms AS free_at INTO pick
    FROM budget_slots s WHERE s.key = p_key AND s.slot < p_count ORDER BY 2 LIMIT 1;
  SELECT count(*) INTO n FROM budget_slots s WHERE s.key = p_key;
  IF pick.free_at IS NOT NULL AND pick.free_at <= t THEN taken := pick.slot;
  ELSIF n < p_count THEN taken := n;
  ELSE
    wait_ms := greatest(1, extract(epoch FROM pick.free_at - t) * 1000);
    in_flight := EXISTS (SELECT 1 FROM budget_slots s WHERE s.key = p_key AND s.slot < p_count AND s.owner <> 0 AND s.busy_until > t);
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO budget_slots AS s VALUES (p_key, taken, t + (greatest(p_timeout, held) + held) * ms, held, greatest(p_timeout, held) + held, p_owner)
    ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, window_ms = excluded.window_ms, hold_ms = excluded.hold_ms, owner = excluded.owner;
  RETURN NEXT;
END $$;
`;

const MIGRATIONS: string[] = [V1, V2, V3, V4, V5];
export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** `name` quoted as an identifier (names are checked by url.ts's checkSchemaName first). */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates the schema if needed (CREATE on the database, or a schema created beforehand) and brings
 * it to the current version. `where` names the database in errors (password redacted).
 */
export async function migratePg(client: pg.ClientBase, schema: string, where: string): Promise<void> {
  await client.query('BEGIN');
  try {
    // Workers starting together: one migrates, the others wait and then find it done.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`campaign-sync migrate ${schema}`]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${ident(schema)}`);
    await client.query(`SET LOCAL search_path TO ${ident(schema)}`);
    const version = await currentVersion(client, schema, where);
    if (version > PG_SCHEMA_VERSION) {
      throw new UsageError(
        `${where} was written by a newer campaign-sync (schema ${version}, this one knows ${PG_SCHEMA_VERSION}); upgrade`,
      );
    }
    for (let v = version; v < PG_SCHEMA_VERSION; v++) {
      await client.query(MIGRATIONS[v] as string);
      await client.query(
        "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [String(v + 1)],
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The stored version; 0 for an empty schema; a schema with tables of someone else's is a usage error. */
async function currentVersion(client: pg.ClientBase, schema: string, where: string): Promise<number> {
  const tables = await client.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [
    schema,
  ]);
  if (tables.rowCount === 0) return 0;
  if (!tables.rows.some((t) => t.table_name === 'meta')) {
    throw new UsageError(`${where} already holds tables that are not campaign-sync's; pick another --pg-schema`);
  }
  const v = await client.query<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'");
  return Number(v.rows[0]?.value ?? 0);
}
