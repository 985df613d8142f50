/**
 * DETAILED records stored once in the PostgreSQL mirror, as the SQLite mirror stores them since
 * schema 6 (store/model/compact.ts): a role result's `raw` without its `score_details` entries (they live
 * in score_details), each entry's `raw` without its `eval_results` (they live in eval_results). An
 * emptied array marks what was taken out; roleRawPg below rebuilds it (the _full views hold the copy
 * store/pg/migrations/v2.ts froze: a change here that they must follow takes a new migration). jsonb
 * stores a DETAILED record three times otherwise (the record, each detail, each eval), and parsing
 * and TOASTing those copies was most of a DETAILED page's server time.
 *
 * The guarantee is PostgreSQL's `raw` guarantee (jsonb: the same value as sent, keys and spacing
 * normalised): `role_results_full.raw = <the record as sent>::jsonb` for every record. Only what comes
 * back equal is taken out: store/model/compact.ts's rules, and an eval's `evaluated_at` null or an ISO text
 * as `Date.toISOString` writes it (eval_results holds it as timestamptz, and gives it back that way).
 */
import { rebuildableEval } from '../model/compact.js';

type Obj = Record<string, unknown>;

/** An ISO text timestamptz gives back unchanged (to_char below), or null. */
function isoOrNull(v: unknown): boolean {
  if (v === null) return true;
  if (typeof v !== 'string' || v.length !== 24) return false;
  const t = Date.parse(v);
  return !Number.isNaN(t) && new Date(t).toISOString() === v;
}

/** True when detailRawPg rebuilds this eval result exactly from its eval_results row: store/model/compact.ts splitDetailed's `rebuildable` here. */
export function pgRebuildableEval(e: unknown): boolean {
  return rebuildableEval(e) && isoOrNull((e as Obj).evaluated_at);
}

const emptyArray = (raw: string, key: string) =>
  `(jsonb_typeof(${raw} -> '${key}') = 'array' AND jsonb_array_length(${raw} -> '${key}') = 0)`;

const EVAL_JSONB =
  "jsonb_build_object('score', e.score_text, 'skill', jsonb_build_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', to_char(e.evaluated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), " +
  "'evaluation_id', e.evaluation_id)";

/** The full `raw` of the score_details row aliased `d`. */
export function detailRawPg(d: string): string {
  const evals = `SELECT jsonb_agg(${EVAL_JSONB} ORDER BY e.position) FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, 'eval_results')} THEN jsonb_set(${d}.raw, '{eval_results}', coalesce((${evals}), '[]'::jsonb)) ELSE ${d}.raw END)`;
}

/** The full `raw` of the role_results row aliased `r`. */
export function roleRawPg(r: string): string {
  const details = `SELECT jsonb_agg(${detailRawPg('d')} ORDER BY d.position) FROM score_details d WHERE d.role_result_id = ${r}.id`;
  return `(CASE WHEN ${emptyArray(`${r}.raw`, 'score_details')} THEN jsonb_set(${r}.raw, '{score_details}', coalesce((${details}), '[]'::jsonb)) ELSE ${r}.raw END)`;
}
