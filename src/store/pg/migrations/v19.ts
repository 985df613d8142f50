/**
 * Version 19: times without a zone are UTC. Until this version a time that carried no zone (or
 * digits past the microsecond, which PostgreSQL rounds where the mirror's rule cuts them) was written
 * as NULL (rounded); from now on every worker writes the instant SQLite's export gives for the same
 * text. This step repairs what earlier workers wrote, from each row's `raw`, which keeps every time as
 * served: campaigns' `created_at`, the results' `created_at` and `updated_at`, and eval results'
 * `evaluated_at` (from their parent's `raw`; one taken out of its score detail was written whole by
 * an earlier worker). Rows are rewritten in place: their change numbers stay, so `export
 * --since-last` does not give them again. And `latest_results` breaks a tie on the id by its bytes
 * (`COLLATE "C"`), as SQLite does, whatever the database's collation. May run again on a schema that
 * has it.
 */

// A helper of this step alone, dropped at its end (a temporary one would need the TEMP privilege).
const TIME = `
CREATE OR REPLACE FUNCTION campaign_sync_time_v19(t text) RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  IF t IS NULL OR t !~ '^\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?([Zz]|[+-]\\d{2}(:?\\d{2})?)?$' THEN RETURN NULL; END IF;
  s := regexp_replace(upper(t), '(\\.\\d{6})\\d+', '\\1');
  IF substr(s, 12, 2) > '23' OR (substr(s, 17, 1) = ':' AND substr(s, 18, 2) > '59') THEN RETURN NULL; END IF;
  IF s ~ '(Z|[+-]\\d{2}(:?\\d{2})?)$' THEN RETURN s::timestamptz; END IF;
  RETURN s::timestamp AT TIME ZONE 'UTC';
EXCEPTION WHEN others THEN RETURN NULL;
END $$;
`;

/** The rows of `table` whose `column` an earlier worker left NULL or rounded, repaired from `source`. */
const repair = (table: string, column: string, source: string) => `
UPDATE ${table} SET ${column} = campaign_sync_time_v19(${source})
  WHERE (${column} IS NULL OR ${source} ~ '\\.\\d{7}') AND campaign_sync_time_v19(${source}) IS NOT NULL
    AND ${column} IS DISTINCT FROM campaign_sync_time_v19(${source});`;

const evals = (parent: string, parentType: string) => `
UPDATE eval_results e SET evaluated_at = campaign_sync_time_v19(p.raw -> 'eval_results' -> e.position ->> 'evaluated_at')
  FROM ${parent} p
  WHERE e.parent_type = '${parentType}' AND e.parent_id = p.id AND e.position IS NOT NULL
    AND (e.evaluated_at IS NULL OR p.raw -> 'eval_results' -> e.position ->> 'evaluated_at' ~ '\\.\\d{7}')
    AND campaign_sync_time_v19(p.raw -> 'eval_results' -> e.position ->> 'evaluated_at') IS NOT NULL
    AND e.evaluated_at IS DISTINCT FROM campaign_sync_time_v19(p.raw -> 'eval_results' -> e.position ->> 'evaluated_at');`;

const LATEST = `
CREATE OR REPLACE VIEW latest_results AS
  SELECT * FROM (
    SELECT r.*, row_number() OVER (
      PARTITION BY r.campaign_id, coalesce(r.candidate_id, r.candidate_email)
      ORDER BY r.created_at DESC NULLS LAST, r.order_index DESC, r.result_id COLLATE "C" DESC
    ) AS rank_in_campaign
    FROM results r WHERE coalesce(r.candidate_id, r.candidate_email) IS NOT NULL
  ) ranked WHERE rank_in_campaign = 1;
`;

export const V19 = [
  TIME,
  repair('campaigns', 'created_at', "raw ->> 'created_at'"),
  repair('session_results', 'created_at', "raw ->> 'created_at'"),
  repair('session_results', 'updated_at', "raw ->> 'updated_at'"),
  repair('role_results', 'created_at', "raw ->> 'created_at'"),
  repair('role_results', 'updated_at', "raw ->> 'updated_at'"),
  evals('session_results', 'session_result'),
  evals('score_details', 'score_detail'),
  '\nDROP FUNCTION campaign_sync_time_v19(text);\n',
  LATEST,
].join('');
